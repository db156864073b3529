"""The server sink against the stand-in agentmemory server: auth, rejections, the durable spool, outages,
restarts, the session cap — and a property test that no sink ever receives a secret."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import load_config
from amem.fswatch.rules import IgnoreRules, WatchedRoot
from amem.paths import state_home
from amem.watcher.observation import SessionIds, observe_path
from amem.watcher.sinks import ServerSink, StdoutSink, VaultSink
from amem.watcher.spool import ObservationSpool, server_key

from ..conftest import write_file
from .agentmemory_standin import StandInServer
from .conftest import RunningWatcher, settle, wait_until

Make = Callable[..., RunningWatcher]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def down() -> Iterator[StandInServer]:
    """A server that is down (nothing listens on its port) until the test starts it."""
    server = StandInServer(port=free_port())
    yield server
    server.stop()


def spool_root(url: str) -> Path:
    return state_home() / "amem" / "spool" / server_key(url)


def spooled(url: str) -> list[Path]:
    root = spool_root(url)
    if not root.exists():
        return []
    return sorted(p for p in root.glob("*/*.json") if p.parent.name != "failed")


def failed(url: str) -> list[Path]:
    return sorted((spool_root(url) / "failed").glob("*.json"))


def test_observations_reach_the_server_with_the_bearer_header(make_watcher: Make, tree: Path) -> None:
    server = StandInServer(secret="shhh").start()
    try:
        w = make_watcher(tree, ("server",), url=server.url + "/", secret="shhh")
        write_file(tree / "notes.md", "hello world\n")
        [obs] = w.wait_for("notes.md")
        [stored] = wait_until(server.stored, message="the stored observation")
        assert stored["id"].startswith("obs_")
        assert server.accepted() == [obs]
        assert (stored["sessionId"], stored["files"], stored["type"]) == (obs["sessionId"], ["notes.md"], "file_write")
        [post] = server.posts()
        assert post["status"] == 201 and post["headers"]["authorization"] == "Bearer shhh"
        headers = {"Authorization": "Bearer shhh"}
        sessions = requests.get(f"{server.url}/agentmemory/sessions", headers=headers, timeout=5).json()
        assert sessions["sessions"][0]["id"] == obs["sessionId"]
        assert sessions["sessions"][0]["project"] == "project" and sessions["sessions"][0]["cwd"] == str(tree)
        back = requests.get(
            f"{server.url}/agentmemory/observations", params={"sessionId": obs["sessionId"]}, headers=headers, timeout=5
        ).json()
        assert back["observations"] == [stored]
        wait_until(lambda: not spooled(server.url), message="the spool to empty")
    finally:
        server.stop()


def test_a_401_is_reported_once_and_not_retried(make_watcher: Make, tree: Path) -> None:
    server = StandInServer(secret="right").start()
    try:
        w = make_watcher(tree, ("server",), url=server.url, secret="wrong")
        for i in range(3):
            write_file(tree / f"f{i}.md", str(i))
        wait_until(lambda: len(failed(server.url)) == 3, message="3 observations in failed/")
        settle(lambda: len(server.posts()) == 3, quiet=0.5)  # each was tried once, none retried
        assert [p["status"] for p in server.posts()] == [401, 401, 401]
        rejections = [line for line in w.warnings if "rejected" in line]
        assert len(rejections) == 1 and "HTTP 401" in rejections[0] and "AGENTMEMORY_SECRET" in rejections[0]
        assert spooled(server.url) == []
        summary = w.stop()
        assert summary.sinks["server"] == {"delivered": 0, "spooled": 0, "failed": 3}
        # What failed is kept whole, ready to be moved back and resent.
        assert json.loads(failed(server.url)[0].read_text())["hookType"] == "post_tool_use"
    finally:
        server.stop()


def test_a_400_is_reported_and_not_retried(make_watcher: Make, tree: Path, standin: StandInServer) -> None:
    standin.forced.append((400, {"error": "hookType, sessionId, project, cwd, and timestamp are required strings"}))
    w = make_watcher(tree, ("server",), url=standin.url)
    write_file(tree / "a.md", "a")
    wait_until(lambda: len(failed(standin.url)) == 1, message="the rejected observation in failed/")
    write_file(tree / "b.md", "b")
    wait_until(lambda: len(standin.stored()) == 1, message="the next observation to be stored")
    assert [p["status"] for p in standin.posts()] == [400, 201]
    assert any("HTTP 400" in line and "required strings" in line for line in w.warnings)


def test_server_down_while_50_files_change_then_back(make_watcher: Make, tree: Path, down: StandInServer) -> None:
    w = make_watcher(tree, ("server",), url=down.url)
    for i in range(50):
        write_file(tree / "batch" / f"file{i:02d}.md", f"content number {i}\n")
    wait_until(lambda: w.watcher.observed == 50, message="50 observations")
    wait_until(lambda: len(spooled(down.url)) == 50, message="50 spooled observations")
    assert down.stored() == []
    outage = [line for line in w.warnings if "cannot deliver" in line]
    assert len(outage) == 1, "one log line per outage, not one per observation"
    assert "connection refused" in outage[0]

    down.start()
    wait_until(lambda: len(down.stored()) == 50, message="all 50 delivered")
    wait_until(lambda: not spooled(down.url), message="the spool to empty")
    contents = [o["data"]["content"] for o in down.accepted()]
    assert sorted(contents) == sorted(
        f"batch/file{i:02d}.md ({len(f'content number {i}') + 1} bytes)\n\ncontent number {i}\n" for i in range(50)
    )
    assert any("again" in line for line in w.logs)
    summary = w.stop()
    assert summary.sinks["server"]["delivered"] == 50 and summary.sinks["server"]["spooled"] == 0


def test_the_spool_is_written_privately_before_sending(make_watcher: Make, tree: Path, standin: StandInServer) -> None:
    seen: list[bool] = []

    def check(payload: Any) -> None:
        # While the server holds the request, the observation must already be on disk.
        on_disk = [json.loads(p.read_text()) for p in spooled(standin.url)]
        seen.append(payload in on_disk)

    standin.on_observe = check
    make_watcher(tree, ("server",), url=standin.url)
    write_file(tree / "a.md", "a")
    wait_until(standin.stored, message="delivery")
    assert seen == [True]
    standin.on_observe = None

    standin.stop()
    write_file(tree / "b.md", "b")
    [path] = wait_until(lambda: spooled(standin.url), message="the spooled observation")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(spool_root(standin.url).stat().st_mode) == 0o700


def test_a_restarted_watcher_resends_what_is_left(make_watcher: Make, tree: Path, down: StandInServer) -> None:
    first = make_watcher(tree, ("server",), url=down.url)
    for i in range(5):
        write_file(tree / f"r{i}.md", f"r{i}")
    wait_until(lambda: len(spooled(down.url)) == 5, message="5 spooled")
    summary = first.stop()
    assert summary.sinks["server"]["spooled"] == 5
    down.start()
    second = make_watcher(tree, ("server",), url=down.url)
    wait_until(lambda: len(down.stored()) == 5, message="the leftovers delivered")
    assert any("resending 5 spooled" in line for line in second.logs)
    wait_until(lambda: not spooled(down.url), message="the spool to empty")
    # A watcher for another server leaves these alone.
    assert sorted(r["files"][0] for r in down.stored()) == [f"r{i}.md" for i in range(5)]


def test_a_spool_held_by_a_live_watcher_is_not_taken(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"
    alive = ObservationSpool(tmp_path, url)
    alive.open()
    alive.put({"n": 1})
    other = ObservationSpool(tmp_path, url)
    assert other.open() == []
    alive.close()
    third = ObservationSpool(tmp_path, url)
    assert [json.loads(p.read_text()) for p in third.open()] == [{"n": 1}]
    other.close()
    third.close()


def test_the_session_cap_moves_to_a_new_session(make_watcher: Make, tree: Path) -> None:
    server = StandInServer(session_cap=3).start()
    try:
        w = make_watcher(tree, ("server",), url=server.url)
        for i in range(5):
            write_file(tree / f"s{i}.md", f"s{i}")
            w.wait_for(f"s{i}.md")

            def all_stored(n: int = i) -> bool:
                return len(server.stored()) == n + 1

            wait_until(all_stored, message=f"observation {i} stored")
        sessions: dict[str, list[str]] = {}
        for stored in server.stored():
            sessions.setdefault(stored["sessionId"], []).append(stored["files"][0])
        assert [len(files) for files in sessions.values()] == [3, 2]
        first, second = list(sessions)
        assert any(
            f"session {first} reached the server's observation limit; continuing as {second}" in line for line in w.logs
        )
        assert w.watcher.sessions.current == second
        assert not any("cannot deliver" in line for line in w.warnings)
    finally:
        server.stop()


def test_success_false_and_server_errors_are_retried(make_watcher: Make, tree: Path, standin: StandInServer) -> None:
    standin.forced.extend([(201, {"success": False, "error": "index busy"}), (503, {"error": "starting"})])
    w = make_watcher(tree, ("server",), url=standin.url)
    write_file(tree / "a.md", "a")
    wait_until(standin.stored, message="delivery after two failures")
    assert [p["status"] for p in standin.posts()] == [201, 503, 201]
    assert len([line for line in w.warnings if "cannot deliver" in line]) == 1
    wait_until(lambda: not spooled(standin.url), message="the spool to empty")


def test_retries_back_off_exponentially_up_to_the_cap(make_watcher: Make, tree: Path, standin: StandInServer) -> None:
    import time

    arrivals: list[float] = []
    standin.on_observe = lambda payload: arrivals.append(time.monotonic())
    standin.forced.extend([(503, {"error": "busy"})] * 6)
    make_watcher(tree, ("server",), url=standin.url, retry_initial=0.05, retry_max=0.2)
    write_file(tree / "a.md", "a")
    wait_until(standin.stored, message="delivery after six failures")
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    assert len(gaps) == 6
    for gap, backoff in zip(gaps, [0.05, 0.1, 0.2, 0.2, 0.2, 0.2], strict=True):
        assert backoff * 0.9 <= gap < backoff + 2.0  # never sooner than the backoff; capped, not doubling on


def test_a_deduplicated_answer_counts_as_delivered(make_watcher: Make, tree: Path, standin: StandInServer) -> None:
    w = make_watcher(tree, ("server",), url=standin.url)
    write_file(tree / "same.md", "new")
    wait_until(lambda: len(standin.posts()) == 1, message="the new file delivered")
    write_file(tree / "same.md", "same")
    wait_until(lambda: len(standin.posts()) == 2, message="the edit delivered")
    write_file(tree / "same.md", "same")  # the same bytes again: the same tool_name and tool_input
    wait_until(lambda: len(standin.posts()) == 3, message="the resave delivered")
    assert standin.posts()[2]["answer"]["deduplicated"] is True
    wait_until(lambda: not spooled(standin.url), message="the spool to empty")
    assert w.stop().sinks["server"]["delivered"] == 3


# --- no secret reaches any sink ---------------------------------------------------------------------

SECRET = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=16, max_size=32)
PLACEMENT = st.sampled_from(
    ["env", "json", "yaml-list", "bearer", "pem", "pem-inline", "jwt", "url"]
    + ["signing-key", "cookie", "curl", "netrc", "xml", "stripe", "pem-cut"]
)


def file_with_secret(secret: str, placement: str) -> tuple[str, str]:
    jwt = f"eyJhbGciOiJSUzI1NiJ9.eyJ{secret}{'x' * 60}.{secret}"
    return {
        "env": (".env", f"NAME=demo\nSTRIPE_SECRET_KEY={secret}\nPUBLIC_FLAG=enabled\n"),
        "json": ("config.json", f'{{\n  "name": "demo",\n  "apiKey": "{secret}"\n}}\n'),
        "yaml-list": ("users.yaml", f"users:\n  - name: bob\n    password: {secret}\n"),
        "bearer": ("notes.md", f"call it with\n\n    curl -H 'Authorization: Bearer {secret}' https://x\n"),
        "pem": ("key.txt", f"-----BEGIN RSA PRIVATE KEY-----\n{secret}\n{secret}\n-----END RSA PRIVATE KEY-----\n"),
        "pem-inline": (
            "sa.json",
            f'{{"private_key": "-----BEGIN PRIVATE KEY-----\\n{secret}\\n'
            f'-----END PRIVATE KEY-----\\n", "client_email": "a@b"}}\n',
        ),
        "jwt": ("session.txt", f"cookie session={jwt}; Path=/\n"),
        "url": ("db.toml", f'url = "postgres://app:{secret}@db:5432/prod"\n'),
        "signing-key": (".env.local", f"SIGNING_KEY={secret}\nPRIMARY_KEY=id\n"),
        "cookie": ("request.txt", f"GET / HTTP/1.1\nCookie: sid={secret}; theme=dark\n"),
        "curl": ("deploy.sh", f"curl -u ci:{secret} https://ci.example.com\n"),
        "netrc": ("netrc.txt", f"machine example.com login bot password {secret}\n"),
        "xml": ("settings.html", f"<settings><password>{secret}</password></settings>\n"),
        "stripe": ("pay.ts", f"const stripe = new Stripe('sk_live_{secret}');\n"),
        # A key block that the 4096-byte preview cuts: its END marker and the rest stay out.
        "pem-cut": ("id.txt", "x" * 4000 + f"\n-----BEGIN OPENSSH PRIVATE KEY-----\n{secret}\n" * 3),
    }[placement]


def test_no_sink_ever_receives_a_secret(tree: Path, standin: StandInServer, tmp_path: Path) -> None:
    config = load_config()
    sessions = SessionIds()
    stdout = io.StringIO()
    warnings: list[str] = []
    spool = ObservationSpool(tmp_path / "spool", standin.url)
    sinks: list[Any] = [
        StdoutSink(stdout),
        VaultSink(config, warnings.append),
        ServerSink(standin.url, None, spool, sessions, log=warnings.append, warn=warnings.append),
    ]
    for sink in sinks:
        sink.start()
    root = WatchedRoot(path=str(tree), project="p", rules=IgnoreRules(str(tree)))
    used: list[str] = []

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(secret=SECRET, placement=PLACEMENT)
    def deliver(secret: str, placement: str) -> None:
        name, text = file_with_secret(secret, placement)
        path = write_file(tree / f"{len(used)}" / name, text)
        used.append(secret)
        observation = observe_path(root, str(path), sessions.current, allow_binary=False)
        assert observation is not None
        assert secret not in json.dumps(observation)
        for sink in sinks:
            sink.deliver(observation)

    deliver()
    assert len(used) >= 20, "hypothesis ran the examples"
    wait_until(lambda: len(standin.posts()) == len(used), message="every observation posted")
    for sink in sinks:
        sink.close(drain_timeout=5.0)
    assert not warnings or all("resending" not in w for w in warnings)
    outputs = [stdout.getvalue()]
    outputs += [p.read_text() for p in Path(config.vault_root).rglob("*.md")]
    outputs += [json.dumps(p["payload"]) for p in standin.posts()]
    outputs += [p.read_text() for p in (tmp_path / "spool").rglob("*") if p.is_file()]
    assert len(outputs) >= 3 and os.path.isdir(config.vault_root)
    for secret in used:
        for output in outputs:
            assert secret not in output
