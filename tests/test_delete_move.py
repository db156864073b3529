"""`amem delete` and `amem move` as users meet them: the CLI, real git repositories, real processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amem.config import load_config
from amem.notes.parse import parse_note, version_of
from amem.store.write import note_lock
from tests.conftest import write_file
from tests.gitrepo import commit_all, git, init_repo, set_identity

AMEM = [sys.executable, "-m", "amem"]


def text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


# --- delete ---------------------------------------------------------------------------------------------


def test_delete_removes_the_note_and_reports_its_version(vault: Path, amem: Any) -> None:
    note = write_file(vault / "notes/x.md", "# X\n")
    result = amem("delete", "notes/x")
    assert result.exit_code == 0, result.stderr
    assert result.json == {"id": "notes/x.md", "version": version_of(b"# X\n"), "commit": None}
    assert not note.exists()
    assert amem("read", "notes/x").exit_code == 3


def test_delete_with_a_stale_version_removes_nothing(vault: Path, amem: Any) -> None:
    note = write_file(vault / "x.md", "now\n")
    result = amem("delete", "x", "--base-version", version_of(b"before\n"))
    assert result.exit_code == 4
    assert result.error["code"] == "conflict"
    assert result.error["currentVersion"] == version_of(b"now\n")
    assert text(note) == "now\n"
    assert amem("delete", "x", "--base-version", version_of(b"now\n")).exit_code == 0
    assert not note.exists()


@pytest.mark.parametrize(
    "args, code, exit_code",
    [
        (["nope"], "not_found", 3),
        (["../outside"], "invalid_id", 5),
        (["/etc/passwd"], "invalid_id", 5),
        (["folder"], "invalid_id", 5),
        ([], "usage", 2),
    ],
)
def test_delete_errors(vault: Path, amem: Any, args: list[str], code: str, exit_code: int) -> None:
    write_file(vault / "folder.md/inner.md", "x\n")  # a folder whose name reads as a note id
    result = amem("delete", *args)
    assert (result.exit_code, result.error["code"]) == (exit_code, code)
    assert str(vault) not in result.stderr
    assert (vault / "folder.md/inner.md").exists()


def test_delete_commit_commits_the_removal_only(vault: Path, amem: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "x.md", "x\n")
    write_file(vault / "other.md", "other\n")
    commit_all(vault, "start")
    write_file(vault / "other.md", "staged edit\n")
    git(vault, "add", "other.md")
    result = amem("delete", "x", "--commit")
    assert result.exit_code == 0, result.stderr
    assert result.json["commit"] == git(vault, "rev-parse", "HEAD")
    assert git(vault, "show", "--name-status", "--format=%s", "HEAD").split() == [
        "amem:",
        "delete",
        "x.md",
        "D",
        "x.md",
    ]
    assert git(vault, "diff", "--cached", "--name-only") == "other.md"  # still staged, not committed
    assert git(vault, "status", "--porcelain", "--", "x.md") == ""


# --- move -----------------------------------------------------------------------------------------------

LINKER = """---
title: Linker
tags: [a]
---
Plain [[Alice]], aliased [[people/alice|Al]], heading [[alice#Early life]],
block [[People/Alice#^quote1]], embed ![[alice]], Windows [[people\\alice|w]],
table | [[people/alice\\|Al]] |, with extension [[alice.md]].
Code: `[[alice]]` stays.
```
[[people/alice]]
```
Elsewhere: [[bob]] and [[missing]].
"""


ABOUT = "".join(f"Line {i} about Alice, enough text for git to see a rename.\n" for i in range(10))


def make_people(vault: Path) -> None:
    write_file(vault / "people/Alice.md", f"# Alice\nSelf [[people/alice#top]].\n{ABOUT}")
    write_file(vault / "people/bob.md", "# Bob\n[[alice]]\n")
    write_file(vault / "linker.md", LINKER)


def test_move_rewrites_every_link_syntax_keeping_its_parts(vault: Path, amem: Any) -> None:
    make_people(vault)
    result = amem("move", "people/Alice.md", "old/2026/Alice Smith.md")
    assert result.exit_code == 0, result.stderr
    out = result.json
    assert out["id"] == "old/2026/Alice Smith.md" and out["from"] == "people/Alice.md"
    assert out["commit"] is None
    new = vault / "old/2026/Alice Smith.md"
    assert out["version"] == version_of(new.read_bytes())
    assert not (vault / "people/Alice.md").exists()
    assert out["rewritten"] == [
        {"id": "linker.md", "links": 8},
        {"id": "old/2026/Alice Smith.md", "links": 1},
        {"id": "people/bob.md", "links": 1},
    ]
    linker = parse_note(text(vault / "linker.md"))
    assert linker.frontmatter["title"] == "Linker" and "updated" in linker.frontmatter
    assert linker.body == (
        "Plain [[Alice Smith]], aliased [[2026/Alice Smith|Al]], heading [[Alice Smith#Early life]],\n"
        "block [[2026/Alice Smith#^quote1]], embed ![[Alice Smith]], Windows [[2026\\Alice Smith|w]],\n"
        "table | [[2026/Alice Smith\\|Al]] |, with extension [[Alice Smith.md]].\n"
        "Code: `[[alice]]` stays.\n"
        "```\n[[people/alice]]\n```\n"
        "Elsewhere: [[bob]] and [[missing]].\n"
    )
    assert parse_note(text(new)).body == f"# Alice\nSelf [[2026/Alice Smith#top]].\n{ABOUT}"
    read = amem("read", "linker").json
    resolved = {link["resolved"] for link in read["links"]} - {None, "people/bob.md"}
    assert resolved == {"old/2026/Alice Smith.md"}
    assert amem("read", "old/2026/Alice Smith").json["backlinks"] == ["linker.md", "people/bob.md"]


def test_move_keeps_links_that_still_resolve_and_those_to_other_notes(vault: Path, amem: Any) -> None:
    write_file(vault / "a/foo.md", "a\n")
    write_file(vault / "x/y/foo.md", "the other foo\n")
    write_file(vault / "n.md", "[[foo]] [[y/foo]] [[a/foo]]\n")
    result = amem("move", "a/foo", "b/foo")
    assert result.exit_code == 0, result.stderr
    # [[foo]] still names the moved note (fewest segments), [[y/foo]] never did; only the path changes.
    assert parse_note(text(vault / "n.md")).body == "[[foo]] [[y/foo]] [[b/foo]]\n"
    # Moving it to the vault's top takes nothing from x/y/foo.md that was not its own.
    assert amem("move", "b/foo", "foo").exit_code == 0
    assert parse_note(text(vault / "n.md")).body == "[[foo]] [[y/foo]] [[foo]]\n"


def test_move_keeps_links_the_new_place_would_take_over(vault: Path, amem: Any) -> None:
    write_file(vault / "deep/down/foo.md", "the foo everyone links to\n")
    write_file(vault / "notes/bar.md", "bar\n")
    write_file(vault / "n.md", "[[foo]] and [[bar]]\n")
    result = amem("move", "notes/bar", "foo")  # a top-level foo.md would win [[foo]] by fewest segments
    assert result.exit_code == 0, result.stderr
    assert parse_note(text(vault / "n.md")).body == "[[down/foo]] and [[foo]]\n"
    links = amem("read", "n").json["links"]
    assert [link["resolved"] for link in links] == ["deep/down/foo.md", "foo.md"]


def test_move_rewrites_links_written_in_another_case(vault: Path, amem: Any) -> None:
    write_file(vault / "docs/Internal links.md", "# Internal links\n")
    write_file(vault / "n.md", "[[internal links]] [[DOCS/internal links#Top]]\n")
    assert amem("move", "docs/Internal links", "help/Linking notes").exit_code == 0
    assert parse_note(text(vault / "n.md")).body == "[[Linking notes]] [[help/Linking notes#Top]]\n"


def test_move_of_a_note_nothing_links_to_changes_no_other_file(vault: Path, amem: Any) -> None:
    write_file(vault / "a.md", "alone\n")
    other = write_file(vault / "b.md", "[[c]]\n")
    before = other.stat().st_mtime_ns
    result = amem("move", "a", "sub/dir/a")
    assert result.exit_code == 0
    assert result.json["rewritten"] == []
    assert text(vault / "sub/dir/a.md") == "alone\n"
    assert other.stat().st_mtime_ns == before


@pytest.mark.parametrize(
    "args, code, exit_code",
    [
        (["nope", "x"], "not_found", 3),
        (["a", "b"], "conflict", 4),  # NEW exists
        (["a", "B/../b"], "conflict", 4),
        (["../a", "x"], "invalid_id", 5),
        (["a", "../x"], "invalid_id", 5),
        (["a", "/tmp/x"], "invalid_id", 5),
        (["a", "b.md/c"], "invalid_id", 5),  # a folder on NEW's path is a note
        (["a", "C#"], "invalid_id", 5),  # no [[link]] could name it
        (["a", "x|y"], "invalid_id", 5),
        (["a", "[x]"], "invalid_id", 5),
        (["a", "a.md"], "usage", 2),
        (["a"], "usage", 2),
    ],
)
def test_move_errors_change_nothing(vault: Path, amem: Any, args: list[str], code: str, exit_code: int) -> None:
    write_file(vault / "a.md", "[[b]]\n")
    write_file(vault / "b.md", "[[a]]\n")
    result = amem("move", *args)
    assert (result.exit_code, result.error["code"]) == (exit_code, code)
    assert str(vault) not in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*")) == ["a.md", "b.md"]
    assert (text(vault / "a.md"), text(vault / "b.md")) == ("[[b]]\n", "[[a]]\n")


def test_move_with_a_stale_version_changes_nothing(vault: Path, amem: Any) -> None:
    write_file(vault / "a.md", "now\n")
    write_file(vault / "b.md", "[[a]]\n")
    result = amem("move", "a", "c", "--base-version", version_of(b"before\n"))
    assert (result.exit_code, result.error["code"]) == (4, "conflict")
    assert text(vault / "a.md") == "now\n" and not (vault / "c.md").exists()
    assert text(vault / "b.md") == "[[a]]\n"
    ok = amem("move", "a", "c", "--base-version", version_of(b"now\n"))
    assert ok.exit_code == 0 and text(vault / "b.md").endswith("[[c]]\n")


def test_move_commit_is_one_commit_that_git_sees_as_a_rename(
    vault: Path, amem: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    make_people(vault)
    write_file(vault / "unrelated.md", "x\n")
    commit_all(vault, "start")
    write_file(vault / "unrelated.md", "staged\n")
    git(vault, "add", "unrelated.md")
    result = amem("move", "people/Alice.md", "past/Alice.md", "--commit")
    assert result.exit_code == 0, result.stderr
    assert result.json["commit"] == git(vault, "rev-parse", "HEAD")
    assert git(vault, "rev-list", "--count", "HEAD") == "2"
    status = git(vault, "show", "-M", "--name-status", "--format=%s", "HEAD").splitlines()
    assert status[0] == "amem: move people/Alice.md to past/Alice.md"
    rename = [line.split("\t") for line in status[1:] if line.startswith("R")]
    assert [r[1:] for r in rename] == [["people/Alice.md", "past/Alice.md"]]
    assert [line.split("\t")[1] for line in status[1:] if line.startswith("M")] == ["linker.md"]  # [[alice]] still fits
    assert git(vault, "diff", "--cached", "--name-only") == "unrelated.md"
    assert git(vault, "status", "--porcelain", "--untracked-files=no", "--", "people", "past", "linker.md") == ""
    history = amem("history", "past/Alice.md").json["commits"]
    assert [c["message"] for c in history] == ["amem: move people/Alice.md to past/Alice.md", "start"]


def test_move_finishes_a_rename_made_by_hand(vault: Path, amem: Any) -> None:
    write_file(vault / "a/note.md", "x\n")
    write_file(vault / "n.md", "[[a/note]] [[note#h]]\n")
    assert amem("read", "n").exit_code == 0  # the index has seen the links
    (vault / "b").mkdir()
    os.rename(vault / "a/note.md", vault / "b/note.md")
    result = amem("move", "--after", "a/note", "b/note")
    assert result.exit_code == 0, result.stderr
    assert result.json["rewritten"] == [{"id": "n.md", "links": 1}]
    assert parse_note(text(vault / "n.md")).body == "[[b/note]] [[note#h]]\n"


# --- a move killed halfway ---------------------------------------------------------------------------------


def test_a_move_killed_halfway_is_finished_by_running_it_again(
    vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "people/alice.md", "# Alice\n")
    sources = [f"n{i:02d}.md" for i in range(20)]
    for name in sources:
        write_file(vault / name, f"# {name}\nSee [[people/alice|Alice]] and [[alice]].\n")
    commit_all(vault, "start")
    config = load_config()
    env = os.environ.copy()
    argv = [*AMEM, "move", "people/alice", "past/alice-2026", "--commit"]
    journal_dir = config.cache_dir / "moves"

    # Hold the write locks of half the notes, as other writers would: the move rewrites the other half,
    # then waits for those locks; it is killed while it waits.
    with contextlib.ExitStack() as held:
        for name in sources[10:]:
            held.enter_context(note_lock(config, str(vault / name)))
        proc = subprocess.Popen(argv, cwd=isolated_env, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not all("past/alice-2026" in text(vault / name) for name in sources[:10]):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL
    assert not (vault / "people/alice.md").exists() and (vault / "past/alice-2026.md").exists()
    half = ["past/alice-2026" in text(vault / name) for name in sources]
    assert half == [True] * 10 + [False] * 10
    assert list(journal_dir.glob("*.jsonl"))
    assert git(vault, "rev-list", "--count", "HEAD") == "1"  # nothing committed yet

    again = subprocess.run(argv, cwd=isolated_env, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out["rewritten"] == [{"id": name, "links": 2} for name in sources]
    for name in sources:
        assert parse_note(text(vault / name)).body == f"# {name}\nSee [[past/alice-2026|Alice]] and [[alice-2026]].\n"
    assert not list(journal_dir.glob("*.jsonl"))
    status = git(vault, "show", "-M", "--name-status", "--format=", "HEAD").splitlines()
    assert [line.split("\t") for line in status if line.startswith("R")][0][1:] == [
        "people/alice.md",
        "past/alice-2026.md",
    ]
    assert sorted(line.split("\t")[1] for line in status if line.startswith("M")) == sources
    assert git(vault, "status", "--porcelain") == ""

    # Once finished, its journal is gone: running it again is a move of a note that is not there, and
    # touches nothing (a finished move is not told from a typo).
    finished = {name: text(vault / name) for name in sources}
    done = subprocess.run(argv, cwd=isolated_env, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stderr)["error"]["code"] == "not_found"
    assert {name: text(vault / name) for name in sources} == finished


def test_move_into_an_excluded_folder_warns(vault: Path, amem: Any) -> None:
    write_file(vault / "a.md", "x\n")
    write_file(vault / "n.md", "[[a]]\n")
    result = amem("move", "a", "archive/a")
    assert result.exit_code == 0
    assert "search does not find it" in result.stderr
    assert text(vault / "n.md") == "[[a]]\n"  # it still names the note, as Obsidian would read it


def test_a_move_killed_between_linking_new_and_unlinking_old_is_finished(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "a/note.md", "x\n")
    for name in ("n1.md", "n2.md"):
        write_file(vault / name, "[[a/note]]\n")
    config = load_config()
    argv = [*AMEM, "move", "a/note", "b/note"]
    with note_lock(config, str(vault / "n2.md")):
        proc = subprocess.Popen(argv, cwd=isolated_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while "b/note" not in text(vault / "n1.md"):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    # The state a kill between the two steps of the rename leaves: both names on the same file.
    os.link(vault / "b/note.md", vault / "a/note.md")
    again = subprocess.run(argv, cwd=isolated_env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert not (vault / "a/note.md").exists() and text(vault / "b/note.md") == "x\n"
    assert [parse_note(text(vault / n)).body for n in ("n1.md", "n2.md")] == ["[[b/note]]\n"] * 2
    # Without the journal, the same two names are a conflict: NEW exists.
    os.link(vault / "b/note.md", vault / "a/note.md")
    assert subprocess.run(argv, cwd=isolated_env, capture_output=True, timeout=60).returncode == 4


def test_delete_waits_for_the_notes_write_lock(vault: Path, isolated_env: Path) -> None:
    note = write_file(vault / "x.md", "x\n")
    config = load_config()
    with note_lock(config, str(note)):
        proc = subprocess.Popen(
            [*AMEM, "delete", "x"], cwd=isolated_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(1.0)
        assert proc.poll() is None and note.exists()  # waiting for the writer that holds the lock
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)["version"] == version_of(b"x\n") and not note.exists()


def test_move_loses_no_append_made_while_it_rewrites(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "t.md", "target\n")
    write_file(vault / "busy.md", "---\ntitle: Busy\n---\nLinks to [[t]].\n")
    appender = (
        "import sys\nfrom amem.cli import run\n"
        "for i in range(15):\n    run(['write', 'busy', f'entry {sys.argv[1]}-{i}'])\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", appender, str(w)], cwd=isolated_env, stdout=subprocess.DEVNULL)
        for w in range(4)
    ]
    time.sleep(0.5)
    moved = subprocess.run([*AMEM, "move", "t", "x/renamed"], cwd=isolated_env, capture_output=True, timeout=60)
    for proc in writers:
        assert proc.wait(timeout=120) == 0
    assert moved.returncode == 0, moved.stderr
    body = parse_note(text(vault / "busy.md")).body
    assert body.startswith("Links to [[renamed]].\n")
    assert sorted(line for line in body.splitlines() if line.startswith("entry ")) == sorted(
        f"entry {w}-{i}" for w in range(4) for i in range(15)
    )


def test_moving_a_note_out_of_an_excluded_folder_rewrites_links_to_it(vault: Path, amem: Any) -> None:
    write_file(vault / "archive/old.md", "x\n")
    write_file(vault / "n.md", "[[archive/old]] [[old|o]]\n")
    result = amem("move", "archive/old", "notes/revived")
    assert result.exit_code == 0, result.stderr
    assert parse_note(text(vault / "n.md")).body == "[[notes/revived]] [[revived|o]]\n"
    assert amem("read", "notes/revived").json["backlinks"] == ["n.md"]


@pytest.mark.parametrize("args", [["delete", "a"], ["move", "a", "b"]])
def test_a_base_version_that_is_no_version_is_a_usage_error(vault: Path, amem: Any, args: list[str]) -> None:
    write_file(vault / "a.md", "x\n")
    result = amem(*args, "--base-version", "not-a-version")
    assert (result.exit_code, result.error["code"]) == (2, "usage")
    assert sorted(p.name for p in vault.iterdir()) == ["a.md"]
