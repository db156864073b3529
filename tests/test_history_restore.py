"""amem history and amem restore against real git repositories."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import EMAIL, NAME, commit_all, git, init_repo, set_identity

ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+08:00$")
EMPTY_VERSION = hashlib.sha1(b"").hexdigest()


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    monkeypatch.setenv("AMEM_TZ", "+08:00")


def commit_count(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD"))


def version(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


@pytest.fixture
def repo_vault(vault: Path) -> Path:
    """A vault that is its own repository, with no commits yet."""
    return init_repo(vault)


# --- history ----------------------------------------------------------------------------------------


def test_history_lists_every_commit_newest_first(repo_vault: Path, amem: Any) -> None:
    note = repo_vault / "notes" / "x.md"
    hashes = []
    for n in range(3):
        note.parent.mkdir(exist_ok=True)
        note.write_text(f"version {n}\n")
        (repo_vault / "unrelated.md").write_text(f"noise {n}\n")
        hashes.append(commit_all(repo_vault, f"edit {n}"))
    (repo_vault / "unrelated.md").write_text("more noise\n")
    commit_all(repo_vault, "only the other note")

    result = amem("history", "notes/x")

    assert result.exit_code == 0, result.stderr
    data = result.json
    assert data["id"] == "notes/x.md"
    assert [c["hash"] for c in data["commits"]] == hashes[::-1]
    assert [c["message"] for c in data["commits"]] == ["edit 2", "edit 1", "edit 0"]
    for commit in data["commits"]:
        assert set(commit) == {"hash", "date", "message", "author"}
        assert commit["author"] == f"{NAME} <{EMAIL}>"
        assert ISO_WITH_OFFSET.match(commit["date"]), commit["date"]

    limited = amem("history", "notes/x.md", "--limit", "2").json
    assert [c["hash"] for c in limited["commits"]] == hashes[:0:-1]


def test_history_runs_one_git_process(repo_vault: Path, tmp_path: Path) -> None:
    note = repo_vault / "x.md"
    for n in range(3):
        note.write_text(f"version {n}\n")
        commit_all(repo_vault, f"edit {n}")
    real_git = shutil.which("git")
    assert real_git is not None
    shims = tmp_path / "shims"
    shims.mkdir()
    calls = tmp_path / "git-calls"
    (shims / "git").write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexec "{real_git}" "$@"\n')
    (shims / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        [sys.executable, "-m", "amem", "history", "x"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["commits"]) == 3
    logged = calls.read_text().strip("\n").split("\n")
    assert len(logged) == 1 and " log " in f" {logged[0]} "


def test_history_follows_a_rename(repo_vault: Path, amem: Any) -> None:
    (repo_vault / "old.md").write_text("first words\n")
    before = commit_all(repo_vault, "create under the old name")
    (repo_vault / "notes").mkdir()
    git(repo_vault, "mv", "old.md", "notes/new.md")
    moved = commit_all(repo_vault, "rename")
    (repo_vault / "notes" / "new.md").write_text("first words\nand more\n")
    after = commit_all(repo_vault, "edit after the rename")

    commits = amem("history", "notes/new").json["commits"]

    assert [c["hash"] for c in commits] == [after, moved, before]

    # A hash from before the rename still restores: the note is found under its old name there.
    current = version(repo_vault / "notes" / "new.md")
    restored = amem("restore", "notes/new", before[:8], "--base-version", current)
    assert restored.exit_code == 0, restored.stderr
    assert (repo_vault / "notes" / "new.md").read_text() == "first words\n"


def test_history_of_a_note_never_committed(repo_vault: Path, amem: Any) -> None:
    (repo_vault / "other.md").write_text("o\n")
    commit_all(repo_vault, "something else")
    (repo_vault / "fresh.md").write_text("not committed yet\n")

    result = amem("history", "fresh")
    assert result.exit_code == 0, result.stderr
    assert result.json == {"id": "fresh.md", "commits": []}

    missing = amem("history", "no-such-note")
    assert missing.exit_code == 3
    assert missing.error["code"] == "not_found"


def test_history_in_a_repository_without_commits(repo_vault: Path, amem: Any) -> None:
    (repo_vault / "n.md").write_text("n\n")
    result = amem("history", "n")
    assert result.exit_code == 0, result.stderr
    assert result.json["commits"] == []


def test_history_with_no_repository_is_a_git_error(vault: Path, amem: Any) -> None:
    assert amem("write", "n", "text").exit_code == 0
    result = amem("history", "n")
    assert result.exit_code == 6
    assert result.error["code"] == "git"
    assert "not in a git repository" in result.error["message"]
    assert result.stdout == ""
    assert not (vault / ".git").exists()  # history never initialises anything


def test_history_of_a_vault_inside_a_project_repository(isolated_env: Path, vault: Path, amem: Any) -> None:
    project = init_repo(isolated_env)
    assert amem("write", "notes/p", "in the project", "--commit").exit_code == 0
    commits = amem("history", "notes/p").json["commits"]
    assert [c["hash"] for c in commits] == [git(project, "rev-parse", "HEAD")]
    assert commits[0]["message"] == "amem: write notes/p.md"


# --- restore ----------------------------------------------------------------------------------------


def test_restore_round_trip_commits_only_when_asked(repo_vault: Path, amem: Any) -> None:
    note = repo_vault / "notes" / "x.md"
    first = amem("write", "notes/x", "v1 text", "--commit").json
    v1_bytes = note.read_bytes()
    second = amem("write", "notes/x", "v2 text", "--overwrite", "--commit").json
    assert note.read_bytes() != v1_bytes
    assert commit_count(repo_vault) == 2

    restored = amem("restore", "notes/x", first["commit"], "--base-version", second["version"])

    assert restored.exit_code == 0, restored.stderr
    assert restored.json == {"id": "notes/x.md", "hash": first["commit"], "version": first["version"], "commit": None}
    assert note.read_bytes() == v1_bytes
    assert commit_count(repo_vault) == 2  # no --commit, no commit, and none claimed
    # amem's own restore is not an external modification.
    assert amem("read", "notes/x").json["modifiedExternally"] is False

    # Back to v2, then restore v1 again, this time committing.
    back = amem("restore", "notes/x", second["commit"], "--base-version", first["version"]).json
    committed = amem("restore", "notes/x", first["commit"][:7], "--base-version", back["version"], "--commit")

    assert committed.exit_code == 0, committed.stderr
    data = committed.json
    assert data["hash"] == first["commit"]
    assert data["commit"] == git(repo_vault, "rev-parse", "HEAD")
    assert commit_count(repo_vault) == 3
    short = git(repo_vault, "rev-parse", "--short", first["commit"])
    assert git(repo_vault, "log", "-1", "--format=%s") == f"amem: restore notes/x.md to {short}"
    assert note.read_bytes() == v1_bytes
    assert git(repo_vault, "status", "--porcelain") == ""
    # Restoring never rewrites history: the earlier commits are still the ancestors.
    assert git(repo_vault, "rev-list", "HEAD").splitlines()[1:] == [second["commit"], first["commit"]]


def test_restore_with_content_already_committed_claims_no_commit(repo_vault: Path, amem: Any) -> None:
    first = amem("write", "n", "only version", "--commit").json
    result = amem("restore", "n", "HEAD", "--base-version", first["version"], "--commit")
    assert result.exit_code == 0, result.stderr
    assert result.json["commit"] is None
    assert commit_count(repo_vault) == 1


def test_restore_accepts_tags_and_relative_revisions(repo_vault: Path, amem: Any) -> None:
    note = repo_vault / "n.md"
    for n in range(3):
        note.write_text(f"text {n}\n")
        commit_all(repo_vault, f"c{n}")
        if n == 0:
            git(repo_vault, "tag", "v0")
    result = amem("restore", "n", "HEAD~1", "--base-version", version(note))
    assert result.exit_code == 0, result.stderr
    assert note.read_text() == "text 1\n"
    assert result.json["hash"] == git(repo_vault, "rev-parse", "HEAD~1")

    tagged = amem("restore", "n", "v0", "--base-version", version(note))
    assert tagged.exit_code == 0, tagged.stderr
    assert note.read_text() == "text 0\n"


def test_restore_with_a_stale_base_version_changes_nothing(repo_vault: Path, amem: Any) -> None:
    first = amem("write", "n", "one", "--commit").json
    amem("write", "n", "two", "--commit")
    note = repo_vault / "n.md"
    before = note.read_bytes()
    head = git(repo_vault, "rev-parse", "HEAD")

    result = amem("restore", "n", first["commit"], "--base-version", first["version"], "--commit")

    assert result.exit_code == 4
    assert result.error["code"] == "conflict"
    assert result.stdout == ""
    assert note.read_bytes() == before
    assert git(repo_vault, "rev-parse", "HEAD") == head


def test_restore_bad_hash_is_not_found(repo_vault: Path, amem: Any) -> None:
    (repo_vault / "unrelated.md").write_text("u\n")
    before_note = commit_all(repo_vault, "before the note existed")
    written = amem("write", "n", "text", "--commit").json
    note = repo_vault / "n.md"
    content = note.read_bytes()

    # "--all" after "--" reaches git as a revision; it must not be read as one of git's options.
    for bad in ("0123456789abcdef0123456789abcdef01234567", "no-such-tag", "HEAD~99", "--all"):
        result = amem("restore", "--base-version", written["version"], "n", "--", bad)
        assert result.exit_code == 3, (bad, result.stderr)
        assert result.error["code"] == "not_found"
        assert "unknown revision" in result.error["message"]

    absent = amem("restore", "n", before_note, "--base-version", written["version"])
    assert absent.exit_code == 3
    assert "does not exist at" in absent.error["message"]
    assert note.read_bytes() == content


def test_restore_requires_base_version(repo_vault: Path, amem: Any) -> None:
    amem("write", "n", "text", "--commit")
    result = amem("restore", "n", "HEAD")
    assert result.exit_code == 2
    assert "--base-version" in result.stderr


def test_restore_brings_back_a_deleted_note(repo_vault: Path, amem: Any) -> None:
    written = amem("write", "gone", "keep me", "--commit").json
    note = repo_vault / "gone.md"
    content = note.read_bytes()
    note.unlink()
    result = amem("restore", "gone", written["commit"], "--base-version", EMPTY_VERSION, "--commit")
    assert result.exit_code == 0, result.stderr
    assert note.read_bytes() == content
    assert result.json["commit"] is None  # HEAD already holds exactly this content


def test_restore_with_no_repository_is_a_git_error(vault: Path, amem: Any) -> None:
    written = amem("write", "n", "text").json
    result = amem("restore", "n", "HEAD", "--base-version", written["version"])
    assert result.exit_code == 6
    assert not (vault / ".git").exists()


def test_restore_through_auto_commit_config(isolated_env: Path, repo_vault: Path, amem: Any) -> None:
    first = amem("write", "n", "one", "--commit").json
    second = amem("write", "n", "two", "--commit").json
    (isolated_env / ".amem").mkdir()
    (isolated_env / ".amem" / "config.yaml").write_text("git:\n  autoCommit: true\n")
    assert amem("trust").exit_code == 0  # a project file's autoCommit commits in the user's name
    result = amem("restore", "n", first["commit"], "--base-version", second["version"])
    assert result.exit_code == 0, result.stderr
    assert result.json["commit"] == git(repo_vault, "rev-parse", "HEAD")


@pytest.mark.skipif(shutil.which("amem") is None, reason="the amem console script is not installed")
def test_installed_amem_history_and_restore(repo_vault: Path) -> None:
    def amem_process(*args: str) -> Any:
        proc = subprocess.run(["amem", *args], capture_output=True, text=True, env=os.environ.copy(), check=False)
        return proc

    first = json.loads(amem_process("write", "n", "one", "--commit").stdout)
    second = json.loads(amem_process("write", "n", "two", "--overwrite", "--commit").stdout)
    history = amem_process("history", "n")
    assert history.returncode == 0, history.stderr
    assert [c["hash"] for c in json.loads(history.stdout)["commits"]] == [second["commit"], first["commit"]]
    restored = amem_process("restore", "n", first["commit"], "--base-version", second["version"])
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["version"] == first["version"]
    missing = amem_process("history", "n", "--limit", "0")
    assert missing.returncode == 2
    assert json.loads(missing.stderr.splitlines()[-1])["error"]["code"] == "usage"
