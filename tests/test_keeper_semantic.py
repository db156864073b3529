"""Semantic ranking by the index keeper, with real processes: a search answered through a live keeper's
socket equals the search that loads the model itself and imports no numpy; a keeper killed, a socket with
no listener, a listener that never answers, or a cache path too long for a socket: the search loads the
model itself, with no error and the same answer."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amem.config import load_config
from amem.index.index import VaultIndex
from amem.keeperproto.client import INFO_FILE, LOCK_FILE, SOCKET_FILE
from amem.semantic import semantic
from tests.conftest import write_file
from tests.keeperproc import KeeperProcess, start_keeper

pytestmark = pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")

NOTES = {
    "auth.md": "---\ntitle: Token lifetime\ntags: [security]\n---\nAccess tokens expire after fifteen minutes.\n",
    "ops/deploy.md": "# Deploy\n\nThe staging server is rebuilt every night from the main branch.\n",
    "ops/keys.md": "# Keys\n\nRotate the signing keys when a credential may have leaked.\n",
    "coffee.md": "# Coffee\n\nThe espresso machine on the third floor needs descaling each month.\n",
    "notes/login.md": "---\ntags: [security]\n---\n# Login\n\nSessions stay valid for a day, then ask again.\n",
}
QUERIES = (
    ("how long do credentials stay valid",),
    ("server rebuilt nightly", "--folder", "ops"),
    ("when does access end", "--tag", "security"),
)

#: Runs amem, then prints (on stderr's last line) whether numpy was imported by this process.
_PROBE = (
    "import sys\n"
    "import amem.cli\n"
    "code = amem.cli.run(sys.argv[1:])\n"
    "print(code, 'numpy' in sys.modules, file=sys.stderr)\n"
)


@pytest.fixture
def semantic_vault(vault: Path, isolated_env: Path, short_cache: Path) -> Path:
    for name, text in NOTES.items():
        write_file(vault / name, text)
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: true\n")
    return vault


def search(vault: Path, *args: str) -> tuple[dict[str, Any], bool, str]:
    """`amem search ARGS` in a fresh interpreter: its JSON, whether it imported numpy, and its warnings."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "search", *args],
        env={**os.environ, "AMEM_VAULT": str(vault)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    *warnings, last = done.stderr.splitlines()
    code, numpy = last.split()
    assert code == "0", done.stderr
    return json.loads(done.stdout), numpy == "True", "\n".join(warnings)


def answers(vault: Path) -> list[dict[str, Any]]:
    """Every query's answer from a process that ranks itself (it imports numpy to do so)."""
    out = []
    for query in QUERIES:
        result, numpy, warnings = search(vault, *query)
        assert numpy and warnings == "" and result["semantic"] == "ok"
        out.append(result)
    return out


def maps_numpy(pid: int) -> bool:
    return "numpy" in Path(f"/proc/{pid}/maps").read_text()


@pytest.fixture
def keeper(semantic_vault: Path, keeper: KeeperProcess) -> KeeperProcess:
    """The shared keeper, started once the semantic vault holds its notes."""
    return keeper


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_live_keeper_ranks_and_the_answer_is_the_same_without_numpy(
    semantic_vault: Path, keeper: KeeperProcess
) -> None:
    cache = load_config().cache_dir
    assert json.loads((cache / INFO_FILE).read_text())["socket"] == SOCKET_FILE
    assert (cache / SOCKET_FILE).stat().st_mode & 0o777 == 0o600
    assert not maps_numpy(keeper.proc.pid)  # idle, the keeper has not loaded the model
    load_the_model(cache)
    assert maps_numpy(keeper.proc.pid)  # asked to rank, it loaded the model
    through_keeper = []
    for query in QUERIES:
        result, numpy, warnings = search(semantic_vault, *query)
        assert not numpy and warnings == ""
        through_keeper.append(result)
    assert "auth.md" in [hit["id"] for hit in through_keeper[0]["hits"]]  # found only by meaning
    assert {hit["id"] for hit in through_keeper[1]["hits"]} <= {"ops/deploy.md", "ops/keys.md"}
    keeper.stop()
    assert not (cache / SOCKET_FILE).exists()  # a stopped keeper leaves no socket behind
    assert answers(semantic_vault) == through_keeper


def test_the_keeper_ranks_a_note_changed_while_it_runs(semantic_vault: Path, keeper: KeeperProcess) -> None:
    query = "how long do credentials stay valid"
    load_the_model(load_config().cache_dir)
    write_file(semantic_vault / "coffee.md", "# Credentials\n\nCredentials stay valid for one hour only.\n")
    result, numpy, _ = search(semantic_vault, query)
    assert not numpy
    keeper.stop()
    alone, numpy, _ = search(semantic_vault, query)
    assert numpy and alone == result
    assert "coffee.md" in [hit["id"] for hit in result["hits"]]


def test_a_killed_keeper_leaves_its_socket_and_the_search_ranks_itself(
    semantic_vault: Path, keeper: KeeperProcess
) -> None:
    before = [search(semantic_vault, *query)[0] for query in QUERIES]
    keeper.stop(signal.SIGKILL)
    assert (load_config().cache_dir / SOCKET_FILE).exists()
    assert answers(semantic_vault) == before


def hold_keeper_files(listen: bool) -> tuple[int, socket.socket]:
    """The files of a keeper that holds the lock and names a socket, but whose socket either has no
    listener or listens and never answers (wedged)."""
    config = load_config()
    cache = config.cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    index = VaultIndex(config)
    described = {"pid": os.getpid(), "settings": index._settings(), "socket": SOCKET_FILE}
    index.close()
    (cache / INFO_FILE).write_text(json.dumps(described))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(cache / SOCKET_FILE))
    if listen:
        listener.listen(1)
    else:
        listener.close()  # the file stays, nobody listens
    return fd, listener


