"""Git plumbing and `--commit`: finding the repository, committing exactly one note, identity, locks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config
from amem.errors import GitError
from amem.gitvault import git as amem_git
from amem.notes.parse import version_of
from amem.ops.restore import restore_note
from amem.ops.write import write_note
from amem.report import CollectingReporter
from tests.gitrepo import commit_all, git, init_repo, set_identity


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)


def head(repo: Path) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=repo, capture_output=True, text=True)
    return proc.stdout.strip() or None


def files_in(repo: Path, rev: str = "HEAD") -> list[str]:
    return git(repo, "show", "--name-only", "--format=", rev).splitlines()


# --- finding the repository -------------------------------------------------------------------------


def test_find_repository_none_own_and_project(isolated_env: Path) -> None:
    vault = isolated_env / "vault"
    vault.mkdir()
    assert amem_git.find_repository(vault) is None

    init_repo(isolated_env)
    found = amem_git.find_repository(vault)
    assert found is not None and os.path.realpath(found.top) == os.path.realpath(isolated_env)
    assert found.relpath(vault / "notes" / "x.md") == "vault/notes/x.md"

    init_repo(vault)  # a vault that is its own repository wins over the project around it
    found = amem_git.find_repository(vault / "notes")
    assert found is not None and os.path.realpath(found.top) == os.path.realpath(vault)
    assert found.relpath(vault / "notes" / "x.md") == "notes/x.md"


def test_find_repository_for_a_vault_not_created_yet(isolated_env: Path) -> None:
    init_repo(isolated_env)
    found = amem_git.find_repository(isolated_env / ".amem" / "memory" / "deep")
    assert found is not None and os.path.realpath(found.top) == os.path.realpath(isolated_env)
    assert not (isolated_env / ".amem").exists()


def test_inside_dot_git_is_an_error_not_no_repository(isolated_env: Path) -> None:
    # Mistaking this for "no repository" would make --commit run `git init` inside the user's repository.
    init_repo(isolated_env)
    with pytest.raises(GitError):
        amem_git.find_repository(isolated_env / ".git" / "refs")


def test_git_hook_environment_does_not_redirect_amem(
    isolated_env: Path, vault: Path, monkeypatch: pytest.MonkeyPatch, amem: Any
) -> None:
    init_repo(vault)
    other = init_repo(isolated_env / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    result = amem("write", "n", "hello", "--commit")
    assert result.exit_code == 0, result.stderr
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert head(vault) == result.json["commit"]
    assert head(other) is None


# --- --commit ---------------------------------------------------------------------------------------


def test_commit_leaves_the_users_staged_changes_staged(isolated_env: Path, vault: Path, amem: Any) -> None:
    project = init_repo(isolated_env)
    (project / "a.txt").write_text("base\n")
    (project / "untouched.txt").write_text("same\n")
    first = commit_all(project, "init")
    (project / "a.txt").write_text("staged change\n")
    (project / "b.txt").write_text("staged new file\n")
    git(project, "add", "a.txt", "b.txt")
    (project / "untouched.txt").write_text("unstaged change\n")
    index_before = git(project, "ls-files", "-s").splitlines()

    result = amem("write", "notes/x", "remember this", "--commit")

    assert result.exit_code == 0, result.stderr
    commit = result.json["commit"]
    assert commit == head(project)
    assert git(project, "rev-parse", f"{commit}^") == first
    assert files_in(project, commit) == ["vault/notes/x.md"]
    assert git(project, "log", "-1", "--format=%s", commit) == "amem: write notes/x.md"
    # The user's index is exactly as before apart from the note's own entry.
    index_after = git(project, "ls-files", "-s").splitlines()
    assert [line for line in index_after if not line.endswith("\tvault/notes/x.md")] == index_before
    assert sorted(git(project, "diff", "--cached", "--name-only").splitlines()) == ["a.txt", "b.txt"]
    status = git(project, "status", "--porcelain").splitlines()
    assert "M  a.txt" in status and "A  b.txt" in status and " M untouched.txt" in status
    assert not [line for line in status if "notes/x.md" in line]
    assert git(project, "show", f"{commit}:vault/notes/x.md").endswith("remember this")


def test_commit_in_a_vault_that_is_its_own_repository(isolated_env: Path, vault: Path, amem: Any) -> None:
    project = init_repo(isolated_env)
    (project / "README").write_text("project\n")
    project_head = commit_all(project, "project")
    init_repo(vault)

    result = amem("write", "n", "own repo", "--commit")

    assert result.exit_code == 0, result.stderr
    assert head(vault) == result.json["commit"]
    assert files_in(vault) == ["n.md"]
    assert head(project) == project_head


def test_commit_with_no_repository_initialises_one_at_the_vault_root(
    isolated_env: Path, vault: Path, amem: Any
) -> None:
    (vault / "other.md").parent.mkdir(parents=True)
    (vault / "other.md").write_text("an older note, not part of this change\n")

    result = amem("write", "notes/x", "first", "--commit")

    assert result.exit_code == 0, result.stderr
    assert (vault / ".git").is_dir()
    assert not (isolated_env / ".git").exists()
    assert head(vault) == result.json["commit"]
    assert files_in(vault) == ["notes/x.md"]  # exactly that note, not the whole vault
    assert git(vault, "log", "--format=%s") == "amem: write notes/x.md"
    assert "initialised" in result.stderr


def test_write_and_commit_is_one_library_call_that_reports_to_its_reporter(vault: Path, config: Config) -> None:
    reporter = CollectingReporter()
    result = write_note(config, "notes/x", "first", commit=True, reporter=reporter)
    assert result["commit"] == head(vault)
    assert files_in(vault) == ["notes/x.md"]
    assert any("initialised" in warning for warning in reporter.warnings)
    again = write_note(config, "notes/x", "second", commit=True, reporter=reporter)
    assert again["commit"] == head(vault) != result["commit"]
    assert "commit" not in write_note(config, "notes/x", "third")  # no commit asked, none configured


def test_a_failed_commit_still_says_what_was_written(
    vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(GitError) as info:
        write_note(config, "n", "kept", commit=True)
    written = info.value.details["written"]
    assert written["id"] == "n.md" and written["version"] == version_of((vault / "n.md").read_bytes())


def test_restore_reports_the_commits_warnings(vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    from amem.notes.ids import resolve_note

    init_repo(vault)
    first = write_note(config, "n", "one", commit=True)
    write_note(config, "n", "two", commit=True)
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)  # and the isolated HOME has no git config
    reporter = CollectingReporter()
    current = version_of((vault / "n.md").read_bytes())
    data = restore_note(config, resolve_note(config, "n"), first["commit"], current, True, reporter=reporter)
    assert data["commit"] == head(vault) and data["hash"] == first["commit"]
    assert any("no user identity" in warning for warning in reporter.warnings)


def test_auto_commit_from_config(isolated_env: Path, vault: Path, amem: Any) -> None:
    init_repo(vault)
    (isolated_env / ".amem").mkdir()
    (isolated_env / ".amem" / "config.yaml").write_text("git:\n  autoCommit: true\n")
    assert amem("trust").exit_code == 0  # a project file's autoCommit commits in the user's name
    result = amem("write", "n", "auto")
    assert result.exit_code == 0, result.stderr
    assert result.json["commit"] == head(vault)


def test_write_without_commit_commits_nothing(vault: Path, amem: Any) -> None:
    init_repo(vault)
    result = amem("write", "n", "text")
    assert result.exit_code == 0, result.stderr
    assert "commit" not in result.json
    assert head(vault) is None


def test_committing_unchanged_content_makes_no_commit(vault: Path) -> None:
    repo_path = init_repo(vault)
    (vault / "n.md").write_text("same\n")
    repo = amem_git.find_repository(vault)
    assert repo is not None
    first = amem_git.commit_file(repo, "n.md", b"same\n", "amem: write n.md")
    assert first.hash is not None and first.hash == head(repo_path)
    second = amem_git.commit_file(repo, "n.md", b"same\n", "amem: write n.md")
    assert second.hash is None
    assert head(repo_path) == first.hash


def test_commit_file_records_exactly_the_given_bytes(vault: Path) -> None:
    init_repo(vault)
    (vault / "n.md").write_text("on disk, written by someone later\n")
    repo = amem_git.find_repository(vault)
    assert repo is not None
    outcome = amem_git.commit_file(repo, "n.md", b"what amem wrote\n", "m")
    assert git(vault, "show", f"{outcome.hash}:n.md") == "what amem wrote"


def test_note_names_are_literal_not_pathspecs(vault: Path, amem: Any) -> None:
    init_repo(vault)
    assert amem("write", "st*r", "star", "--commit").exit_code == 0
    assert amem("write", "stxr", "plain", "--commit").exit_code == 0
    history = amem("history", "st*r").json["commits"]
    assert len(history) == 1


def test_commit_uses_the_users_git_identity(vault: Path, monkeypatch: pytest.MonkeyPatch, amem: Any) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{role}_NAME")
        monkeypatch.delenv(f"GIT_{role}_EMAIL")
    init_repo(vault)
    git(vault, "config", "user.name", "Configured Person")
    git(vault, "config", "user.email", "person@example.org")
    result = amem("write", "n", "x", "--commit")
    assert result.exit_code == 0, result.stderr
    assert git(vault, "log", "-1", "--format=%an <%ae>|%cn <%ce>") == (
        "Configured Person <person@example.org>|Configured Person <person@example.org>"
    )
    assert "identity" not in result.stderr


def test_no_git_identity_falls_back_to_amem(vault: Path, monkeypatch: pytest.MonkeyPatch, amem: Any) -> None:
    # conftest points HOME and XDG_CONFIG_HOME at empty folders and sets GIT_CONFIG_NOSYSTEM=1.
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{role}_NAME")
        monkeypatch.delenv(f"GIT_{role}_EMAIL")
    monkeypatch.delenv("EMAIL", raising=False)
    result = amem("write", "n", "x", "--commit")
    assert result.exit_code == 0, result.stderr
    assert git(vault, "log", "-1", "--format=%an <%ae>|%cn <%ce>") == ("amem <amem@localhost>|amem <amem@localhost>")
    assert "no user identity" in result.stderr


def test_index_lock_held_is_retried_then_reported(vault: Path, monkeypatch: pytest.MonkeyPatch, amem: Any) -> None:
    init_repo(vault)
    (vault / "keep.md").write_text("k\n")
    base = commit_all(vault, "base")
    monkeypatch.setattr(amem_git, "LOCK_WAIT_SECONDS", 0.3)
    lock = vault / ".git" / "index.lock"
    lock.write_text("")
    started = time.monotonic()
    result = amem("write", "n", "x", "--commit")
    assert time.monotonic() - started >= 0.3
    assert result.exit_code == 6
    assert result.error["code"] == "git"
    assert "busy" in result.error["message"] and "did not commit" in result.error["message"]
    written = result.error["written"]  # the note is written: the error says so, with its version
    assert written["id"] == "n.md" and written["version"] == version_of((vault / "n.md").read_bytes())
    assert head(vault) == base
    assert lock.exists()  # not ours to remove


def test_index_lock_released_in_time_lets_the_commit_through(vault: Path, amem: Any) -> None:
    init_repo(vault)
    lock = vault / ".git" / "index.lock"
    lock.write_text("")
    timer = threading.Timer(0.3, lock.unlink)
    timer.start()
    try:
        result = amem("write", "n", "x", "--commit")
    finally:
        timer.join()
    assert result.exit_code == 0, result.stderr
    assert result.json["commit"] == head(vault)
    assert not lock.exists()


def test_git_missing_is_a_git_error_saying_to_install_it(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, amem: Any
) -> None:
    assert amem("write", "n", "x").exit_code == 0
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = amem("history", "n")
    assert result.exit_code == 6
    assert "install git" in result.error["message"]


def test_concurrent_committers_lose_no_commit(isolated_env: Path, vault: Path) -> None:
    """Separate processes, as users run them: every --commit lands, none overwrites another's HEAD.

    A committer waits LOCK_WAIT_SECONDS for the others' index.lock; on a loaded machine six commits in a
    row can take longer, and then it fails with git's busy error, having committed nothing. It is run again,
    as a user would, until all six have landed; any other failure fails the test."""
    init_repo(vault)
    script = "from amem.cli import main; main()"
    commits: set[str] = set()
    waiting = list(range(6))
    for _ in range(10):
        procs = {
            i: subprocess.Popen(
                [sys.executable, "-c", script, "write", f"n{i}", f"text {i}", "--commit"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in waiting
        }
        waiting = []
        for i, proc in procs.items():
            out, err = proc.communicate(timeout=60)
            if proc.returncode == 0:
                commits.add(json.loads(out)["commit"])
                continue
            assert proc.returncode == 6, err
            assert json.loads(err)["error"]["message"].startswith("the git repository is busy: "), err
            waiting.append(i)
        if not waiting:
            break
    assert waiting == []
    assert len(commits) == 6
    assert set(git(vault, "rev-list", "HEAD").splitlines()) == commits
    assert sorted(git(vault, "ls-files").splitlines()) == [f"n{i}.md" for i in range(6)]
    assert git(vault, "status", "--porcelain") == ""


@pytest.mark.skipif(shutil.which("amem") is None, reason="the amem console script is not installed")
def test_installed_amem_write_commit(isolated_env: Path, vault: Path) -> None:
    project = init_repo(isolated_env)
    (project / "staged.txt").write_text("s\n")
    git(project, "add", "staged.txt")
    proc = subprocess.run(
        ["amem", "write", "notes/hook", "from a hook", "--commit"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    commit = json.loads(proc.stdout)["commit"]
    assert files_in(project, commit) == ["vault/notes/hook.md"]
    assert git(project, "diff", "--cached", "--name-only") == "staged.txt"


def test_git_module_loads_only_when_needed(vault: Path) -> None:
    """`write` without --commit and `read` must not pay for git's module (or spawn git)."""
    probe = (
        "import sys\n"
        "from amem.cli import run\n"
        "assert run(['write', 'n', 'x']) == 0\n"
        "assert run(['read', 'n']) == 0\n"
        "print(sorted(m for m in ('amem.gitvault.git', 'amem.info') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# --- a damaged repository -----------------------------------------------------------------------------


@pytest.fixture
def damaged(amem: Any, vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vault whose repository lost every object (`.git/objects/*` deleted) after two commits."""
    import shutil

    from .gitrepo import set_identity

    set_identity(monkeypatch)
    assert amem("write", "n", "one", "--commit").exit_code == 0
    assert amem("write", "n", "two", "--commit").exit_code == 0
    for entry in (vault / ".git" / "objects").iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    return vault


@pytest.mark.parametrize("command", [["history", "n"], ["write", "n", "three", "--commit"]])
def test_a_damaged_repository_is_a_git_error_saying_how_git_failed(
    amem: Any, damaged: Path, command: list[str]
) -> None:
    result = amem(*command)
    assert result.exit_code == 6, result.stderr
    error = result.error
    assert error["code"] == "git"
    assert "git log failed: " in error["message"] and "bad object HEAD" in error["message"]
    assert "HEAD kept moving" not in error["message"]
    assert str(damaged) not in result.stderr
