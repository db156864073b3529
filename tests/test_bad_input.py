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


# --- a vault path that is a file -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["read", "n"],
        ["search", "x"],
        ["write", "n", "x"],
        ["history", "n"],
        ["restore", "n", "HEAD", "--base-version", "0" * 40],
    ],
)
@pytest.mark.parametrize("where", ["somefile", "somefile/vault"])
def test_a_vault_path_that_is_a_file_is_a_config_error_naming_the_vault(
    amem: Any, isolated_env: Path, command: list[str], where: str
) -> None:
    write_file(isolated_env / "somefile", "not a folder\n")
    result = amem("--vault", where, *command)
    assert result.exit_code == 7, result.stderr
    error = result.error
    assert error["code"] == "config" and Path(where).name in error["message"] and "file" in error["message"]
    assert str(isolated_env) not in result.stderr
    assert (isolated_env / "somefile").read_text() == "not a folder\n"


def test_info_reports_a_vault_path_that_is_a_file_with_a_warning(amem: Any, isolated_env: Path) -> None:
    write_file(isolated_env / "somefile", "not a folder\n")
    result = amem("--vault", "somefile", "info")
    assert result.exit_code == 0
    assert result.json["vaultExists"] is False
    assert any("somefile" in w and "is a file" in w for w in result.json["warnings"])


# --- config values that are wrong, and what is wrong with them ---------------------------------------------


def test_a_config_path_that_is_a_folder_says_so(amem: Any, vault: Path, tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    result = amem("--config", str(tmp_path / "conf.d"), "read", "n")
    assert result.exit_code == 7
    assert "is a folder, not a file" in result.error["message"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [("+25:00", "'+25:00' is out of range"), ("-24:30", "'-24:30' is out of range"), ('"+25:00"', "out of range")],
)
def test_a_timezone_offset_out_of_range_says_so(
    amem: Any, vault: Path, tmp_path: Path, value: str, problem: str
) -> None:
    config = write_file(tmp_path / "config.yaml", f"timezone: {value}\n")
    result = amem("--config", str(config), "read", "n")
    assert result.exit_code == 7
    assert problem in result.error["message"] and "integer" not in result.error["message"]


def test_an_unquoted_offset_yaml_reads_as_a_number_still_works(amem: Any, vault: Path, tmp_path: Path) -> None:
    config = write_file(tmp_path / "config.yaml", "timezone: +10:00\n")
    result = amem("--config", str(config), "write", "n", "x")
    assert result.exit_code == 0, result.stderr
    assert "+10:00" in (vault / "n.md").read_text()