@pytest.mark.parametrize("listen", [False, True], ids=["stale-socket", "never-answers"])
def test_a_socket_that_does_not_answer_means_the_search_ranks_itself(semantic_vault: Path, listen: bool) -> None:
    expected = answers(semantic_vault)[0]
    fd, listener = hold_keeper_files(listen)
    try:
        result, numpy, warnings = search(semantic_vault, *QUERIES[0])
    finally:
        listener.close()
        os.close(fd)
    assert numpy and warnings == ""
    assert result == expected


def test_a_cache_path_too_long_for_a_socket_means_no_socket(
    semantic_vault: Path, monkeypatch: pytest.MonkeyPatch, short_cache: Path
) -> None:
    deep = short_cache / ("d" * 90)
    monkeypatch.setenv("XDG_CACHE_HOME", str(deep))
    started = start_keeper()
    try:
        cache = load_config().cache_dir
        assert "socket" not in json.loads((cache / INFO_FILE).read_text())
        result, numpy, warnings = search(semantic_vault, *QUERIES[0])
    finally:
        started.stop(signal.SIGKILL)
    assert numpy and warnings == "" and result["semantic"] == "ok"
    assert "auth.md" in [hit["id"] for hit in result["hits"]]


def ask(path: Path, line: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(str(path))
        client.sendall(line)
        data = b""
        while not data.endswith(b"\n"):
            piece = client.recv(65536)
            assert piece, "the keeper closed the connection without an answer"
            data += piece
    answer: dict[str, Any] = json.loads(data)
    return answer


def load_the_model(cache: Path) -> None:
    """Ask the keeper for a ranking, waiting as long as it takes: its first ranking loads the model, which
    on a loaded machine can take longer than a search waits for the keeper (RANK_TIMEOUT, 2 s) before it
    ranks by itself. Searches after this one are answered from the loaded model."""
    ranked = ask(cache / SOCKET_FILE, json.dumps({"v": 1, "query": "warm", "depth": 3, "among": None}).encode() + b"\n")
    assert "ranking" in ranked, ranked


def test_a_bad_request_gets_an_error_and_the_keeper_goes_on_ranking(
    semantic_vault: Path, keeper: KeeperProcess
) -> None:
    path = load_config().cache_dir / SOCKET_FILE
    good = {"v": 1, "query": "credentials", "depth": 3, "among": None}
    for bad in (
        b"not json\n",
        b"[1, 2]\n",
        json.dumps({**good, "v": 99}).encode() + b"\n",
        json.dumps({**good, "depth": 0}).encode() + b"\n",
        json.dumps({**good, "among": [1]}).encode() + b"\n",
    ):
        assert ask(path, bad)["error"] == "bad request"
    ranked = ask(path, json.dumps({**good, "among": ["coffee.md", "auth.md"]}).encode() + b"\n")["ranking"]
    assert sorted(note_id for note_id, _ in ranked) == ["auth.md", "coffee.md"]
    result, numpy, warnings = search(semantic_vault, *QUERIES[0])
    assert not numpy and warnings == "" and result["semantic"] == "ok"
    assert keeper.proc.poll() is None
