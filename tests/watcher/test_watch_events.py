"""The watcher on real files with real inotify/watchdog events: changes, deletes, renames, debounce,
ignored folders (not even watched), new folders, roots and projects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from amem.errors import WatchError

from ..conftest import write_file
from .conftest import RunningWatcher, settle, wait_until

Make = Callable[..., RunningWatcher]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts inotify watches")


def test_a_write_becomes_one_observation_of_the_source_shape(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree)
    write_file(tree / "notes.md", "hello world\n")
    [obs] = w.wait_for("notes.md")
    settle(lambda: len(w.observations) == 1)
    assert obs["hookType"] == "post_tool_use"
    assert obs["cwd"] == str(tree) and obs["project"] == "project"
    assert obs["data"]["content"] == "notes.md (12 bytes)\n\nhello world\n"
    assert obs["data"]["absPath"] == str(tree / "notes.md")
    # The stdout sink printed the same observation as one NDJSON line.
    lines = w.stdout.getvalue().splitlines()
    assert [json.loads(line) for line in lines] == [obs]


def test_a_delete_becomes_file_delete(make_watcher: Make, tree: Path) -> None:
    write_file(tree / "old.txt", "x")
    w = make_watcher(tree)
    (tree / "old.txt").unlink()
    [obs] = w.wait_for("old.txt", "file_delete")
    assert obs["data"]["content"] == "deleted: old.txt"
    assert obs["data"]["size"] == 0 and obs["data"]["truncated"] is False


def test_a_rename_is_a_delete_of_the_old_path_and_a_change_of_the_new(make_watcher: Make, tree: Path) -> None:
    write_file(tree / "a.md", "content")
    w = make_watcher(tree)
    os.rename(tree / "a.md", tree / "b.md")
    w.wait_for("a.md", "file_delete")
    [new] = w.wait_for("b.md", "file_change")
    assert new["data"]["content"] == "b.md (7 bytes)\n\ncontent"


def test_rapid_writes_are_debounced(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree, debounce_ms=300)
    path = tree / "burst.md"
    for i in range(4):
        write_file(path, f"version {i}\n")
    w.wait_for("burst.md")
    settle(lambda: True, quiet=0.8)
    hits = w.files()
    assert 1 <= len(hits) <= 2  # four rapid writes, at most two observations
    assert w.observations[-1]["data"]["content"].endswith("version 3\n")


def test_folders_produce_nothing(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree)
    (tree / "empty").mkdir()
    (tree / "empty").rmdir()
    (tree / "other").mkdir()
    write_file(tree / "marker.txt", "m")
    w.wait_for("marker.txt")
    settle(lambda: w.files() == ["marker.txt"])


def test_new_folders_are_watched_and_scanned(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree)
    before = w.watcher.watch_count
    if before is None:
        pytest.skip("watch counts exist only on inotify, which this machine lacks")
    # Created with content in one go: the files inside exist before any watch on the new folders.
    deep = tree / "a" / "b" / "c"
    deep.mkdir(parents=True)
    write_file(deep / "early.md", "early")
    w.wait_for("a/b/c/early.md")
    write_file(deep / "later.md", "later")
    w.wait_for("a/b/c/later.md")
    assert w.watcher.watch_count == before + 3


def test_a_folder_copied_in_is_reported_file_by_file(make_watcher: Make, tree: Path, tmp_path: Path) -> None:
    source = tmp_path / "outside"
    for i in range(5):
        write_file(source / "sub" / f"f{i}.txt", str(i))
    w = make_watcher(tree)
    shutil.move(str(source), str(tree / "moved-in"))
    for i in range(5):
        w.wait_for(f"moved-in/sub/f{i}.txt")
    write_file(tree / "moved-in" / "sub" / "new.txt", "n")
    w.wait_for("moved-in/sub/new.txt")


def test_a_folder_renamed_inside_the_tree(make_watcher: Make, tree: Path) -> None:
    write_file(tree / "src" / "old" / "x.py", "x = 1\n")
    write_file(tree / "src" / "old" / "deep" / "y.py", "y = 2\n")
    w = make_watcher(tree)
    os.rename(tree / "src" / "old", tree / "src" / "new")
    for rel in ("x.py", "deep/y.py"):
        w.wait_for(f"src/old/{rel}", "file_delete")
        w.wait_for(f"src/new/{rel}", "file_change")
    write_file(tree / "src" / "new" / "deep" / "z.py", "z")
    w.wait_for("src/new/deep/z.py")


def test_default_ignores_produce_nothing(make_watcher: Make, tree: Path) -> None:
    for folder in ("node_modules/pkg", ".git", "dist", "build", ".next", ".turbo", "coverage"):
        (tree / folder).mkdir(parents=True)
    w = make_watcher(tree)
    for rel in (
        "node_modules/ignored.js",
        "node_modules/pkg/index.js",
        ".git/HEAD",
        "dist/app.js",
        "build/out.js",
        ".next/x.js",
        ".turbo/x",
        "coverage/lcov.info",
        ".DS_Store",
        "debug.log",
        "yarn.lock",
        "sub/.DS_Store",
    ):
        write_file(tree / rel, "ignored")
    write_file(tree / "node_modules" / "late" / "x.js", "a new folder inside node_modules")
    write_file(tree / "marker.md", "m")
    w.wait_for("marker.md")
    settle(lambda: w.files() == ["marker.md"], quiet=0.5)


def test_user_regexes_are_ignored(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree, ignore=[r"^tmp/", r"\.swp$"])
    write_file(tree / "tmp" / "scratch.md", "s")
    write_file(tree / ".notes.md.swp", "s")
    write_file(tree / "keep.md", "k")
    w.wait_for("keep.md")
    settle(lambda: w.files() == ["keep.md"])


def test_gitignore_rules_and_no_gitignore(make_watcher: Make, tree: Path) -> None:
    write_file(tree / ".gitignore", "*.tmp\ntarget/\n")
    write_file(tree / "pkg" / ".gitignore", "local.md\n")
    (tree / "target").mkdir()
    w = make_watcher(tree)
    for rel in ("a.tmp", "target/out.txt", "pkg/local.md"):
        write_file(tree / rel, "ignored")
    write_file(tree / "pkg" / "kept.md", "k")
    w.wait_for("pkg/kept.md")
    settle(lambda: w.files() == ["pkg/kept.md"])
    w.stop()

    plain = make_watcher(tree, no_gitignore=True)
    write_file(tree / "a.tmp", "now observed")
    write_file(tree / "target" / "out.txt", "now observed")
    plain.wait_for("a.tmp")
    plain.wait_for("target/out.txt")


def test_editing_gitignore_changes_what_is_watched(make_watcher: Make, tree: Path) -> None:
    (tree / "gen" / "sub").mkdir(parents=True)
    w = make_watcher(tree)
    before = w.watcher.watch_count
    if before is None:
        pytest.skip("watch counts exist only on inotify, which this machine lacks")
    write_file(tree / ".gitignore", "gen/\n")
    w.wait_for(".gitignore")
    wait_until(lambda: w.watcher.watch_count == before - 2, message="gen/ to be unwatched")
    write_file(tree / "gen" / "sub" / "x.md", "ignored now")
    write_file(tree / "marker.md", "m")
    w.wait_for("marker.md")
    settle(lambda: "gen/sub/x.md" not in w.files())
    write_file(tree / ".gitignore", "# nothing ignored\n")
    wait_until(lambda: w.watcher.watch_count == before, message="gen/ to be watched again")
    write_file(tree / "gen" / "sub" / "y.md", "seen again")
    w.wait_for("gen/sub/y.md")


def test_env_files_are_previewed_and_redacted(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree)
    write_file(tree / ".env.local", "OPENAI_API_KEY=sk-live-1234567890abcdefghij\nPUBLIC_FLAG=enabled\n")
    [obs] = w.wait_for(".env.local")
    assert "OPENAI_API_KEY=[REDACTED]" in obs["data"]["content"]
    assert "PUBLIC_FLAG=enabled" in obs["data"]["content"]
    assert "sk-live" not in w.stdout.getvalue()


def test_binary_files_path_only_unless_allowed(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree)
    write_file(tree / "photo.jpg", b"\xff\xd8\xff\xe0binary")
    [obs] = w.wait_for("photo.jpg")
    assert obs["data"]["content"] == "photo.jpg (10 bytes)"
    w.stop()
    allowed = make_watcher(tree, allow_binary=True)
    write_file(tree / "photo.jpg", b"\xff\xd8\xff\xe0binary2")
    [obs] = allowed.wait_for("photo.jpg")
    assert obs["data"]["content"].startswith("photo.jpg (11 bytes)\n\n")


def test_a_sub_folder_of_a_git_repository_is_labelled_with_the_repository(make_watcher: Make, tmp_path: Path) -> None:
    repo = tmp_path / "acme-api"
    sub = repo / "services" / "billing"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    other = tmp_path / "notes"
    other.mkdir()
    w = make_watcher([sub, other])
    write_file(sub / "a.py", "a")
    write_file(other / "b.md", "b")
    [a] = w.wait_for("a.py")
    [b] = w.wait_for("b.md")
    assert a["project"] == "acme-api" and a["cwd"] == str(sub)
    assert b["project"] == "notes" and b["cwd"] == str(other)


def test_a_configured_project_labels_every_root(make_watcher: Make, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    w = make_watcher([one, two], project="shared")
    write_file(one / "a.md", "a")
    write_file(two / "b.md", "b")
    assert w.wait_for("a.md")[0]["project"] == "shared"
    assert w.wait_for("b.md")[0]["project"] == "shared"


def test_bad_roots_are_reported_and_skipped(make_watcher: Make, tree: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    a_file = write_file(tmp_path / "file.txt", "x")
    w = make_watcher([missing, a_file, tree])
    assert [r.path for r in w.watcher.roots] == [str(tree)]
    assert any(f"{missing}: no such directory" in line for line in w.warnings)
    assert any(f"{a_file}: not a directory" in line for line in w.warnings)
    write_file(tree / "ok.md", "ok")
    w.wait_for("ok.md")


def test_no_root_attached_is_an_error(make_watcher: Make, tmp_path: Path) -> None:
    a_file = write_file(tmp_path / "file.txt", "x")
    with pytest.raises(WatchError) as caught:
        make_watcher([tmp_path / "missing", a_file])
    message = caught.value.message
    assert message.startswith("could not watch any of the configured roots: ")
    assert "no such directory" in message and "not a directory" in message
    assert caught.value.exit_code == 9


def test_a_spool_that_cannot_be_created_is_a_watch_error(make_watcher: Make, tree: Path, tmp_path: Path) -> None:
    blocker = write_file(tmp_path / "not-a-folder", "x")
    with pytest.raises(WatchError) as caught:
        make_watcher(tree, ("server",), url="http://127.0.0.1:9", spool_dir=blocker / "spool")
    assert caught.value.message.startswith("cannot start the server sink: ")


def test_the_vault_cannot_be_a_root(make_watcher: Make, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    with pytest.raises(WatchError) as caught:
        make_watcher([vault / "notes"])
    assert "amem's own vault or state folder" in caught.value.message


def test_a_file_name_that_is_not_utf8(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree)
    fd = os.open(os.fsencode(str(tree)) + b"/caf\xe9.md", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"latin-1 name")
    os.close(fd)
    [obs] = w.wait_for("caf\ufffd.md")
    assert obs["data"]["absPath"] == f"{tree}/caf\ufffd.md"
    assert json.loads(w.stdout.getvalue().splitlines()[0]) == obs


def test_overlapping_and_repeated_roots(make_watcher: Make, tree: Path) -> None:
    (tree / "inner").mkdir()
    w = make_watcher([tree, tree, tree / "inner"])
    assert [r.path for r in w.watcher.roots] == [str(tree)]
    assert any("overlaps the watched root" in line for line in w.warnings)


def test_stopping_flushes_pending_changes(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree, debounce_ms=60_000)
    write_file(tree / "pending.md", "not yet flushed")
    wait_until(
        lambda: w.watcher._debouncer is not None and w.watcher._debouncer.pending == 1,
        message="the change to be pending",
    )
    assert w.observations == []
    summary = w.stop()
    assert w.files() == ["pending.md"]
    assert summary.observed == 1 and summary.sinks["stdout"] == {"delivered": 1}


def inotify_watch_lines(fd: int) -> int:
    with open(f"/proc/self/fdinfo/{fd}") as handle:
        return sum(1 for line in handle if line.startswith("inotify"))


@linux_only
def test_ignored_folders_cost_no_watches(make_watcher: Make, tree: Path) -> None:
    for i in range(6):
        for j in range(4):
            (tree / f"src{i}" / f"mod{j}").mkdir(parents=True)
    for i in range(300):
        (tree / "node_modules" / f"pkg{i}" / "lib").mkdir(parents=True)
    for i in range(50):
        (tree / "target" / f"t{i}").mkdir(parents=True)
        (tree / "dist" / f"d{i}").mkdir(parents=True)
    write_file(tree / ".gitignore", "target/\n")
    w = make_watcher(tree)
    tree_watcher: Any = w.watcher._tree
    assert tree_watcher.backend == "inotify"
    expected = 1 + 6 + 6 * 4  # the root, src*, src*/mod*: nothing under node_modules, target or dist
    assert w.watcher.watch_count == expected
    assert inotify_watch_lines(tree_watcher._fd) == expected
    assert not any("node_modules" in f or "target" in f for f in tree_watcher.watched_folders())
    (tree / "src0" / "new").mkdir()
    (tree / "node_modules" / "pkg-new").mkdir()
    write_file(tree / "src0" / "new" / "x.md", "x")
    w.wait_for("src0/new/x.md")
    assert inotify_watch_lines(tree_watcher._fd) == expected + 1


def test_no_feedback_loop_when_the_vault_lives_in_the_project(
    make_watcher: Make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    (project / ".amem").mkdir(parents=True)
    monkeypatch.delenv("AMEM_VAULT")
    # amem's cache and state inside the project too: the vault index, locks and spool must not be observed.
    monkeypatch.setenv("XDG_CACHE_HOME", str(project / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(project / "state"))
    w = make_watcher(project, ("vault", "stdout"), cwd=str(project))
    write_file(project / "src" / "app.py", "print('hi')\n")
    w.wait_for("src/app.py")
    note = wait_until(
        lambda: list((project / ".amem" / "memory" / "observations").glob("*.md")), message="the daily note"
    )
    assert "src/app.py" in note[0].read_text()
    assert list((project / "cache").rglob("*")), "the vault core keeps its index in the cache"
    settle(lambda: w.files() == ["src/app.py"], quiet=1.0)


def test_watchdog_backend_applies_the_same_rules(make_watcher: Make, tree: Path) -> None:
    (tree / "node_modules").mkdir()
    w = make_watcher(tree, backend="watchdog")
    write_file(tree / "node_modules" / "x.js", "ignored")
    write_file(tree / "keep.md", "kept")
    w.wait_for("keep.md")
    os.rename(tree / "keep.md", tree / "moved.md")
    w.wait_for("keep.md", "file_delete")
    w.wait_for("moved.md")
    assert "node_modules/x.js" not in w.files()


def test_a_file_written_slowly_is_observed_once_it_settles(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree, debounce_ms=150)
    with open(tree / "slow.md", "w") as handle:
        for i in range(5):
            handle.write(f"line {i}\n")
            handle.flush()
            time.sleep(0.03)
    [obs] = w.wait_for("slow.md")
    assert obs["data"]["content"].endswith("line 4\n")
