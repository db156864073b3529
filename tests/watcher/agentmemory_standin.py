"""A stand-in for the agentmemory server (AGENTMEMORY_API.md), on 127.0.0.1 with an ephemeral port.

The real server needs a native engine it downloads on first start, so tests and the benchmark use this one.
It keeps the real server's rules: 401 without the Bearer secret, 400 for missing fields, 201 with an
observation id, deduplication within 5 minutes on (session, tool_name, tool_input), the per-session cap
answered with 201 {"success": false}, sessions created by their first observation, and the read-back
endpoints. `stop()` closes the port, so a client sees "connection refused" as for a server that is down.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

REQUIRED = ("hookType", "sessionId", "project", "cwd", "timestamp")
DEDUP_SECONDS = 300.0


class StandInServer:
    def __init__(self, *, secret: str | None = None, session_cap: int = 500, port: int = 0) -> None:
        self.secret = secret
        self.session_cap = session_cap
        self.port = port
        self.lock = threading.Lock()
        #: every stored observation, as the server keeps it (payload plus id)
        self.observations: list[dict[str, Any]] = []
        #: every POST /observe: (status, answer, headers, payload or None)
        self.requests: list[dict[str, Any]] = []
        self.sessions: dict[str, dict[str, Any]] = {}
        #: statuses to answer with before the normal rules apply (a 500 burst, say)
        self.forced: list[tuple[int, dict[str, Any]]] = []
        #: called with each POSTed payload before the answer is sent (to look at the client meanwhile)
        self.on_observe: Callable[[Any], None] | None = None
        self._recent: dict[tuple[str, str, str], float] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life cycle -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StandInServer:
        stand_in = self

        class Handler(_Handler):
            server_state = stand_in

        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._server is not None

    # --- what tests read ------------------------------------------------------------------------------

    def stored(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.observations)

    def posts(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests)

    # --- the rules ------------------------------------------------------------------------------------

    def observe(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        if self.secret is not None and headers.get("authorization") != f"Bearer {self.secret}":
            return 401, {"error": "unauthorized"}
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or not all(
            isinstance(payload.get(k), str) and payload[k].strip() for k in REQUIRED
        ):
            return 400, {"error": "hookType, sessionId, project, cwd, and timestamp are required strings"}
        if self.forced:
            return self.forced.pop(0)
        data = payload.get("data")
        data = data if isinstance(data, dict) else {}
        session_id = payload["sessionId"]
        tool = str(data.get("tool_name") or payload["hookType"])
        if "tool_input" in data:
            fingerprint = json.dumps(data["tool_input"], sort_keys=True)
        else:
            fingerprint = json.dumps(data, sort_keys=True)[:500]
        key = (session_id, tool, fingerprint)
        now = time.monotonic()
        if now - self._recent.get(key, -1e9) < DEDUP_SECONDS:
            return 201, {"deduplicated": True, "sessionId": session_id}
        session = self.sessions.get(session_id)
        if session is None:
            session = {
                "id": session_id,
                "project": payload["project"],
                "cwd": payload["cwd"],
                "observationCount": 0,
                "startedAt": payload["timestamp"],
            }
            self.sessions[session_id] = session
        if session["observationCount"] >= self.session_cap:
            return 201, {"success": False, "error": f"Session observation limit reached ({self.session_cap})"}
        self._recent[key] = now
        session["observationCount"] += 1
        observation_id = f"obs_{secrets.token_hex(8)}"
        self.observations.append({"id": observation_id, **payload})
        return 201, {"observationId": observation_id}


class _Handler(BaseHTTPRequestHandler):
    server_state: StandInServer
    # HTTP/1.0: one request per connection, so a stopped server refuses every later request at once.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        secret = self.server_state.secret
        return secret is None or self.headers.get("Authorization") == f"Bearer {secret}"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        state = self.server_state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        path = urlparse(self.path).path
        if path != "/agentmemory/observe":
            self._answer(404, {"error": "not found"})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        if state.on_observe is not None:
            with contextlib.suppress(ValueError):
                state.on_observe(json.loads(body))
        with state.lock:
            status, answer = state.observe(headers, body)
            try:
                payload = json.loads(body)
            except ValueError:
                payload = None
            state.requests.append({"status": status, "answer": answer, "headers": headers, "payload": payload})
        self._answer(status, answer)

    def do_GET(self) -> None:  # noqa: N802
        state = self.server_state
        url = urlparse(self.path)
        if url.path == "/agentmemory/livez":
            self._answer(200, {"status": "ok", "service": "agentmemory"})
            return
        if not self._authorized():
            self._answer(401, {"error": "unauthorized"})
            return
        if url.path == "/agentmemory/sessions":
            with state.lock:
                self._answer(200, {"sessions": [dict(s) for s in state.sessions.values()]})
            return
        if url.path == "/agentmemory/observations":
            session = parse_qs(url.query).get("sessionId", [""])[0]
            if not session:
                self._answer(400, {"error": "sessionId is required"})
                return
            with state.lock:
                found = [o for o in state.observations if o["sessionId"] == session]
            self._answer(200, {"observations": found})
            return
        self._answer(404, {"error": "not found"})
