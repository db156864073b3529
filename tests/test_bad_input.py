"""Bad input as agents and scripts make it up: a clear JSON error with its documented exit code, the
same on every command, and nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import write_file

BAD_IDS = [
    ".git/config",
    ".git/hooks/post-commit",
    ".obsidian/x",
    "node_modules/x",
    "notes/node_modules/x",
    ".hidden/x",
    "a\nb",
    "a\tb",
    "a\rb",
    "a\x7fb",
    "notes/",
    "x" * 300,
    "a/" * 2499 + "a",
]


def _commands(note_id: str) -> list[list[str]]:
    return [
        ["read", note_id],
        ["write", note_id, "content"],
        ["write", note_id, "--overwrite", "content"],
        ["history", note_id],
        ["restore", note_id, "HEAD", "--base-version", "0" * 40],
    ]


@pytest.mark.parametrize("note_id", BAD_IDS, ids=lambda i: repr(i)[:30])
def test_ids_where_nothing_should_be_written_are_invalid_on_every_command(amem: Any, vault: Path, note_id: str) -> None:
    write_file(vault / "keep.md", "kept\n")
    before = sorted(p.relative_to(vault) for p in vault.rglob("*"))
    for args in _commands(note_id):
        result = amem(*args)
        assert result.exit_code == 5, (args, result.stderr)
        assert result.error["code"] == "invalid_id"
        assert result.stdout == ""
        assert str(vault) not in result.stderr
    assert sorted(p.relative_to(vault) for p in vault.rglob("*")) == before


def test_dot_folders_are_ids_when_hidden_folders_are_indexed(amem: Any, vault: Path, tmp_path: Path) -> None:
    config = write_file(tmp_path / "config.yaml", "indexHiddenDirs: true\n")
    assert amem("--config", str(config), "write", ".hidden/x", "found").exit_code == 0
    assert amem("--config", str(config), "search", "found").json["hits"][0]["id"] == ".hidden/x.md"
    assert amem("--config", str(config), "write", ".git/x", "no").exit_code == 5


def test_append_and_overwrite_together_are_a_usage_error(amem: Any, vault: Path) -> None:
    write_file(vault / "n.md", "old body\n")
    for args in (["--append", "--overwrite"], ["--overwrite", "--append"]):
        result = amem("write", "n", *args, "new body")
        assert result.exit_code == 2 and result.error["code"] == "usage", result.stderr
        assert "--append" in result.error["message"] and "--overwrite" in result.error["message"]
        assert (vault / "n.md").read_text() == "old body\n"


@pytest.mark.parametrize("version", ["nothex", "", "abc", "g" * 40, "0" * 39, "0" * 41])
def test_a_base_version_that_is_no_version_is_a_usage_error(amem: Any, vault: Path, version: str) -> None:
    write_file(vault / "n.md", "old body\n")
    for args in (["write", "n", "--base-version", version, "x"], ["restore", "n", "HEAD", "--base-version", version]):
        result = amem(*args)
        assert result.exit_code == 2 and result.error["code"] == "usage", (args, result.stderr)
        assert "--base-version" in result.error["message"]
    assert (vault / "n.md").read_text() == "old body\n"
