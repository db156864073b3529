"""amem sync between clones of a bare repository in temporary folders: real git, real amem processes."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from amem.config import load_config
from amem.gitvault.merge import merge_texts
from amem.ops.write import write_note
from amem.store.write import append_text
from tests.gitrepo import clone, commit_all, git, init_repo, set_identity

AMEM = [sys.executable, "-m", "amem"]
STAMP_HEADING = re.compile(r"^## (\S+)$", re.MULTILINE)


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    monkeypatch.setenv("AMEM_TZ", "+00:00")


def amem(vault: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AMEM_VAULT": str(vault)}
    return subprocess.run([*AMEM, *args], cwd=vault, input=input, capture_output=True, text=True, timeout=60, env=env)


def sync(vault: Path, *args: str) -> dict[str, Any]:
    proc = amem(vault, "sync", *args)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def append(vault: Path, note: str, text: str) -> None:
    write_note(load_config(vault=str(vault)), note, text)


def sections_of(text: str, marker: str) -> list[str]:
    return re.findall(rf"{marker}-\d+", text)


# --- appends never conflict -------------------------------------------------------------------------


def test_appends_on_two_machines_in_random_interleavings_all_arrive_once(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    append(a, "log", "start")
    sync(a)
    sync(b)
    rng = random.Random(16)
    counts = {a: 0, b: 0}
    while counts[a] < 100 or counts[b] < 100:
        machine = rng.choice((a, b))
        batch = min(rng.randint(5, 30), 100 - counts[machine])
        for _ in range(batch):
            counts[machine] += 1
            append(machine, "log", f"{machine.name}-{counts[machine]}")
        if rng.random() < 0.7:
            assert sync(machine)["conflicts"] == []
    for machine in (a, b, a):
        assert sync(machine)["conflicts"] == []
    c = clone(remote, tmp_path / "c")
    texts = [(m / "log.md").read_text() for m in (a, b, c)]
    assert texts[0] == texts[1] == texts[2]
    text = texts[0]
    for name in ("a", "b"):
        found = sections_of(text, name)
        assert sorted(found) == sorted(f"{name}-{n}" for n in range(1, 101))  # each exactly once
    stamps = STAMP_HEADING.findall(text)
    assert stamps == sorted(stamps)  # timestamp order
    assert "\n\n\n" not in text  # one blank line between sections
    assert text.count("---\n") == 2  # one frontmatter block
    for machine in (a, b):
        assert git(machine, "status", "--porcelain") == ""


def test_the_merge_driver_orders_sections_and_merges_frontmatter() -> None:
    base = "---\ncreated: 2026-01-01T00:00:00+00:00\ntags: [x]\n---\n## 2026-01-01T00:00:00+00:00\n\nfirst\n"

    def grown(updated: str, *sections: tuple[str, str]) -> str:
        text = base.replace("tags: [x]\n", f"tags: [x]\nupdated: {updated}\n")
        return text + "".join(f"\n## {stamp}\n\n{body}\n" for stamp, body in sections)

    ours = grown("2026-01-01T00:00:07+00:00", ("2026-01-01T00:00:05+00:00", "A5"), ("2026-01-01T00:00:07+00:00", "A7"))
    theirs = grown(
        "2026-01-01T00:00:06+00:00", ("2026-01-01T00:00:06+00:00", "B6\n```\n## 2026-01-01T00:00:01+00:00\n```")
    )
    clean, merged = merge_texts(base, ours, theirs)
    assert clean
    assert merged == (
        "---\ncreated: 2026-01-01T00:00:00+00:00\ntags: [x]\nupdated: 2026-01-01T00:00:07+00:00\n---\n"
        "## 2026-01-01T00:00:00+00:00\n\nfirst\n\n"
        "## 2026-01-01T00:00:05+00:00\n\nA5\n\n"
        "## 2026-01-01T00:00:06+00:00\n\nB6\n```\n## 2026-01-01T00:00:01+00:00\n```\n\n"
        "## 2026-01-01T00:00:07+00:00\n\nA7\n"
    )


@pytest.mark.parametrize("seed", range(40))
def test_appends_survive_any_history_of_merges_with_any_merge_base(seed: int) -> None:
    """Two replicas append and merge at random; each merge takes one of the merge bases git could pick
    (criss-cross merges give several). Every append ends up exactly once, in timestamp order."""
    rng = random.Random(seed)
    versions: dict[int, tuple[str, frozenset[int]]] = {0: ("", frozenset([0]))}
    heads, counts, clock = {"a": 0, "b": 0}, {"a": 0, "b": 0}, 0

    def stamp(second: int) -> str:
        return f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}+00:00"

    def merge(ours: str, theirs: str) -> None:
        (ours_text, ours_seen), (theirs_text, theirs_seen) = versions[heads[ours]], versions[heads[theirs]]
        common = ours_seen & theirs_seen
        bases = [c for c in common if not any(c != d and c in versions[d][1] for d in common)]
        clean, merged = merge_texts(versions[rng.choice(sorted(bases))][0], ours_text, theirs_text)
        assert clean
        new = len(versions)
        versions[new] = (merged, ours_seen | theirs_seen | {new})
        heads[ours] = new

    for _ in range(40):
        machine = rng.choice("ab")
        clock += rng.randint(0, 1)
        if rng.random() < 0.6:
            text, seen = versions[heads[machine]]
            for _ in range(rng.randint(1, 3)):
                counts[machine] += 1
                text = append_text(text or None, f"{machine}-{counts[machine]}", stamp(clock), UTC)
            new = len(versions)
            versions[new] = (text, seen | {new})
            heads[machine] = new
        else:
            merge(machine, "b" if machine == "a" else "a")
    merge("a", "b")
    text = versions[heads["a"]][0]
    for machine in "ab":
        found = re.findall(rf"^{machine}-\d+$", text, re.MULTILINE)
        assert sorted(found) == sorted(f"{machine}-{n}" for n in range(1, counts[machine] + 1))
    stamps = STAMP_HEADING.findall(text)
    assert stamps == sorted(stamps) and len(stamps) == len(set(stamps))
    assert "\n\n\n" not in text


def test_the_merge_driver_keeps_one_sides_edit_and_reports_two_overwrites() -> None:
    base = "---\ntitle: t\n---\nline one\nline two\n"
    edited = "---\ntitle: t\n---\nline ONE\nline two\n"
    clean, merged = merge_texts(base, edited, base.replace("title: t", "title: t\ntags: [y]"))
    assert clean and merged == "---\ntitle: t\ntags: [y]\n---\nline ONE\nline two\n"
    clean, merged = merge_texts(base, "---\ntitle: t\n---\nalpha\n", "---\ntitle: t\n---\nbeta\n")
    assert not clean
    assert "<<<<<<<" in merged and "alpha" in merged and "beta" in merged


# --- real conflicts ---------------------------------------------------------------------------------


def test_two_overwrites_keep_both_report_it_and_sync_cleanly_once_fixed(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    append(a, "plan", "first draft")
    sync(a)
    sync(b)
    assert amem(a, "write", "plan", "--overwrite", "alpha plan").returncode == 0
    assert amem(b, "write", "plan", "--overwrite", "beta plan").returncode == 0
    sync(a)
    result = sync(b)
    assert result["conflicts"] == ["plan.md"]
    copies = sorted(p.name for p in b.glob("plan.conflict-*.md"))
    assert len(copies) == 1
    assert "beta plan" in (b / "plan.md").read_text()  # the local one stays
    assert "alpha plan" in (b / copies[0]).read_text()  # the remote one beside it
    read = json.loads(amem(b, "read", "plan").stdout)
    assert read["conflict"] is True

    pulled = sync(a)  # the other machine learns of the conflict too
    assert pulled["conflicts"] == ["plan.md"]
    assert json.loads(amem(a, "read", "plan").stdout)["conflict"] is True

    # The user merges by hand on A and deletes the copy.
    (a / "plan.md").write_text("---\ntitle: plan\n---\nalpha and beta\n")
    (a / copies[0]).unlink()
    fixed = sync(a)
    assert fixed["conflicts"] == [] and fixed["pushed"] == sorted(fixed["pushed"])
    again = sync(b)
    assert again["conflicts"] == []
    assert not list(b.glob("plan.conflict-*"))
    assert (b / "plan.md").read_text() == "---\ntitle: plan\n---\nalpha and beta\n"
    assert json.loads(amem(b, "read", "plan").stdout)["conflict"] is False
    assert sync(a) == {"pulled": [], "pushed": [], "conflicts": [], "commit": None, "remote": "origin"}


# --- the remote moving, and the index following ------------------------------------------------------


def test_a_push_rejected_because_the_remote_moved_is_retried(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    append(a, "shared", "base")
    sync(a)
    sync(b)
    append(b, "from-b", "b's note")
    assert sync(b, "--no-push")["pushed"] == []  # committed on B, not yet on the remote
    # Right after A's fetch updates its tracking ref, B pushes: A's merge is then stale and its push rejected.
    fired = tmp_path / "fired"
    hook = a / ".git" / "hooks" / "reference-transaction"
    hook.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = committed ] && [ ! -e "{fired}" ] && grep -q refs/remotes/origin/ && {{\n'
        f'  touch "{fired}"\n'
        "  unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_PREFIX\n"
        f'  git -C "{b}" push -q origin HEAD\n'
        "}\nexit 0\n"
    )
    hook.chmod(0o755)
    append(a, "from-a", "a's note")

    result = sync(a)

    assert fired.exists()
    assert "from-b.md" in result["pulled"]  # only a second fetch could have seen it
    assert result["pushed"] == ["from-a.md"]
    listed = git(remote, "ls-tree", "-r", "--name-only", "HEAD")
    assert {"from-a.md", "from-b.md", "shared.md"} <= set(listed.splitlines())


def test_notes_changed_by_a_pull_are_reindexed_and_modified_externally(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    append(a, "topic", "original words")
    sync(a)
    sync(b)
    assert json.loads(amem(b, "read", "topic").stdout)["modifiedExternally"] is False
    append(a, "topic", "zebracorn arrives")
    sync(a)
    assert sync(b)["pulled"] == ["topic.md"]
    read = json.loads(amem(b, "read", "topic").stdout)
    assert read["modifiedExternally"] is True and "zebracorn" in read["body"]
    hits = json.loads(amem(b, "search", "zebracorn").stdout)["hits"]
    assert [hit["id"] for hit in hits] == ["topic.md"]


# --- where sync refuses -----------------------------------------------------------------------------


def error_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout == ""
    error: dict[str, Any] = json.loads(proc.stderr)["error"]
    return error


def test_no_remote_is_a_git_error_that_says_how_to_add_one(tmp_path: Path) -> None:
    vault = init_repo(tmp_path / "vault")
    append(vault, "x", "hello")
    proc = amem(vault, "sync")
    assert proc.returncode == 6
    error = error_of(proc)
    assert error["code"] == "git" and "git remote add origin URL" in error["message"]
    assert str(tmp_path) not in proc.stderr


def test_a_vault_in_no_repository_is_a_git_error(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    append(vault, "x", "hello")
    proc = amem(vault, "sync")
    assert proc.returncode == 6 and "git init" in error_of(proc)["message"]
    assert not (vault / ".git").exists()


def test_a_vault_inside_a_larger_repository_syncs_only_when_asked(remote: Path, tmp_path: Path) -> None:
    project = clone(remote, tmp_path / "project")
    (project / "src.py").write_text("print('v1')\n")
    commit_all(project, "project code")
    before = git(project, "rev-parse", "HEAD")
    vault = project / ".amem" / "memory"
    append(vault, "notes/x", "project memory")
    (project / "src.py").write_text("print('v2')\n")
    git(project, "add", "src.py")  # the user's own staged work

    proc = amem(vault, "sync")
    assert proc.returncode == 6
    message = error_of(proc)["message"]
    assert ".amem/memory/" in message and "--whole-repo" in message and "push" in message
    assert git(project, "rev-parse", "HEAD") == before  # nothing committed

    result = sync(vault, "--whole-repo")
    assert result["pushed"] == ["notes/x.md"]
    committed = git(project, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert committed == [".amem/memory/.gitattributes", ".amem/memory/notes/x.md"]
    assert git(project, "diff", "--cached", "--name-only") == "src.py"  # still staged, not committed
    assert git(remote, "show", "HEAD:src.py") == "print('v1')"


def test_unknown_remote_name_is_a_git_error(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    append(a, "x", "hello")
    proc = amem(a, "sync", "--remote", "nowhere")
    assert proc.returncode == 6 and "no remote named nowhere" in error_of(proc)["message"]


def test_sync_through_the_cli_runner_reports_a_missing_remote(vault: Path, amem: Any) -> None:
    init_repo(vault)
    append(vault, "x", "hello")
    result = amem("sync")
    assert result.exit_code == 6
    assert json.loads(result.stderr)["error"]["code"] == "git"
    head = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=vault, capture_output=True)
    assert head.returncode != 0  # refused before committing anything


def test_a_plain_git_pull_merges_appends_through_the_registered_driver(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    append(a, "log", "start")
    sync(a)
    sync(b)  # registers the driver in B's repository config
    assert "amem.gitvault.merge" in git(b, "config", "merge.amem.driver")
    append(a, "log", "appended on A")
    sync(a)
    append(b, "log", "appended on B")
    commit_all(b, "B's own commit")
    git(b, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "HEAD")
    text = (b / "log.md").read_text()
    assert "appended on A" in text and "appended on B" in text and "<<<<<<<" not in text
    assert text.count("---\n") == 2 and "\n\n\n" not in text


def test_a_local_change_in_the_way_of_the_pull_stops_it_and_loses_nothing(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    for project in (a, b):
        (project / "memory").mkdir()
    (a / "src.py").write_text("v1\n")
    commit_all(a, "code")
    git(a, "push", "-q", "origin", "HEAD")
    git(b, "pull", "-q", "origin", "HEAD")
    (a / "src.py").write_text("v2 from A\n")
    commit_all(a, "code v2")
    git(a, "push", "-q", "origin", "HEAD")
    (b / "src.py").write_text("B's uncommitted edit\n")
    append(b / "memory", "x", "note on B")
    before = git(b, "rev-parse", "HEAD")

    proc = amem(b / "memory", "sync", "--whole-repo")

    assert proc.returncode == 6
    message = error_of(proc)["message"]
    assert "would be overwritten" in message and "src.py" in message
    assert (b / "src.py").read_text() == "B's uncommitted edit\n"
    assert "note on B" in (b / "memory" / "x.md").read_text()
    assert git(b, "rev-parse", "HEAD~1") == before  # the note was committed, HEAD not moved past it


def test_an_unreachable_remote_is_a_git_error_naming_the_remote_not_its_path(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    append(a, "x", "hello")
    shutil.rmtree(remote)
    proc = amem(a, "sync")
    assert proc.returncode == 6
    message = error_of(proc)["message"]
    assert message.startswith("git fetch failed") and "<remote origin>" in message
    assert str(tmp_path) not in proc.stderr
    assert "hello" in (a / "x.md").read_text()


def test_a_conflicting_file_that_is_not_a_note_is_kept_both_ways_and_reported(remote: Path, tmp_path: Path) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    (a / "files").mkdir()
    (a / "files" / "data.bin").write_bytes(b"\x00base")
    sync(a)
    sync(b)
    (a / "files" / "data.bin").write_bytes(b"\x00from A")
    (b / "files" / "data.bin").write_bytes(b"\x00from B")
    sync(a)
    result = sync(b)
    assert result["conflicts"] == ["files/data.bin"]
    assert (b / "files" / "data.bin").read_bytes() == b"\x00from B"
    copies = list((b / "files").glob("data.conflict-*.bin"))
    assert len(copies) == 1 and copies[0].read_bytes() == b"\x00from A"
