"""`amem move` and `amem delete` where they used to go wrong: a typo that rewrote links, a symlinked note,
a repository with no commits, bytes a move must not touch. Run through the installed `amem`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from amem.notes.parse import version_of
from tests.conftest import write_file
from tests.gitrepo import git, init_repo, set_identity
from tests.installed import installed_runner


@pytest.fixture
def run(tmp_path: Path, vault: Path) -> Any:
    return installed_runner(tmp_path, vault)


# --- item 9: a typo must never rewrite links --------------------------------------------------------------


def test_moving_a_note_that_does_not_exist_onto_one_that_does_is_not_found(vault: Path, run: Any) -> None:
    write_file(vault / "done.md", "existing\n")
    plan = write_file(vault / "plan.md", "[[todo]]\n")
    result = run("move", "todo", "done")
    assert result.code == 3, result.stdout
    assert result.error["code"] == "not_found"
    assert "--after" in result.error["message"]
    assert plan.read_text() == "[[todo]]\n"
    assert (vault / "done.md").read_text() == "existing\n"


def test_move_after_records_a_rename_made_by_hand(vault: Path, run: Any) -> None:
    write_file(vault / "a/note.md", "x\n")
    linker = write_file(vault / "n.md", "[[a/note]] and [[note#h]]\n")
    assert run("read", "n").code == 0
    (vault / "b").mkdir()
    os.rename(vault / "a/note.md", vault / "b/note.md")
    assert run("move", "a/note", "b/note").error["code"] == "not_found"
    assert linker.read_text() == "[[a/note]] and [[note#h]]\n"
    result = run("move", "--after", "a/note", "b/note")
    assert result.code == 0, result.stderr
    assert result.json["rewritten"] == [{"id": "n.md", "links": 1}]
    assert linker.read_text().endswith("[[b/note]] and [[note#h]]\n")


def test_move_after_needs_old_gone_and_new_there(vault: Path, run: Any) -> None:
    write_file(vault / "old.md", "x\n")
    write_file(vault / "n.md", "[[old]]\n")
    result = run("move", "--after", "old", "new")  # OLD is still there: no rename was made
    assert (result.code, result.error["code"]) == (4, "conflict")
    result = run("move", "--after", "nowhere", "neither")
    assert (result.code, result.error["code"]) == (3, "not_found")
    assert (vault / "n.md").read_text() == "[[old]]\n"


# --- item 12: a symlinked note -----------------------------------------------------------------------------


def test_moving_a_symlinked_note_keeps_it_leading_to_its_target(vault: Path, run: Any) -> None:
    write_file(vault / "real/target.md", "the target\n")
    (vault / "links").mkdir()
    os.symlink("../real/target.md", vault / "links/alias.md")
    write_file(vault / "n.md", "[[links/alias]]\n")
    result = run("move", "links/alias", "deep/er/alias")
    assert result.code == 0, result.stderr
    moved = vault / "deep/er/alias.md"
    assert moved.is_symlink()
    assert moved.read_text() == "the target\n"
    assert os.path.samefile(moved, vault / "real/target.md")
    assert not os.path.lexists(vault / "links/alias.md")
    assert result.json["version"] == version_of(b"the target\n")
    assert (vault / "n.md").read_text().endswith("[[er/alias]]\n")  # two segments, as written
    assert run("read", "deep/er/alias").json["body"] == "the target\n"


def test_moving_a_symlink_with_an_absolute_target_inside_the_vault(vault: Path, run: Any) -> None:
    write_file(vault / "real/target.md", "abs\n")
    os.symlink(vault / "real/target.md", vault / "alias.md")
    result = run("move", "alias", "sub/alias")
    assert result.code == 0, result.stderr
    assert (vault / "sub/alias.md").read_text() == "abs\n"
    assert result.json["version"] == version_of(b"abs\n")


# --- item 13: a repository with no commits -------------------------------------------------------------


@pytest.fixture
def empty_repo(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    set_identity(monkeypatch)
    return init_repo(vault)


def test_delete_commit_in_a_repository_with_no_commits(empty_repo: Path, run: Any) -> None:
    assert run("write", "a", "hi").code == 0
    result = run("delete", "a", "--commit")
    assert result.code == 0, result.stderr
    assert result.json["commit"] is None  # the note was never committed: nothing to commit
    assert not (empty_repo / "a.md").exists()
    assert subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=empty_repo).returncode != 0
    assert not (empty_repo / ".git/index.lock").exists()


def test_move_and_write_commit_in_a_repository_with_no_commits(empty_repo: Path, run: Any) -> None:
    assert run("write", "b", "hi").code == 0  # not committed
    write_file(empty_repo / "n.md", "[[b]]\n")
    moved = run("move", "b", "c", "--commit")
    assert moved.code == 0, moved.stderr
    assert moved.json["commit"] == git(empty_repo, "rev-parse", "HEAD")
    assert sorted(git(empty_repo, "ls-tree", "--name-only", "HEAD").split()) == ["c.md", "n.md"]
    assert git(empty_repo, "status", "--porcelain", "--", "c.md", "n.md") == ""
    written = run("write", "d", "there", "--commit")
    assert written.code == 0, written.stderr
    assert written.json["commit"] == git(empty_repo, "rev-parse", "HEAD")
    deleted = run("delete", "c", "--commit")
    assert deleted.code == 0, deleted.stderr
    assert git(empty_repo, "ls-tree", "--name-only", "HEAD").split() == ["d.md", "n.md"]
