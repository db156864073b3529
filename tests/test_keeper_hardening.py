"""The index keeper against what a sync or a stranger can put in its way, with real processes: a committed
`.amem-sync` symlink (to the vault, to a folder outside), a file of that name, hostile requests on its
ranking socket (deep nesting, huge lines, wrong types, bad UTF-8, silent and many clients); and its
warnings never show a host path."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amem.config import load_config
from amem.keeperproto.client import INFO_FILE, SOCKET_FILE, SYNC_DIR
from amem.semantic import semantic
from tests.conftest import write_file
from tests.gitrepo import commit_all, git, set_identity
from tests.keeperproc import KeeperProcess, start_keeper

AMEM = [sys.executable, "-m", "amem"]


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)


def amem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AMEM, *args], capture_output=True, text=True, timeout=120, env=os.environ.copy())


# --- item 7: a committed symlink named .amem-sync ---------------------------------------------------


def vault_with_remote_symlink(tmp_path: Path, vault: Path, target: str, gitignore: str | None) -> Path:
    """A vault cloned from a bare remote, into which another clone committed `.amem-sync -> target`,
    brought in by `amem sync`."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True, capture_output=True)
    write_file(other / "first.md", "# First\n")
    if gitignore is not None:
        write_file(other / ".gitignore", gitignore)
    commit_all(other, "start")
    git(other, "push", "-q", "origin", "HEAD")
    subprocess.run(["git", "clone", "-q", str(remote), str(vault)], check=True, capture_output=True)
    os.symlink(target, other / SYNC_DIR)
    commit_all(other, "a symlink where the keeper keeps its cookies")
    git(other, "push", "-q", "origin", "HEAD")
    synced = amem("sync")
    assert synced.returncode == 0, synced.stderr
    assert os.path.islink(vault / SYNC_DIR)
    return remote


def run_keeper_once() -> str:
    """Start a keeper, make a command ask it (a cookie), stop it with SIGTERM; its stderr."""
    started = start_keeper()
    searched = amem("search", "first")
    assert searched.returncode == 0, searched.stderr
    assert started.stop(signal.SIGTERM) == 0
    return started.stderr()


def test_a_synced_symlink_to_the_vault_never_costs_the_vaults_gitignore(tmp_path: Path, vault: Path) -> None:
    vault_with_remote_symlink(tmp_path, vault, ".", "private/\n")
    write_file(vault / "private/secret.md", "not for the remote\n")
    run_keeper_once()
    assert (vault / ".gitignore").read_text() == "private/\n"
    assert not os.path.lexists(vault / SYNC_DIR)  # replaced by the keeper's folder, which it removed
    write_file(vault / "later.md", "# Later\n")
    synced = amem("sync")
    assert synced.returncode == 0, synced.stderr
    tracked = git(vault, "ls-tree", "-r", "--name-only", "origin/HEAD").splitlines()
    assert "later.md" in tracked and ".gitignore" in tracked
    assert not any(name.startswith("private/") for name in tracked)


def test_a_synced_symlink_to_a_folder_outside_leaves_that_folder_alone(tmp_path: Path, vault: Path) -> None:
    outside = tmp_path / "outside"
    write_file(outside / ".gitignore", "keep me\n")
    write_file(outside / "x.cookie", "not the keeper's\n")
    before = {p.name: p.read_text() for p in outside.iterdir()}
    vault_with_remote_symlink(tmp_path, vault, str(outside), None)
    run_keeper_once()
    assert {p.name: p.read_text() for p in outside.iterdir()} == before


def test_a_synced_symlink_in_a_vault_with_no_gitignore_writes_none(tmp_path: Path, vault: Path) -> None:
    vault_with_remote_symlink(tmp_path, vault, ".", None)
    started = start_keeper()
    try:
        assert not (vault / ".gitignore").exists()
        assert (vault / SYNC_DIR).is_dir() and not (vault / SYNC_DIR).is_symlink()
        write_file(vault / "new.md", "# New\n")
        status = git(vault, "status", "--porcelain", "--untracked-files=all")
        assert "?? new.md" in status.splitlines()  # git still sees new notes
    finally:
        assert started.stop(signal.SIGTERM) == 0
    assert not (vault / ".gitignore").exists()


