"""A note whose frontmatter is hostile YAML (an alias that recurses, a "billion laughs" block) is
malformed frontmatter: a warning, `frontmatter: {}`, a cost no larger than its size, and every other note
and command works as before."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import write_file
from .installed import amem_bin, path_with

RECURSIVE = "---\na: &x [*x]\ntitle: Loop\n---\nloop body\n"


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "---\n" + "\n".join(lines) + "\n---\nlaughs body\n"


def _limited() -> None:
    # 512 MB of address space: the unguarded expansion needs gigabytes, a guarded read a few dozen MB.
    resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["amem", *args], env=env, capture_output=True, text=True, timeout=60, preexec_fn=_limited)


@pytest.fixture
def hostile_vault(vault: Path) -> Path:
    write_file(vault / "loop.md", RECURSIVE)
    write_file(vault / "laughs.md", billion_laughs())
    write_file(vault / "plain.md", "---\ntags: [auth]\n---\nAuth tokens expire. [[loop]] [[laughs]]\n")
    return vault


@pytest.mark.parametrize("note", ["loop", "laughs"])
def test_the_hostile_note_reads_as_body_with_a_warning(amem: Any, hostile_vault: Path, note: str) -> None:
    result = amem("read", note)
    assert result.exit_code == 0, result.stderr
    assert result.json["frontmatter"] == {}
    assert result.json["body"] == (hostile_vault / f"{note}.md").read_text()
    assert "malformed frontmatter" in result.stderr and "Traceback" not in result.stderr


def test_every_other_note_reads_searches_and_writes(amem: Any, hostile_vault: Path) -> None:
    read = amem("read", "plain", "--depth", "2")
    assert read.exit_code == 0, read.stderr
    assert read.json["frontmatter"] == {"tags": ["auth"]}
    assert sorted(n["id"] for n in read.json["linkedNotes"]) == ["laughs.md", "loop.md"]
    search = amem("search", "auth")
    assert search.exit_code == 0, search.stderr
    assert [hit["id"] for hit in search.json["hits"]] == ["plain.md"]
    assert amem("search", "laughs").json["hits"][0]["id"] == "laughs.md"
    assert amem("write", "plain", "more").exit_code == 0
    assert amem("write", "loop", "appended").exit_code == 0
    assert (hostile_vault / "loop.md").read_text().startswith(RECURSIVE)


def test_a_billion_laughs_costs_no_more_than_its_size(hostile_vault: Path, tmp_path: Path) -> None:
    # The installed amem under a memory cap and a time limit, as the hostile note would meet a user.
    env = dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))
    for args in (["read", "plain", "--depth", "2"], ["read", "laughs"], ["search", "lol"]):
        result = run(env, *args)
        assert result.returncode == 0, result.stderr[-2000:]
        json.loads(result.stdout)
