"""A stand-in for the agentmemory server (AGENTMEMORY_API.md), on 127.0.0.1 with an ephemeral port.

The real server needs a native engine it downloads on first start, so tests and the benchmark use this one.
It keeps the real server's rules, so that what a test reads back is what the server would store and find:

- 401 without the Bearer secret, 400 for missing or empty required fields, which are stored trimmed;
- deduplication for 5 minutes on sha256(sessionId ":" (tool_name or hookType) ":" the first 500 characters
  of JSON.stringify(tool_input)), keys in the order sent, a string tool_input taken as it is;
- the per-session cap (MAX_OBS_PER_SESSION, 500 by default, 0 or less for none), checked after dedup and
  answered with 201 {"success": false};
- its own secret stripping of `data` ([REDACTED_SECRET]) before anything is read from it;
- the zero-LLM synthetic compression: what is stored, listed and searched is the compressed record (type
  inferred from the words of tool_name, title/subtitle/narrative cut at 80/120/400 characters with an
  ellipsis, files from tool_input), not the posted payload;
- a search over the record's title, subtitle, narrative, facts, concepts, files and type, with the server's
  tokens (letters, digits and `/ . \\ - _`; 2+ characters) and its prefix matching.

`stop()` closes the port, so a client sees "connection refused" as for a server that is down.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

REQUIRED = ("hookType", "sessionId", "project", "cwd", "timestamp")
DEDUP_SECONDS = 300.0
DEDUP_INPUT_CHARS = 500
TITLE_CHARS = 80
SUBTITLE_CHARS = 120
NARRATIVE_CHARS = 400
FILE_PATH_LIMIT = 512
DEFAULT_SESSION_CAP = 500
TOOL_HOOKS = frozenset({"pre_tool_use", "post_tool_use", "post_tool_failure"})
REDACTED_SECRET = "[REDACTED_SECRET]"

#: Checked in this order; the first group with a word in the tool name gives the type.
TYPE_WORDS = (
    ("web_fetch", ("fetch", "http", "web")),
    ("search", ("grep", "search", "glob", "find")),
    ("command_run", ("bash", "shell", "exec", "run")),
    ("file_edit", ("edit", "update", "patch", "replace")),
    ("file_write", ("write", "create")),
    ("file_read", ("read", "view")),
    ("subagent", ("task", "agent")),
)
_WHOLE_WORD = {word: re.compile(rf"(^|_){word}(_|$)") for _, words in TYPE_WORDS for word in words}
_SEARCH_TOOL = re.compile(r"grep|glob|search|find|^ls$|list", re.I)

# The server's own secret stripping, as its rules read (applied to the JSON text of `data`).
_SERVER_SECRETS = [
    re.compile(
        r"(?:api[_-]?key|secret|token|password|credential|auth)[\s]*[=:]\s*[\"']?[A-Za-z0-9_\-/.+]{20,}[\"']?", re.I
    ),
    re.compile(r"Bearer\s+[A-Za-z0-9._\-+/=]{20,}", re.I),
    re.compile(r"(?:sk|pk|rk|ak)-[A-Za-z0-9][A-Za-z0-9\-_]{19,}"),
    re.compile(r"gh[pus]_[A-Za-z0-9]{36,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{22,}"),
    re.compile(r"xoxb-[A-Za-z0-9\-]+"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"AIza[A-Za-z0-9\-_]{35}"),
    re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    re.compile(r"npm_[A-Za-z0-9]{36}"),
    re.compile(r"glpat-[A-Za-z0-9\-_]{20,}"),
]
_SERVER_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)"
)
_SERVER_URL_CREDENTIALS = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/?#@:\"'<>]*:[^\s/?#@\"'<>]+@", re.I)
#: What the server's tokenizer keeps: letters, digits, whitespace, `/`, `.` and the range `\\`…`_`.
_TOKEN_DROP = re.compile(r"[^\w\s/.\\\]^_]")


# --- the server's rules as functions (tests use them to say what the server would make of a payload) ---


def js_stringify(value: Any) -> str:
    """JSON.stringify: no spaces, keys in the order given, non-ASCII kept as it is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def js_slice(text: str, count: int) -> str:
    """text.slice(0, count), counted in UTF-16 code units as JavaScript counts them."""
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * count:
        return text
    return units[: 2 * count].decode("utf-16-le", "surrogatepass")


