"""`amem mcp --http` as a team meets it: a real server on 127.0.0.1, the official SDK's streamable-HTTP client
with tokens, and plain HTTP requests for every refusal (SPEC §19)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx2
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

STALL = 1.5
MAX_CONNECTIONS = 12
ACCEPT = "application/json, text/event-stream"


class Server(NamedTuple):
    proc: subprocess.Popen[str]
    port: int
    vault: Path
    env: dict[str, str]
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def audit(self) -> list[dict[str, Any]]:
        path = Path(self.env["XDG_STATE_HOME"]) / "amem" / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def server_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AMEM_", "AGENTMEMORY_", "GIT_"))}
    home = root / "home"
    for sub in (".config", ".local/state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="amh", dir="/tmp")  # short: the keeper's socket path must fit
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local/state"),
        XDG_CACHE_HOME=cache,
        GIT_CONFIG_NOSYSTEM="1",
        AMEM_VAULT=str(root / "vault"),
    )
    (home / ".gitconfig").write_text("[user]\n\tname = Server Owner\n\temail = owner@example.com\n")
    return env


def amem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amem", *args], env=env, capture_output=True, text=True, timeout=60)


def start(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """`amem mcp --http` on a free port; the process and the line it prints once listening."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "amem", "mcp", "--http", "127.0.0.1:0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the server printed nothing before exiting"
    return proc, json.loads(line)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("http")
    env = server_env(root)
    (root / "vault").mkdir()
    tokens = {name: json.loads(amem(env, "token", "add", name).stdout)["token"] for name in ("alice", "bob")}
    tokens["reader"] = json.loads(amem(env, "token", "add", "reader", "--read-only").stdout)["token"]
    args = ("--commit", "--stall-timeout", str(STALL), "--max-connections", str(MAX_CONNECTIONS))
    proc, ready = start(env, *args)
    port = int(ready["url"].rsplit(":", 1)[1].split("/")[0])
    try:
        yield Server(proc, port, root / "vault", env, tokens)
    finally:
        stop(proc)
        shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)


def request(
    server: Server, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def bearer(server: Server, name: str = "alice") -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[name]}"}


