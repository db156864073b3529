"""`amem mcp --http`: the tools of `mcp_server` served over MCP's streamable HTTP transport (SPEC §19).

One process serves many clients at `/mcp` (the official SDK's session manager) and answers `GET /health`.
Before the SDK sees a request, `Guard` refuses what browsers and the network may not do: a `Host` that is
not the bound address or a configured name (421, DNS rebinding), a foreign `Origin` (403), a missing or
unknown bearer token (401), and a body over MAX_BODY (413, by its Content-Length here and by counting in the
SDK). Uvicorn bounds the open connections and `_StallGuard` drops a client that stops sending its request.
Around every tool call `_Gate` enforces the token's scope (a read-only token calls only the tools that
declare readOnlyHint, else a `forbidden` tool error and nothing runs), names the token as the author of the
commits the call makes, and appends each change to the audit log. Tokens are never logged.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import h11
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp_types import CallToolResult
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from .config import Config
from .errors import UsageError
from .mcp_server import _result, _VaultKeeper, build_server, declared_tools
from .tokens import READ_ONLY, TokenRecord, TokenTable

logger = logging.getLogger("amem.mcp")

DEFAULT_BIND = "127.0.0.1:8181"
#: The largest request body taken (SPEC §19).
MAX_BODY = 16 * 1024 * 1024
PATH = "/mcp"


class HttpOptions(NamedTuple):
    """How `amem mcp --http` serves: where, to whom, and its limits."""

    host: str
    port: int
    no_auth: bool = False
    #: more names the Host header may carry (the names a reverse proxy or DNS gives the server)
    hosts: tuple[str, ...] = ()
    #: more origins (scheme://host[:port]) browsers may send requests from
    origins: tuple[str, ...] = ()
    max_connections: int = 100
    #: seconds a client may take to send the rest of a request it began (or a first one)
    stall_timeout: float = 30.0
    commit: bool = False


def parse_bind(text: str) -> tuple[str, int]:
    """`[HOST:]PORT` as (host, port); an IPv6 host in brackets (`[::1]:8181`)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdigit() or int(port) > 65535 or not host or "[" in host or "]" in host:
        raise UsageError(f"--http takes [HOST:]PORT, e.g. {DEFAULT_BIND} or 8181; got {text!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_start(options: HttpOptions, tokens: TokenTable) -> None:
    """Refuse to serve unprotected: without tokens only on loopback and only with --no-auth."""
    if options.no_auth and not is_loopback(options.host):
        raise UsageError(
            f"--no-auth is only for loopback (127.0.0.1, ::1, localhost); {options.host} reaches other machines: "
            "make a token with `amem token add NAME` instead"
        )
    if not options.no_auth and not tokens.refresh():
        where = "" if is_loopback(options.host) else f" on {options.host}, which reaches other machines,"
        raise UsageError(
            f"no tokens: amem mcp --http will not serve{where} without them; make one with `amem token add NAME`"
            + (" (or pass --no-auth for your own clients on this machine)" if is_loopback(options.host) else "")
        )


# --- what a request may not do -----------------------------------------------------------------------


def _hostname(value: str) -> str:
    """The host of a Host header or an origin's authority, lowercased, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The ASGI application uvicorn runs: the refusals above, then `/health` or the SDK's `/mcp`."""

    def __init__(self, mcp_app: Any, lifespan_app: Any, options: HttpOptions, tokens: TokenTable | None) -> None:
        self.mcp_app = mcp_app
        self.lifespan_app = lifespan_app
        self.tokens = tokens
        names = {_hostname(options.host), *(_hostname(h) for h in options.hosts)}
        if is_loopback(options.host) or options.host in ("0.0.0.0", "::"):
            names |= {"localhost", "127.0.0.1", "::1"}
        names.discard("0.0.0.0")
        names.discard("::")
        self.hostnames = frozenset(names)
        self.origins = frozenset(o.strip().rstrip("/").lower() for o in options.origins)

    def host_allowed(self, host: str | None) -> bool:
        return bool(host) and _hostname(host or "") in self.hostnames

    def origin_allowed(self, origin: str | None, host: str) -> bool:
        """No Origin (not a browser), the server's own (the host the request came to), or a configured one."""
        if origin is None:
            return True
        origin = origin.strip().rstrip("/").lower()
        scheme, sep, authority = origin.partition("://")
        own = sep and scheme in ("http", "https") and authority == host.strip().lower()
        return bool(own) or origin in self.origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan_app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # uvicorn runs no websockets here; anything else is not served
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not self.host_allowed(host):
            await _refuse(send, 421, "misdirected", "this server does not answer to that Host")
            return
        if not self.origin_allowed(headers.get("origin"), host or ""):
            await _refuse(send, 403, "forbidden", "requests from that Origin are refused")
            return
        if scope["path"] == "/health":
            await _health(scope, send)
            return
        declared = headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY:
            await _refuse(send, 413, "too_large", f"the body exceeds {MAX_BODY} bytes")
            return
        if self.tokens is not None:
            token = self.tokens.match(_bearer(headers.get("authorization")))
            if token is None:
                await _refuse(send, 401, "unauthorized", "a valid token is required: Authorization: Bearer TOKEN")
                return
            scope["user"] = _user(token)
        if scope["path"] not in (PATH, PATH + "/"):
            await _refuse(send, 404, "not_found", f"nothing here; MCP is served at {PATH}")
            return
        await _within_limit(self.mcp_app, scope, receive, send)


class _TooLarge(Exception):
    pass


async def _within_limit(app: Any, scope: Scope, receive: Receive, send: Send) -> None:
    """Run `app`, refusing with 413 a body (chunked, or longer than it said) once it passes MAX_BODY."""
    received = 0
    started = False

    async def counting_receive() -> Any:
        nonlocal received
        message = await receive()
        received += len(message.get("body", b""))
        if received > MAX_BODY:
            raise _TooLarge
        return message

    async def watching_send(message: Any) -> None:
        nonlocal started
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, counting_receive, watching_send)
    except _TooLarge:
        if started:
            raise
        await _refuse(send, 413, "too_large", f"the body exceeds {MAX_BODY} bytes")