def js_length(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def truncate(text: str, limit: int) -> str:
    """The server's cut: longer text keeps limit-1 characters and gains an ellipsis."""
    return js_slice(text, limit - 1) + "\u2026" if js_length(text) > limit else text


def dedup_key(session_id: str, data: dict[str, Any], hook_type: str) -> str:
    tool = data.get("tool_name") or hook_type
    tool_input = data.get("tool_input")
    text = tool_input if isinstance(tool_input, str) else js_stringify("" if tool_input is None else tool_input)
    material = f"{session_id}:{tool}:{js_slice(text, DEDUP_INPUT_CHARS)}"
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def infer_type(tool_name: str | None, hook_type: str) -> str:
    """The type the server gives a record, from the words of its tool name (camelCase, kebab-case and
    spaces split into words; a word counts whole, or at the start or end of the name)."""
    if hook_type == "post_tool_failure":
        return "error"
    if not tool_name:
        return "other"
    normal = re.sub(r"[-\s]+", "_", re.sub(r"([a-z])([A-Z])", r"\1_\2", tool_name)).lower()

    def has_word(word: str) -> bool:
        return bool(_WHOLE_WORD[word].search(normal)) or normal.startswith(word) or normal.endswith(word)

    for kind, words in TYPE_WORDS:
        if any(has_word(word) for word in words):
            return kind
    return "other"


def extract_files(tool_name: str | None, tool_input: Any) -> list[str]:
    if not isinstance(tool_input, dict):
        return []
    searching = (
        (tool_name is not None and bool(_SEARCH_TOOL.search(tool_name)))
        or isinstance(tool_input.get("pattern"), str)
        or isinstance(tool_input.get("query"), str)
    )
    keys = (
        ("file_path", "filepath", "filePath", "notebook_path")
        if searching
        else ("file_path", "filepath", "path", "filePath", "file", "notebook_path")
    )
    files: list[str] = []
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str) and 0 < js_length(value) < FILE_PATH_LIMIT and value not in files:
            files.append(value)
    return files


def strip_private(text: str) -> str:
    text = _SERVER_PEM.sub(REDACTED_SECRET, text)
    text = _SERVER_URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED_SECRET + "@", text)
    for pattern in _SERVER_SECRETS:
        text = pattern.sub(REDACTED_SECRET, text)
    return text


def sanitize_data(data: Any) -> Any:
    """`data` after the server's secret stripping of its JSON text (as a string when that breaks the JSON)."""
    try:
        return json.loads(strip_private(js_stringify(data)))
    except ValueError:
        return strip_private(str(data))