def test_the_folder_swapped_for_a_symlink_while_the_keeper_runs(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "first.md", "# First\n")
    write_file(vault / ".gitignore", "private/\n")
    outside = tmp_path / "outside"
    write_file(outside / ".gitignore", "keep me\n")
    started = start_keeper()
    try:
        shutil.rmtree(vault / SYNC_DIR)
        os.symlink(str(outside), vault / SYNC_DIR)  # what a checkout of a committed symlink does
        searched = amem("search", "first")  # a command that would drop a cookie
        assert searched.returncode == 0, searched.stderr
        assert [hit["id"] for hit in json.loads(searched.stdout)["hits"]] == ["first.md"]
        assert sorted(p.name for p in outside.iterdir()) == [".gitignore"]
    finally:
        assert started.stop(signal.SIGTERM) == 0
    assert (outside / ".gitignore").read_text() == "keep me\n"
    assert (vault / ".gitignore").read_text() == "private/\n"
    assert os.path.islink(vault / SYNC_DIR)  # not the keeper's to remove once it is no longer its folder


def test_a_file_named_like_the_keepers_folder_is_named_in_the_error(vault: Path) -> None:
    write_file(vault / "first.md", "# First\n")
    write_file(vault / SYNC_DIR, "mine\n")
    proc = amem("index", "--watch")
    assert proc.returncode == 9 and proc.stdout == ""
    error = json.loads(proc.stderr)["error"]
    assert error["code"] == "watch"
    assert SYNC_DIR in error["message"] and "another" not in error["message"]
    assert str(vault) not in proc.stderr
    assert (vault / SYNC_DIR).read_text() == "mine\n"


# --- item 8: the ranking socket against malformed requests -------------------------------------------