def rpc(method: str, params: dict[str, Any], ident: int | None = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return json.dumps(message).encode()


def open_session(server: Server, token: str = "alice") -> str:
    """An initialised MCP session opened with `token`, by hand: its id."""
    headers = {**bearer(server, token), "Content-Type": "application/json", "Accept": ACCEPT}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    status, answer, _ = request(server, "POST", "/mcp", rpc("initialize", hello), headers)
    assert status == 200
    session = answer["mcp-session-id"]
    headers["Mcp-Session-Id"] = session
    status, _, _ = request(server, "POST", "/mcp", rpc("notifications/initialized", {}, None), headers)
    assert status == 202
    return session


async def _with_client(server: Server, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    headers = {"Authorization": f"Bearer {server.tokens[token]}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http_client,
        streamable_http_client(server.url, http_client=http_client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        results: list[Any] = [await session.list_tools()]
        for name, arguments in calls:
            results.append(await session.call_tool(name, arguments))
        return results


def client(server: Server, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """The official SDK's streamable-HTTP client, with `token`: the tool listing, then each call's result."""
    return anyio.run(_with_client, server, token, list(calls))


# --- the tools, over HTTP ----------------------------------------------------------------------------


def test_the_sdk_client_lists_the_stdio_tools_and_writes_and_searches(server: Server) -> None:
    from amem.mcp_server import declared_tools

    listing, written, found = client(
        server,
        "alice",
        ("wiki_write", {"id": "team/plan", "content": "the heliotrope milestone"}),
        ("wiki_search", {"query": "heliotrope"}),
    )
    assert [t.name for t in listing.tools] == list(declared_tools())
    assert not written.is_error and written.structured_content["created"] is True
    assert [hit["id"] for hit in found.structured_content["hits"]] == ["team/plan.md"]
    assert "heliotrope" in (server.vault / "team" / "plan.md").read_text()


def test_health_answers_without_a_token(server: Server) -> None:
    status, _, body = request(server, "GET", "/health")
    assert (status, json.loads(body)) == (200, {"status": "ok"})


# --- who may call --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer amem_not-a-token", "Bearer ", "Basic YWxpY2U6eA==", "token"],
    ids=["none", "wrong", "empty", "basic", "no-scheme"],
)
def test_without_a_valid_token_the_answer_is_401_and_nothing_runs(server: Server, authorization: str | None) -> None:
    session = open_session(server)
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "Mcp-Session-Id": session}
    if authorization is not None:
        headers["Authorization"] = authorization
    call = rpc("tools/call", {"name": "wiki_write", "arguments": {"id": "intruder", "content": "x"}})
    status, answer, _ = request(server, "POST", "/mcp", call, headers)
    assert status == 401
    assert answer["www-authenticate"].startswith("Bearer")
    assert not (server.vault / "intruder.md").exists()


def test_another_token_cannot_continue_a_session(server: Server) -> None:
    session = open_session(server, "alice")
    headers = {**bearer(server, "bob"), "Content-Type": "application/json", "Accept": ACCEPT}
    call = rpc("tools/call", {"name": "wiki_write", "arguments": {"id": "hijack", "content": "x"}})
    status, _, _ = request(server, "POST", "/mcp", call, {**headers, "Mcp-Session-Id": session})
    assert status == 404
    assert not (server.vault / "hijack.md").exists()


def test_a_read_only_token_reads_but_may_not_write_and_the_note_is_unchanged(server: Server) -> None:
    client(server, "alice", ("wiki_write", {"id": "guarded", "content": "as alice left it"}))
    before = (server.vault / "guarded.md").read_bytes()
    lines = len(server.audit())
    _, refused, read = client(
        server,
        "reader",
        ("wiki_write", {"id": "guarded", "content": "overwritten", "mode": "overwrite"}),
        ("wiki_read", {"id": "guarded"}),
    )
    assert refused.is_error and refused.structured_content["error"]["code"] == "forbidden"
    assert "read-only" in refused.structured_content["error"]["message"]
    assert not read.is_error and "as alice left it" in read.structured_content["body"]
    assert (server.vault / "guarded.md").read_bytes() == before
    assert len(server.audit()) == lines


# --- what browsers and the network may not do -------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1.evil.example", "https://localhost"]
)
def test_a_foreign_origin_is_refused(server: Server, origin: str) -> None:
    status, _, _ = request(server, "GET", "/health", headers={"Origin": origin})
    assert status == 403
    call = rpc("tools/call", {"name": "wiki_write", "arguments": {"id": "from-browser", "content": "x"}})
    headers = {**bearer(server), "Origin": origin, "Content-Type": "application/json", "Accept": ACCEPT}
    status, _, _ = request(server, "POST", "/mcp", call, headers)
    assert status == 403


def test_the_servers_own_origin_is_accepted(server: Server) -> None:
    status, _, _ = request(server, "GET", "/health", headers={"Origin": f"http://127.0.0.1:{server.port}"})
    assert status == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", ""])
def test_a_foreign_host_is_refused(server: Server, host: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("POST", "/mcp", skip_host=True)
    conn.putheader("Host", host.format(port=server.port))
    for name, value in {**bearer(server), "Content-Type": "application/json", "Accept": ACCEPT}.items():
        conn.putheader(name, value)
    body = rpc("initialize", {})
    conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    status = conn.getresponse().status
    conn.close()
    assert status in (400, 421)  # 400: h11 refuses an empty Host before amem sees it


def test_the_loopback_names_are_accepted(server: Server) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("GET", "/health", skip_host=True)
    conn.putheader("Host", f"localhost:{server.port}")
    conn.endheaders()
    assert conn.getresponse().status == 200
    conn.close()


def _raw(server: Server, head: bytes, body_chunks: Iterable[bytes] = ()) -> bytes:
    """Send a request as given, then read the answer until the server closes (b'': it closed saying nothing)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head)
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body went
        answer = b""
        try:
            while data := sock.recv(65536):
                answer += data
        except ConnectionResetError:
            pass
        return answer


def _head(server: Server, extra: str) -> bytes:
    token = server.tokens["alice"]
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nAccept: {ACCEPT}\r\n{extra}\r\n"
    ).encode()


MIB = 1024 * 1024


def test_a_body_declared_over_16_mib_is_refused_before_it_is_read(server: Server) -> None:
    answer = _raw(server, _head(server, f"Content-Length: {17 * MIB}\r\n"))
    assert answer.startswith(b"HTTP/1.1 413 ") and b'"too_large"' in answer


def test_a_chunked_body_over_16_mib_is_refused_by_counting(server: Server) -> None:
    chunk = b"a" * MIB
    chunks = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(17))
    answer = _raw(server, _head(server, "Transfer-Encoding: chunked\r\n"), chunks)
    assert answer.startswith(b"HTTP/1.1 413 ") and b'"too_large"' in answer


def test_a_body_under_16_mib_is_not_refused_for_its_size(server: Server) -> None:
    body = rpc("ping", {"_meta": {"pad": "a" * (8 * MIB)}})
    status, _, _ = request(server, "POST", "/mcp", body, {**bearer(server), "Content-Type": "application/json"})
    assert status not in (413, 401)  # the SDK's own answer to a ping outside a session


def test_a_stalled_client_is_dropped(server: Server) -> None:
    started = time.monotonic()
    assert _raw(server, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n") == b""
    assert time.monotonic() - started < STALL + 10
    started = time.monotonic()
    assert _raw(server, _head(server, "Content-Length: 100\r\n") + b'{"jsonrpc"') == b""
    assert time.monotonic() - started < STALL + 10


def test_open_connections_are_bounded(server: Server) -> None:
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.3)
        status, _, _ = request(server, "GET", "/health")
        assert status == 503
    finally:
        for sock in idle:
            sock.close()
    time.sleep(0.3)
    assert request(server, "GET", "/health")[0] == 200


# --- accountable changes --------------------------------------------------------------------------------


def test_each_change_is_audited_with_its_token_and_versions(server: Server) -> None:
    _, first, edited = client(
        server,
        "alice",
        ("wiki_write", {"id": "ledger", "content": "one entry"}),
        ("wiki_edit", {"id": "ledger", "find": "one entry", "replace": "two entries"}),
    )
    _, appended = client(server, "bob", ("wiki_write", {"id": "ledger", "content": "bob was here"}))
    entries = [e for e in server.audit() if e["id"] == "ledger.md"]
    assert [(e["token"], e["tool"]) for e in entries] == [
        ("alice", "wiki_write"),
        ("alice", "wiki_edit"),
        ("bob", "wiki_write"),
    ]
    versions = [r.structured_content["version"] for r in (first, edited, appended)]
    assert [(e["versionBefore"], e["versionAfter"]) for e in entries] == [
        (None, versions[0]),
        (versions[0], versions[1]),
        (versions[1], versions[2]),
    ]
    assert all(e["vault"] == str(server.vault) and e["time"] for e in entries)


def test_a_deletion_is_audited_with_the_removed_version(server: Server) -> None:
    _, written, removed = client(
        server, "alice", ("wiki_write", {"id": "doomed", "content": "x"}), ("wiki_delete", {"id": "doomed"})
    )
    assert not removed.is_error
    entry = [e for e in server.audit() if e["id"] == "doomed.md"][-1]
    version = written.structured_content["version"]
    assert (entry["tool"], entry["versionBefore"], entry["versionAfter"]) == ("wiki_delete", version, None)


def test_the_commit_of_a_change_is_authored_by_the_token(server: Server) -> None:
    _, written = client(server, "bob", ("wiki_write", {"id": "signed", "content": "by bob"}))
    commit = written.structured_content["commit"]
    shown = subprocess.run(
        ["git", "show", "-s", "--format=%an <%ae>|%cn", commit],
        cwd=server.vault,
        env=server.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert shown == "bob <owner@example.com>|Server Owner"
    assert [e["commit"] for e in server.audit() if e["id"] == "signed.md"] == [commit]


# --- when it refuses to start ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bind", "extra"),
    [("0.0.0.0:0", ()), ("0.0.0.0:0", ("--no-auth",)), ("127.0.0.1:0", ())],
    ids=["beyond-loopback", "no-auth-beyond-loopback", "loopback-not-told"],
)
def test_without_tokens_it_refuses_to_start(tmp_path: Path, bind: str, extra: tuple[str, ...]) -> None:
    env = server_env(tmp_path)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "amem", "mcp", "--http", bind, *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
    assert done.returncode == 2
    assert done.stdout == ""
    assert json.loads(done.stderr)["error"]["code"] == "usage"


def test_no_auth_on_loopback_serves_without_a_token_and_still_checks_origin(tmp_path: Path) -> None:
    env = server_env(tmp_path)
    proc, ready = start(env, "--no-auth")
    try:
        port = int(ready["url"].rsplit(":", 1)[1].split("/")[0])
        no_token = Server(proc, port, tmp_path / "vault", env, {})
        assert ready["auth"] == "none"
        assert request(no_token, "GET", "/health", headers={"Origin": "http://evil.example"})[0] == 403
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        assert request(no_token, "POST", "/mcp", rpc("initialize", hello), headers)[0] == 200
    finally:
        stop(proc)
        shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)


def test_a_token_revoked_while_the_server_runs_is_refused_at_its_next_request(server: Server) -> None:
    secret = json.loads(amem(server.env, "token", "add", "temporary").stdout)["token"]
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json", "Accept": ACCEPT}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    assert request(server, "POST", "/mcp", rpc("initialize", hello), headers)[0] == 200
    assert amem(server.env, "token", "revoke", "temporary").returncode == 0
    assert request(server, "POST", "/mcp", rpc("initialize", hello), headers)[0] == 401


@pytest.mark.parametrize("cut", ["mid-body", "after-body"])
def test_a_client_that_disconnects_mid_write_leaves_the_note_whole(server: Server, cut: str) -> None:
    client(server, "alice", ("wiki_write", {"id": "whole", "content": "before", "mode": "overwrite"}))
    before = (server.vault / "whole.md").read_text()
    session = open_session(server)
    content = "new line of the replacement\n" * 60_000
    call = rpc(
        "tools/call", {"name": "wiki_write", "arguments": {"id": "whole", "content": content, "mode": "overwrite"}}
    )
    head = _head(server, f"Mcp-Session-Id: {session}\r\nContent-Length: {len(call)}\r\n")
    sent = call[: len(call) // 2] if cut == "mid-body" else call
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head + sent)
    deadline = time.monotonic() + (1 if cut == "mid-body" else 20)
    while time.monotonic() < deadline and (server.vault / "whole.md").read_text() == before:
        time.sleep(0.1)
    text = (server.vault / "whole.md").read_text()
    if cut == "mid-body":
        assert text == before
    else:
        assert text.count("new line of the replacement") == 60_000
    assert request(server, "GET", "/health")[0] == 200
