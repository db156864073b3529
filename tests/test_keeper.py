"""The index keeper (`amem index --watch`) as a real process: other processes skip the walk while it lives
and a sync cookie proves it has every earlier change; killed, stopped or wedged, they walk again."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import amem.index.index
import amem.index.scan
from amem.config import Config, load_config
from amem.index.index import VaultIndex
from amem.keeperproto import client as keeper_client
from amem.keeperproto.client import SYNC_DIR, synced
from amem.ops.read import read_note
from amem.search.query import search
from tests.conftest import write_file
from tests.gitrepo import git, init_repo
from tests.keeperproc import KeeperProcess, start_keeper, wait_until_stopped
from tests.test_index import snapshot


class WalkCounter:
    """Counts the looks at the vault made in this process: stat walks of every note, and the quick
    refreshes' stat of every folder."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = amem.index.scan.scan_vault
        real_quick = amem.index.index.VaultIndex._quick_scan

        def counting(config: Any, others: bool = False) -> Any:
            self.count += 1
            return real(config, others)

        def counting_quick(index: VaultIndex) -> Any:
            self.count += 1
            return real_quick(index)

        monkeypatch.setattr("amem.index.index.scan_vault", counting)  # where refreshes look it up
        monkeypatch.setattr("amem.index.attached.scan_vault", counting)
        monkeypatch.setattr(amem.index.index.VaultIndex, "_quick_scan", counting_quick)


def ids_found(config: Config, query: str) -> list[str]:
    return sorted(hit["id"] for hit in search(config, query, limit=100)["hits"])