@pytest.fixture
def ranking_keeper(vault: Path, isolated_env: Path, short_cache: Path) -> Iterator[KeeperProcess]:
    if not semantic.installed():
        pytest.skip("the semantic extra is not installed")
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: true\n")
    write_file(vault / "auth.md", "# Tokens\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "coffee.md", "# Coffee\n\nThe espresso machine needs descaling each month.\n")
    started = start_keeper()
    try:
        yield started
    finally:
        started.stop(signal.SIGKILL)


def socket_path() -> str:
    cache = load_config().cache_dir
    assert json.loads((cache / INFO_FILE).read_text())["socket"] == SOCKET_FILE
    return str(cache / SOCKET_FILE)


def exchange(payload: bytes, timeout: float = 60) -> Any:
    """Send `payload` on a fresh connection, read one line back, as JSON (None when the keeper closed)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        client.connect(socket_path())
        try:
            client.sendall(payload)
            client.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the keeper refused the rest of a request too long: it must still say so, or close
        data = b""
        while not data.endswith(b"\n"):
            try:
                piece = client.recv(65536)
            except ConnectionResetError:
                break
            if not piece:
                break
            data += piece
    return json.loads(data) if data else None


def good_request() -> bytes:
    return json.dumps({"v": 1, "query": "when do tokens expire", "depth": 10, "among": None}).encode() + b"\n"


MALFORMED = [
    b"[" * 100_000 + b"\n",
    b'{"v": 1, "query": ' + b"[" * 50_000 + b"\n",
    b"{" * 100_000 + b"\n",
    b"\xff\xfe not utf-8\n",
    b'{"v": 1, "query": "\xc3\x28", "depth": 3, "among": null}\n',
    b"[1, 2, 3]\n",
    b'"just a string"\n',
    b'{"v": 1, "query": 7, "depth": 3, "among": null}\n',
    b'{"v": 1, "query": "x", "depth": true, "among": null}\n',
    b'{"v": 1, "query": "x", "depth": 3, "among": [1, 2]}\n',
    b'{"v": 1, "query": "x", "depth": 3, "among": {"a": 1}}\n',
    b'{"v": 1, "query": "x", "depth": ' + b"9" * 5000 + b', "among": null}\n',
    b'{"v": [], "query": "x", "depth": 3, "among": null}\n',
    b"\n",
    b"not json at all\n",
]


def test_every_malformed_request_gets_an_error_and_the_keeper_goes_on(ranking_keeper: KeeperProcess) -> None:
    for payload in MALFORMED:
        answer = exchange(payload)
        assert isinstance(answer, dict) and answer["error"] == "bad request" and "ranking" not in answer, payload[:40]
        assert ranking_keeper.proc.poll() is None
    huge = exchange(b'{"v": 1, "query": "' + b"a" * (80 << 20) + b'"}\n')
    assert huge is None or huge == {"error": "bad request", "reason": "too long"}
    answer = exchange(good_request())
    assert "ranking" in answer, answer
    assert [note_id for note_id, _ in answer["ranking"]][0] == "auth.md"
    ranking_keeper.stop(signal.SIGTERM)
    assert "Traceback" not in ranking_keeper.stderr()


def test_silent_and_many_clients_do_not_block_a_good_request(ranking_keeper: KeeperProcess) -> None:
    silent = []
    for _ in range(40):  # connect and never send: more than the listen backlog
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.append(client)
        client.settimeout(60)
        client.connect(socket_path())
    try:
        answers: list[Any] = []

        def ask() -> None:
            answers.append(exchange(good_request()))

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(answers) == 8
        for answer in answers:
            assert answer is not None and "ranking" in answer, answer
    finally:
        for client in silent:
            client.close()
    # A silent client, answered or dropped, costs nothing later.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as lingering:
        lingering.connect(socket_path())
        answer = exchange(good_request())
        assert "ranking" in answer
    assert ranking_keeper.proc.poll() is None


# --- item 18: the keeper's warnings never show a host path ------------------------------------------


def test_the_keepers_warnings_name_no_host_path(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "first.md", "# First\n")
    write_file(vault / "bad.md", b"\xff\xfe not utf-8 at all\n")
    started = start_keeper()
    moved = tmp_path / "moved-away"
    try:
        (vault / "sub").mkdir()
        write_file(vault / "sub/n.md", "# N\n")
        os.rename(vault, moved)  # the keeper says its vault went away
        os.mkdir(vault)
        write_file(vault / "again.md", "# Again\n")
    finally:
        started.stop(signal.SIGTERM)
    stderr = started.stderr()
    assert stderr.strip(), "the keeper warned of nothing"
    assert "moved" in stderr or "deleted" in stderr or "no longer" in stderr, stderr
    for folder in (tmp_path, tmp_path.resolve(), load_config().cache_dir):
        assert str(folder) not in stderr, stderr


def test_clients_beyond_the_limit_are_told_at_once_and_the_keeper_serves_on(ranking_keeper: KeeperProcess) -> None:
    from amem.keeper.keeper import MAX_CLIENTS

    silent = []
    try:
        for _ in range(MAX_CLIENTS):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            silent.append(client)
            client.settimeout(60)
            client.connect(socket_path())
        answers = [exchange(good_request()) for _ in range(3)]
        # Each either waited for a slot or was told at once; none went unanswered.
        assert all(answer in ({"error": "busy"},) or "ranking" in answer for answer in answers), answers
    finally:
        for client in silent:
            client.close()
    for _ in range(600):  # the silent clients' slots come free as the keeper sees them hang up
        answer = exchange(good_request())
        if answer != {"error": "busy"}:
            break
        time.sleep(0.05)
    assert "ranking" in answer, answer
    assert ranking_keeper.proc.poll() is None