def _narrative_part(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else js_stringify(value)


def compress(observation_id: str, payload: dict[str, Any], data: Any) -> dict[str, Any]:
    """The synthetic (zero-LLM) compressed record the server stores for an observation."""
    hook_type = payload["hookType"]
    tool_name = tool_input = tool_output = None
    if isinstance(data, dict) and hook_type in TOOL_HOOKS:
        tool_name = data.get("tool_name")
        tool_input = data.get("tool_input")
        tool_output = data.get("tool_output", data.get("error"))
    name = tool_name or hook_type
    input_text = _narrative_part(tool_input)
    parts = [p for p in (input_text, _narrative_part(tool_output)) if p]
    return {
        "id": observation_id,
        "sessionId": payload["sessionId"],
        "timestamp": payload["timestamp"],
        "compressedAt": datetime.now(UTC).isoformat(),
        "type": infer_type(name, hook_type),
        "title": truncate(str(name) or "observation", TITLE_CHARS),
        "subtitle": truncate(input_text, SUBTITLE_CHARS) if input_text else None,
        "facts": [],
        "narrative": truncate(" | ".join(parts), NARRATIVE_CHARS),
        "concepts": [],
        "files": extract_files(tool_name, tool_input),
        "importance": 5,
        "confidence": 0.3,
    }


def tokens(text: str) -> list[str]:
    """The server's search tokens: everything but letters, digits, whitespace and / . \\ ] ^ _ becomes a
    space; words shorter than 2 characters are dropped."""
    cleaned = _TOKEN_DROP.sub(" ", text.lower())
    return [word for word in cleaned.split() if len(word) >= 2]


def record_terms(record: dict[str, Any]) -> list[str]:
    parts = [
        record["title"],
        record.get("subtitle") or "",
        record["narrative"],
        *record["facts"],
        *record["concepts"],
        *record["files"],
        record["type"],
    ]
    return tokens(" ".join(parts))


def session_cap_from_env() -> int:
    raw = os.environ.get("MAX_OBS_PER_SESSION", "")
    try:
        return int(raw) if raw.strip() else DEFAULT_SESSION_CAP
    except ValueError:
        return DEFAULT_SESSION_CAP


class StandInServer:
    def __init__(self, *, secret: str | None = None, session_cap: int | None = None, port: int = 0) -> None:
        self.secret = secret
        #: MAX_OBS_PER_SESSION; 0 or less turns the cap off
        self.session_cap = session_cap_from_env() if session_cap is None else session_cap
        self.port = port
        self.lock = threading.Lock()
        #: the compressed records, as the server keeps and lists them
        self.records: list[dict[str, Any]] = []
        #: every POST /observe: (status, answer, headers, payload or None)
        self.requests: list[dict[str, Any]] = []
        self.sessions: dict[str, dict[str, Any]] = {}
        #: statuses to answer with before the normal rules apply (a 500 burst, say)
        self.forced: list[tuple[int, dict[str, Any]]] = []
        #: called with each POSTed payload before the answer is sent (to look at the client meanwhile)
        self.on_observe: Callable[[Any], None] | None = None
        self._recent: dict[str, float] = {}
        self._per_session: dict[str, int] = {}
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
        """The compressed records the server keeps (what its read-back endpoints return)."""
        with self.lock:
            return list(self.records)

    def posts(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests)

    def accepted(self) -> list[dict[str, Any]]:
        """The payloads that were stored (answered with an observation id), in order."""
        return [p["payload"] for p in self.posts() if "observationId" in p["answer"]]

    def search(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        """The records a search for `query` finds, best first (BM25 with the server's prefix matching)."""
        with self.lock:
            records = list(self.records)
        docs = [record_terms(r) for r in records]
        if not docs:
            return []
        average = sum(len(d) for d in docs) / len(docs)
        scores = [0.0] * len(docs)
        for term in dict.fromkeys(tokens(query)):
            exact = [d.count(term) for d in docs]
            prefix = [sum(1 for t in d if t != term and t.startswith(term)) for d in docs]
            for counts, weight in ((exact, 1.0), (prefix, 0.5)):
                df = sum(1 for c in counts if c)
                idf = math.log((len(docs) - df + 0.5) / (df + 0.5) + 1) * weight
                for i, tf in enumerate(counts):
                    if tf and (weight == 1.0 or not exact[i]):
                        scores[i] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(docs[i]) / average))
        ranked = sorted((s, i) for i, s in enumerate(scores) if s > 0)
        return [records[i] for _, i in sorted(ranked, key=lambda p: -p[0])[:limit]]

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
        payload = {**payload, **{k: payload[k].strip() for k in REQUIRED}}
        data = payload.get("data")
        session_id = payload["sessionId"]
        key = dedup_key(session_id, data if isinstance(data, dict) else {}, payload["hookType"])
        now = time.monotonic()
        if now - self._recent.get(key, -1e9) < DEDUP_SECONDS:
            return 201, {"deduplicated": True, "sessionId": session_id}
        stored_here = self._per_session.get(session_id, 0)
        if self.session_cap > 0 and stored_here >= self.session_cap:
            return 201, {"success": False, "error": f"Session observation limit reached ({self.session_cap})"}
        observation_id = f"obs_{secrets.token_hex(8)}"
        self.records.append(compress(observation_id, payload, sanitize_data(data)))
        self._per_session[session_id] = stored_here + 1
        self._recent[key] = now
        session = self.sessions.get(session_id)
        if session is None:
            self.sessions[session_id] = {
                "id": session_id,
                "project": payload["project"],
                "cwd": payload["cwd"],
                "observationCount": 1,
                "startedAt": payload["timestamp"],
                "status": "active",
            }
        else:
            session["observationCount"] += 1
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
        if path == "/agentmemory/search":
            self._search(body)
            return
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

    def _search(self, body: bytes) -> None:
        if not self._authorized():
            self._answer(401, {"error": "unauthorized"})
            return
        try:
            query = json.loads(body).get("query")
        except (ValueError, AttributeError):
            query = None
        if not isinstance(query, str) or not query.strip():
            self._answer(400, {"error": "query is required"})
            return
        found = self.server_state.search(query)
        self._answer(200, {"results": [{"observation": r} for r in found]})

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
                self._answer(400, {"error": "sessionId required"})
                return
            with state.lock:
                found = [r for r in state.records if r["sessionId"] == session]
            self._answer(200, {"observations": found})
            return
        self._answer(404, {"error": "not found"})
