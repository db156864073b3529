"""The git processes an `amem sync` starts, as git itself traces them (GIT_TRACE): real clones of a bare
repository, the installed amem in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitrepo import clone, set_identity

AMEM = [sys.executable, "-m", "amem"]
#: What `git fetch` starts of its own: the other end of the transfer and its connectivity check.
FETCH_INTERNALS = ("upload-pack", "rev-list", "index-pack", "unpack-objects")


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    monkeypatch.setenv("AMEM_TZ", "+00:00")


def amem(vault: Path, *args: str, trace: Path | None = None, input: str | None = None) -> dict[str, object]:
    env = {**os.environ, "AMEM_VAULT": str(vault)}
    if trace is not None:
        env["GIT_TRACE"] = str(trace)
    proc = subprocess.run([*AMEM, *args], cwd=vault, env=env, input=input, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def git_commands(trace: Path) -> list[str]:
    """Every git process the trace shows, as `subcommand args…`, in order."""
    marker = "trace: built-in: git "
    return [line.split(marker, 1)[1] for line in trace.read_text().splitlines() if marker in line]


def test_a_sync_with_nothing_to_do_fetches_and_starts_no_more_git_processes_than_it_needs(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    amem(a, "write", "notes/x", "first words")
    amem(a, "sync")
    trace = tmp_path / "trace"
    result = amem(a, "sync", trace=trace)
    assert result["pulled"] == [] and result["pushed"] == [] and result["commit"] is None
    commands = git_commands(trace)
    own = [c.split()[0] for c in commands if not c.startswith(FETCH_INTERNALS)]
    # where the vault is, what changed in it, the remote's settings; the fetch (what the remote holds is
    # then read from its tracking ref's file: the commit HEAD already is)
    assert own == ["rev-parse", "status", "config", "fetch"], commands
    assert not any(c.startswith("maintenance") for c in commands), commands


def test_a_sync_that_brings_notes_in_still_runs_gits_automatic_maintenance(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    amem(a, "write", "notes/x", "first words")
    amem(a, "sync")
    trace = tmp_path / "trace"
    assert amem(b, "sync", trace=trace)["pulled"] == ["notes/x.md"]
    assert any(c.startswith("maintenance run --auto") for c in git_commands(trace))


def test_a_sync_that_commits_runs_it_too_unless_the_repository_turned_it_off(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    amem(a, "write", "notes/x", "first words")
    trace = tmp_path / "trace"
    assert amem(a, "sync", trace=trace)["pushed"] == ["notes/x.md"]
    assert any(c.startswith("maintenance run --auto") for c in git_commands(trace))
    subprocess.run(["git", "config", "maintenance.auto", "false"], cwd=a, check=True)
    amem(a, "write", "notes/x", "more words")
    trace.unlink()
    assert amem(a, "sync", trace=trace)["pushed"] == ["notes/x.md"]
    assert not any(c.startswith("maintenance") for c in git_commands(trace))


def test_a_sync_with_nothing_to_do_loads_only_what_sync_is_allowed(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_imports import ALLOWED, AMEM_BASE, check_allowed, loaded_modules

    a = clone(remote, tmp_path / "a")
    amem(a, "write", "notes/x", "first words")
    amem(a, "sync")
    monkeypatch.setenv("AMEM_VAULT", str(a))
    loaded = loaded_modules(["sync"], a)
    _, distributions, amem_modules, required = ALLOWED["sync"]
    assert required in loaded
    check_allowed("sync", loaded, distributions)
    assert sorted({m for m in loaded if m.startswith("amem")} - AMEM_BASE - amem_modules) == []


def test_the_remotes_commit_is_read_from_its_ref_only_when_it_is_heads(remote: Path, tmp_path: Path) -> None:
    """Anything else (a remote that moved, refs packed by git gc) is asked of git, and synced as before."""
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    amem(a, "write", "notes/x", "first words")
    amem(a, "sync")
    amem(b, "sync")
    amem(b, "write", "notes/x", "from b")
    amem(b, "sync")
    trace = tmp_path / "trace"
    assert amem(a, "sync", trace=trace)["pulled"] == ["notes/x.md"]
    assert "rev-parse --verify" in " ".join(git_commands(trace))
    assert "from b" in (a / "notes" / "x.md").read_text(encoding="utf-8")

    for clone_ in (a, b):  # every ref packed, no loose ref file left
        subprocess.run(["git", "pack-refs", "--all", "--prune"], cwd=clone_, check=True)
    trace.unlink()
    assert amem(a, "sync", trace=trace)["pulled"] == []
    assert "rev-parse --verify" not in " ".join(git_commands(trace))  # read from packed-refs
    amem(b, "write", "notes/x", "again from b")
    amem(b, "sync")
    for clone_ in (a, b):
        subprocess.run(["git", "pack-refs", "--all", "--prune"], cwd=clone_, check=True)
    assert amem(a, "sync")["pulled"] == ["notes/x.md"]
    assert "again from b" in (a / "notes" / "x.md").read_text(encoding="utf-8")


def test_an_idle_sync_loads_no_archive_modules(remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """shutil (and the compressors it loads) only for the scratch folders of a sync that merges."""
    from tests.test_imports import loaded_modules

    a = clone(remote, tmp_path / "a")
    amem(a, "write", "notes/x", "first words")
    amem(a, "sync")
    monkeypatch.setenv("AMEM_VAULT", str(a))
    loaded = loaded_modules(["sync"], a)
    assert "amem.sync.sync" in loaded
    assert not {"shutil", "bz2", "lzma", "zlib"} & loaded


def test_a_stored_ref_is_read_only_where_git_would_read_the_same(tmp_path: Path) -> None:
    from amem.gitvault.git import Repository, stored_ref

    git_dir = tmp_path / "git"
    (git_dir / "refs" / "remotes" / "origin").mkdir(parents=True)
    repo = Repository(top=str(tmp_path), git_dir=str(git_dir))
    ref = "refs/remotes/origin/main"
    one, two = "1" * 40, "2" * 40
    assert stored_ref(repo, ref, {}) is None  # nowhere
    (git_dir / "packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted\n{one} {ref}\n^{two}\n")
    assert stored_ref(repo, ref, {}) == one
    assert stored_ref(repo, "refs/remotes/origin/mai", {}) is None
    (git_dir / ref).write_text(f"{two}\n")  # a loose ref outranks the packed one
    assert stored_ref(repo, ref, {}) == two
    assert stored_ref(repo, ref, {"extensions.refstorage": "reftable"}) is None
    (git_dir / ref).write_text("ref: refs/remotes/origin/other\n")  # symbolic: git resolves it
    assert stored_ref(repo, ref, {}) is None
    (git_dir / ref).write_text(f"{two}\n")
    (git_dir / "commondir").write_text("../..\n")  # a linked worktree: its refs are elsewhere
    assert stored_ref(repo, ref, {}) is None