def test_in_place_rewrites_are_found_at_once_without_a_walk(
    vault: Path, keeper: KeeperProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(50):
        write_file(vault / f"f{i % 5}/note{i}.md", f"note {i} plain words\n")
    config = load_config()
    walks = WalkCounter(monkeypatch)
    target = vault / "f3/note8.md"
    for i in range(200):
        word = f"marker{i}x"
        with open(target, "r+", encoding="utf-8") as handle:  # rewritten in place: same file, same folder
            handle.write(f"{word} ")
        assert ids_found(config, word) == ["f3/note8.md"], i
        if i % 20 == 0:  # a read's quick refresh: not even the folders are statted
            assert read_note(config, "f3/note8")["body"].startswith(word)
    assert walks.count == 0  # every search and read was answered through the keeper
    for i in range(10):
        (vault / "f1/note1.md").write_text(f"cli{i}word\n", encoding="utf-8")
        out = subprocess.run(
            [sys.executable, "-m", "amem", "search", f"cli{i}word"], capture_output=True, text=True, timeout=60
        )
        assert [hit["id"] for hit in json.loads(out.stdout)["hits"]] == ["f1/note1.md"], out.stderr


def test_creates_deletes_renames_and_folder_moves_are_seen(vault: Path, keeper: KeeperProcess, tmp_path: Path) -> None:
    config = load_config()
    write_file(vault / "a/one.md", "alpha\n")
    write_file(vault / "b/deep/two.md", "alpha\n")
    assert ids_found(config, "alpha") == ["a/one.md", "b/deep/two.md"]
    (vault / "a/one.md").rename(vault / "a/uno.md")
    assert ids_found(config, "alpha") == ["a/uno.md", "b/deep/two.md"]
    (vault / "b/deep").rename(vault / "c")
    assert ids_found(config, "alpha") == ["a/uno.md", "c/two.md"]
    (vault / "c").rename(tmp_path / "moved-out")  # a folder leaving the vault names none of its notes
    assert ids_found(config, "alpha") == ["a/uno.md"]
    (tmp_path / "moved-out").rename(vault / "back")
    assert ids_found(config, "alpha") == ["a/uno.md", "back/two.md"]
    (vault / "a/uno.md").unlink()
    assert ids_found(config, "alpha") == ["back/two.md"]


def test_folders_the_index_walks_are_watched_and_only_those(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # build/ and dist/ are skipped by the file watcher's defaults but are ordinary folders of the vault.
    write_file(vault / "build/b.md", "old\n")
    write_file(vault / "archive/x.md", "old\n")
    write_file(vault / ".hidden/h.md", "old\n")
    started = start_keeper()
    try:
        config = load_config()
        walks = WalkCounter(monkeypatch)
        (vault / "build/b.md").write_text("fresh words\n", encoding="utf-8")
        (vault / "archive/x.md").write_text("fresh words\n", encoding="utf-8")
        (vault / ".hidden/h.md").write_text("fresh words\n", encoding="utf-8")
        assert ids_found(config, "fresh") == ["build/b.md"]
        assert walks.count == 0
    finally:
        started.stop()


def test_a_burst_of_changes_ends_equal_to_a_fresh_build(
    vault: Path, keeper: KeeperProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "token", "认证", "zeta"]
    ids: list[str] = []
    changes = 0
    while changes < 5000:
        roll = rng.random()
        if roll < 0.45 or not ids:
            note = f"d{rng.randint(0, 20)}/n{rng.randint(0, 700)}.md"
            # Links by base name and folder-qualified ones; a move below leaves the latter falling back to the
            # base name, so notes of that name appearing and going change what they resolve to.
            targets = [rng.choice(ids).removesuffix(".md") for _ in range(rng.randint(0, 2))] if ids else []
            links = " ".join(f"[[{t if rng.random() < 0.5 else Path(t).name}]]" for t in targets)
            write_file(vault / note, f"# {rng.choice(words)}\n{' '.join(rng.choices(words, k=8))} {links}\n")
            if note not in ids:
                ids.append(note)
        elif roll < 0.75:
            with open(vault / rng.choice(ids), "a", encoding="utf-8") as handle:
                handle.write(f" {rng.choice(words)}")
        elif roll < 0.9:
            note = ids.pop(rng.randrange(len(ids)))
            (vault / note).unlink()
        else:
            note = ids.pop(rng.randrange(len(ids)))
            new = f"r{rng.randint(0, 5)}/{Path(note).name}"
            if new in ids:
                ids.append(note)
                continue
            (vault / new).parent.mkdir(exist_ok=True)
            (vault / note).rename(vault / new)
            ids.append(new)
        changes += 1
    config = load_config()
    deadline = time.monotonic() + 120
    index = VaultIndex(config)
    try:
        while not synced(index):  # the keeper may still be applying the burst
            assert time.monotonic() < deadline, "the keeper never confirmed"
        kept = snapshot(index)
    finally:
        index.close()
    # Every match and the first 20: among equal scores the engine chooses by id, not by rowid, which
    # differs between an index kept up to date and one built afresh.
    kept_answers = {(w, limit): search(config, w, limit=limit) for w in words for limit in (20, 10_000)}
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-cache"))
    fresh_config = load_config()
    fresh_answers = {(w, limit): search(fresh_config, w, limit=limit) for w in words for limit in (20, 10_000)}
    fresh_index = VaultIndex(fresh_config)
    try:
        assert kept == snapshot(fresh_index)
    finally:
        fresh_index.close()
    assert kept_answers == fresh_answers
    assert sorted(VaultIndex(config).ids()) == sorted(ids)


def test_a_killed_keeper_means_a_walk_and_a_correct_answer(
    vault: Path, keeper: KeeperProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_file(vault / "n.md", "before\n")
    config = load_config()
    assert ids_found(config, "before") == ["n.md"]
    assert keeper.stop(signal.SIGKILL) == -signal.SIGKILL
    walks = WalkCounter(monkeypatch)
    with open(vault / "n.md", "r+", encoding="utf-8") as handle:
        handle.write("after!")
    assert ids_found(config, "after") == ["n.md"]
    assert walks.count == 1
    assert not list((vault / SYNC_DIR).glob("*.cookie"))  # no command left a cookie behind
    # Its leftovers do not stop a new keeper, nor make commands wait for the dead one.
    again = start_keeper()
    try:
        (vault / "n.md").write_text("third\n", encoding="utf-8")
        assert ids_found(config, "third") == ["n.md"]
        assert walks.count == 1
    finally:
        again.stop()


def test_a_wedged_keeper_means_a_walk_after_a_bounded_wait(
    vault: Path, keeper: KeeperProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keeper_client, "ACK_TIMEOUT", 0.3)
    config = load_config()
    keeper.proc.send_signal(signal.SIGSTOP)
    wait_until_stopped(keeper.proc.pid)  # stopped idle: one stopped inside a transaction would block writers
    try:
        walks = WalkCounter(monkeypatch)
        write_file(vault / "w.md", "while wedged\n")
        found = ids_found(config, "wedged")
        assert found == ["w.md"]
        assert walks.count == 1
        assert not list((vault / SYNC_DIR).glob("*.cookie"))
    finally:
        keeper.proc.send_signal(signal.SIGCONT)
    write_file(vault / "w.md", "resumed\n")
    assert ids_found(config, "resumed") == ["w.md"]


def test_a_keeper_of_other_settings_is_not_asked(vault: Path, keeper: KeeperProcess, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("excludeDirs: [private]\n", encoding="utf-8")
    config = load_config(config_file=str(other))
    index = VaultIndex(config)
    try:
        assert synced(index) is False
    finally:
        index.close()
    assert not list((vault / SYNC_DIR).glob("*.cookie"))


def test_one_keeper_per_vault(vault: Path, keeper: KeeperProcess) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "amem", "index", "--watch"], capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 9 and second.stdout == ""
    error = json.loads(second.stderr.splitlines()[-1])["error"]
    assert error["code"] == "watch" and f"pid {keeper.proc.pid}" in error["message"]
    write_file(vault / "still.md", "served\n")
    assert ids_found(load_config(), "served") == ["still.md"]


def test_sigterm_stops_it_cleanly_and_leaves_nothing_in_the_vault(vault: Path, config: Config) -> None:
    init_repo(vault)
    write_file(vault / "n.md", "x\n")
    started = start_keeper()
    assert started.ready["notes"] == 1
    assert (vault / SYNC_DIR).is_dir()
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == "?? n.md"  # cookies are not for git
    assert started.stop(signal.SIGTERM) == 0
    assert not (vault / SYNC_DIR).exists()
    assert not (config.cache_dir / "keeper.json").exists()
    index = VaultIndex(config)
    try:
        assert synced(index) is False
    finally:
        index.close()


def test_a_qualified_link_follows_incremental_changes_by_its_path_only(vault: Path, config: Config) -> None:
    write_file(vault / "a.md", "[[elsewhere/n]]\n")
    write_file(vault / "x/n.md", "one\n")
    index = VaultIndex(config)
    try:
        index.refresh()
        assert index.resolve("elsewhere/n") is None  # no path suffix matches: never the base name (SPEC §2)
        write_file(vault / "elsewhere/n.md", "two\n")
        index.refresh()
        assert index.backlinks("elsewhere/n.md") == ["a.md"]
        (vault / "elsewhere/n.md").unlink()
        index.refresh()
        assert index.resolve("elsewhere/n") is None and index.backlinks("x/n.md") == []
    finally:
        index.close()


def test_a_rebuild_while_a_keeper_runs_holds_every_note(vault: Path, keeper: KeeperProcess) -> None:
    for i in range(20):
        write_file(vault / f"d{i % 3}/n{i}.md", f"# n{i}\nrebuilt words\n")
    env = os.environ.copy()
    rebuilt = subprocess.run(
        [sys.executable, "-m", "amem", "index", "--rebuild"], capture_output=True, text=True, env=env, timeout=60
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["notes"] == 20
    assert len(ids_found(load_config(), "rebuilt")) == 20
    # The index deleted under the keeper's feet: the next command builds it again from the vault.
    config = load_config()
    VaultIndex(config).clear()
    assert len(ids_found(config, "rebuilt")) == 20


def test_a_long_lived_processs_kept_index_follows_a_rebuild(
    vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keeper's or `amem mcp`'s searches keep their index open between them; when another process
    rebuilds the index (a new file), the next search reads the new one, not the deleted file it held."""
    import amem.index.kept

    monkeypatch.setattr(amem.index.kept, "KEEP_INDEX", True)
    monkeypatch.setattr(amem.index.kept, "_kept", [])
    write_file(vault / "a.md", "alpha one\n")
    first = start_keeper()
    try:
        assert [hit["id"] for hit in search(config, "alpha")["hits"]] == ["a.md"]
        assert amem.index.kept._kept, "the search kept its index open"
    finally:
        first.stop()
    rebuilt = subprocess.run([sys.executable, "-m", "amem", "index", "--rebuild"], capture_output=True, text=True)
    assert rebuilt.returncode == 0, rebuilt.stderr
    second = start_keeper()
    try:
        (vault / "b.md").write_text("alpha two\n", encoding="utf-8")
        assert sorted(hit["id"] for hit in search(config, "alpha")["hits"]) == ["a.md", "b.md"]
    finally:
        second.stop()


#: `amem index --watch` whose stop Event takes its first wait's SIGTERM while the keeper's main thread
#: holds the Event's own lock: where the signal lands when it comes just as the keeper, its ready line
#: printed, begins to wait (the handler runs in that thread). A handler that took the same lock would wait
#: for itself for ever.
SIGTERM_INSIDE_THE_WAIT = """
import os, signal, sys, threading


class SignalledInsideWait(threading.Event):
    fired = False

    def wait(self, timeout=None):
        if not SignalledInsideWait.fired and sys._getframe(1).f_code.co_name == "_keep":
            SignalledInsideWait.fired = True
            with self._cond:
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):  # the handler runs here, between two of these steps
                    pass
        return super().wait(timeout)


threading.Event = SignalledInsideWait
from amem.cli import main

main()
"""


def test_a_sigterm_that_lands_as_the_keeper_begins_to_wait_stops_it(vault: Path) -> None:
    vault.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_INSIDE_THE_WAIT, "index", "--watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # wedged: no keeper outlives its test
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[0])["notes"] == 0  # it was keeping the index when the signal came
    assert not (vault / SYNC_DIR).exists()  # and it stopped as a keeper stops


def test_a_wait_in_the_keepers_own_process_is_woken_not_polled(
    vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keeper answering a command (or `amem mcp`'s tool) confirms its cookie in the same process: the
    wait is woken by the keeper's thread, and sleeps no polling pause."""
    from amem.keeper.keeper import Keeper

    write_file(vault / "a.md", "# A\n\nfirst\n")
    kept = Keeper(config)
    kept.start()
    import threading

    sleeps: list[float] = []
    real_sleep = time.sleep
    waiting = threading.get_ident()

    def sleep(seconds: float) -> None:
        if threading.get_ident() == waiting:  # the keeper's own threads may sleep as they please
            sleeps.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr("amem.keeperproto.client.time.sleep", sleep)
    try:
        for i in range(20):
            write_file(vault / "a.md", f"# A\n\nchanged{i}\n")
            index = VaultIndex(config)
            try:
                assert synced(index, timeout=10)
            finally:
                index.close()
            assert ids_found(config, f"changed{i}") == ["a.md"]
    finally:
        kept.stop()
    assert sleeps == []