def _bearer(value: str | None) -> str:
    scheme, _, secret = (value or "").strip().partition(" ")
    return secret.strip() if scheme.lower() == "bearer" and secret.strip() else "\0"


def _user(token: TokenRecord) -> AuthenticatedUser:
    """The token as the SDK's authenticated user: the SDK ties each session to it, so that another token
    cannot continue a session; the digest stands in for the secret, which is kept nowhere."""
    return AuthenticatedUser(AccessToken(token=token.sha256, client_id=token.name, scopes=[token.scope]))


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    extra = ((b"www-authenticate", b'Bearer realm="amem"'),) if status == 401 else ()
    await _send_json(send, status, {"error": {"code": code, "message": message}}, extra)


async def _health(scope: Scope, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await _refuse(send, 405, "method_not_allowed", "/health answers GET")
        return
    await _send_json(send, 200, {"status": "ok"})


async def _send_json(
    send: Send, status: int, body: dict[str, Any], extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *extra]
    if status >= 400:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class _StallGuard(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, dropping a connection whose client has sent nothing for `stall_timeout`
    seconds while the server waits on it (for a request, or the rest of one). A response the server is
    streaming (an SSE stream) waits on nothing from the client and is never cut."""

    stall_timeout = 30.0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # an answer's head and body go out at once, not 40 ms apart (Nagle, delayed ACK)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._stall_timer: Any = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        self._arm()
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        self._stall_timer = self.loop.call_later(self.stall_timeout, self._on_stall)

    def _on_stall(self) -> None:
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self.transport.close()
        else:
            self._arm()


# --- around each tool call ---------------------------------------------------------------------------


class _Gate:
    """The scope check, the commit author and the audit line of each tool call (see `mcp_server.Gate`)."""

    def __init__(self, config: Config, auth: bool) -> None:
        self.config = config
        self.auth = auth
        tools = declared_tools()
        annotations = {name: entry.listing.annotations for name, entry in tools.items()}
        self.read_only = {name: bool(a is not None and a.read_only_hint) for name, a in annotations.items()}

    def __call__(
        self, ctx: Any, name: str, arguments: dict[str, Any], work: Callable[[], CallToolResult]
    ) -> CallToolResult:
        if self.read_only.get(name, True):
            return work()  # a reading tool, or an unknown one, which the call refuses itself
        token = _token_of(ctx)
        if self.auth and (token is None or token.scope == READ_ONLY):
            readers = ", ".join(n for n, ro in self.read_only.items() if ro)
            who = f"the token {token.name!r}" if token else "this request"
            message = f"{name} changes the vault and {who} is read-only: it may call {readers}; nothing was done"
            return _result({"error": {"code": "forbidden", "message": message}}, [], error=True)
        from .gitvault.git import author_commits_as

        before = _version_before(self.config, arguments)
        author_commits_as(token.name if token else None)
        try:
            outcome = work()
        finally:
            author_commits_as(None)
        if not outcome.is_error and isinstance(outcome.structured_content, dict):
            self._audit(token, name, arguments, before, outcome.structured_content)
        return outcome

    def _audit(
        self, token: TokenRecord | None, name: str, arguments: dict[str, Any], before: str | None, data: dict[str, Any]
    ) -> None:
        from .audit import append_audit

        after = data.get("version")
        if name == "wiki_delete":
            before, after = after, None
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "vault": os.path.abspath(self.config.vault_root),
            "token": token.name if token else None,
            "tool": name,
            "id": data.get("id", arguments.get("id")),
            **({"from": data["from"]} if "from" in data else {}),
            "versionBefore": before,
            "versionAfter": after,
            **({"commit": data["commit"]} if data.get("commit") else {}),
        }
        try:
            append_audit(entry)
        except OSError as exc:
            logger.error("could not append to the audit log: %s", exc)


def _token_of(ctx: Any) -> TokenRecord | None:
    """The token the request carrying this call was let in with (`Guard` put it there)."""
    request = getattr(ctx, "request", None)
    user = request.scope.get("user") if request is not None else None
    if not isinstance(user, AuthenticatedUser):
        return None
    access = user.access_token
    return TokenRecord(access.client_id, access.token, access.scopes[0] if access.scopes else READ_ONLY, "")


def _version_before(config: Config, arguments: dict[str, Any]) -> str | None:
    """The note's version before a change: the baseVersion the change was guarded by, else the version read
    just before it (None: no such note yet)."""
    if isinstance(arguments.get("baseVersion"), str):
        return str(arguments["baseVersion"])
    if not isinstance(arguments.get("id"), str):
        return None
    from .digest import sha1_hex
    from .errors import AmemError
    from .notes.ids import read_regular, resolve_note

    try:
        return sha1_hex(read_regular(resolve_note(config, arguments["id"]).path))
    except (AmemError, OSError):
        return None


# --- the server --------------------------------------------------------------------------------------


def _listen(options: HttpOptions) -> socket.socket:
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    try:
        infos = socket.getaddrinfo(options.host, options.port, family, socket.SOCK_STREAM)
        sock = socket.socket(infos[0][0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(infos[0][4])
        sock.listen(128)
    except OSError as exc:
        raise UsageError(f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def serve_http(config: Config, options: HttpOptions) -> None:
    """Serve the tools over streamable HTTP until SIGTERM or Ctrl-C, keeping the index fresh. Prints one
    JSON line when listening: its URL, whether tokens are required, and how many exist."""
    import uvicorn

    tokens = TokenTable()
    check_start(options, tokens)
    if options.commit:
        config = config._replace(git_auto_commit=True)
    if config.semantic:
        from .semantic import semantic

        semantic.KEEP_VECTORS = True
    keeper = _VaultKeeper(config)
    server = build_server(config, keeper, _Gate(config, auth=not options.no_auth))
    manager = StreamableHTTPSessionManager(app=server, max_request_body_size=MAX_BODY)

    async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        async with manager.run():
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
        if message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})

    app = Guard(StreamableHTTPASGIApp(manager), lifespan, options, None if options.no_auth else tokens)
    sock = _listen(options)
    port = sock.getsockname()[1]
    shown = f"[{options.host}]" if ":" in options.host else options.host
    protocol = type("StallGuard", (_StallGuard,), {"stall_timeout": options.stall_timeout})
    uv_config = uvicorn.Config(
        app,
        http=protocol,
        ws="none",
        lifespan="on",
        access_log=False,
        log_level="warning",
        limit_concurrency=options.max_connections,
        timeout_keep_alive=max(1, int(options.stall_timeout)),
        timeout_graceful_shutdown=5,
        h11_max_incomplete_event_size=64 * 1024,
    )
    logging.basicConfig(level=logging.WARNING, format="%(message)s")  # on stderr
    threading.Thread(target=keeper.ensure, name="amem-keeper-start", daemon=True).start()
    ready = {"url": f"http://{shown}:{port}{PATH}", "auth": "none" if options.no_auth else "tokens"}
    if not options.no_auth:
        ready["tokens"] = len(tokens.records)  # type: ignore[assignment]
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    try:
        uvicorn.Server(uv_config).run(sockets=[sock])
    finally:
        keeper.stop()
