"""The index keeper's requests as they come off its socket (semantic rankings, and the commands it answers:
see `amem.keeperproto.ask`): bounded (size, nesting, the time a client may take), checked field by field,
and each answered, whatever it held; a malformed one gets an error line, never a dead server. `amem mcp`
runs the same keeper, hence the same checks."""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ..keeperproto.ask import ACK, OPS
from ..keeperproto.client import PROTOCOL, LineTooLong, read_line

if TYPE_CHECKING:
    import socket

#: The longest request line read: an `among` naming every note of a vault of 200,000 notes fits.
MAX_REQUEST = 16 << 20
#: Arrays and objects a request may hold at all (a ranking holds 2: itself and `among`; a search command 5:
#: itself, config, args, tags and its other queries), which also bounds its nesting: json's recursive
#: decoder never meets a deep one.
MAX_CONTAINERS = 5
#: The most results a request may ask for.
MAX_DEPTH = 1_000_000
#: How long a client may take to send its request (and to take the answer).
CLIENT_TIMEOUT = 2.0

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


class RankRequest(NamedTuple):
    query: str
    depth: int
    among: set[str] | None


class CommandRequest(NamedTuple):
    """A command for the keeper to answer (`keeper_ask`): its fields as sent, their types checked; what
    `config` and `args` hold is checked by the operation's own code."""

    op: str
    amem: str
    settings: str
    tz: str | None
    config: dict[str, Any]
    args: dict[str, Any]


#: What a command answer asks to run after the client took it (a read's last-seen record), or None.
After = Callable[[], None] | None
#: How the keeper answers a command: the answer line's object, the result's own line (the text the command
#: prints, None with an error), and what to run once the client took them.
Answer = Callable[[CommandRequest], tuple[dict[str, Any], str | None, After]]


class BadRequest(ValueError):
    """A request the keeper will not rank: it answers `{"error": "bad request", "reason": message}`."""


def parse_request(line: bytes) -> RankRequest | CommandRequest:
    """The request in one line; BadRequest when it is not UTF-8, not JSON, too deep, or of wrong types."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("not UTF-8") from None
    outside_strings = _JSON_STRING.sub("", text)
    if outside_strings.count("[") + outside_strings.count("{") > MAX_CONTAINERS:
        raise BadRequest("nested too deep")
    try:
        request = json.loads(text)
    except (ValueError, RecursionError):
        raise BadRequest("not JSON") from None
    if not isinstance(request, dict):
        raise BadRequest("not an object")
    version = request.get("v")
    if type(version) is not int or version != PROTOCOL:
        raise BadRequest("another protocol version")
    if "op" in request:
        return _command_request(request)
    query, depth, among = (request.get(k) for k in ("query", "depth", "among"))
    if not isinstance(query, str) or type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
        raise BadRequest("query must be a string and depth a positive integer")
    if among is not None and not (isinstance(among, list) and all(isinstance(i, str) for i in among)):
        raise BadRequest("among must be null or a list of ids")
    return RankRequest(query, depth, None if among is None else set(among))


def _command_request(request: dict[str, Any]) -> CommandRequest:
    op, amem, settings, tz, config, args = (request.get(k) for k in ("op", "amem", "settings", "tz", "config", "args"))
    if op not in OPS:
        raise BadRequest("no such operation")
    if not (isinstance(amem, str) and isinstance(settings, str) and (tz is None or isinstance(tz, str))):
        raise BadRequest("amem and settings must be strings, tz a string or null")
    if not (isinstance(config, dict) and isinstance(args, dict)):
        raise BadRequest("config and args must be objects")
    return CommandRequest(op, amem, settings, tz, config, args)


def read_request_line(conn: socket.socket, deadline: float) -> bytes:
    """The request's line (`read_line`, bounded by MAX_REQUEST); BadRequest when it is longer."""
    try:
        return read_line(conn, deadline, MAX_REQUEST)
    except LineTooLong:
        raise BadRequest("too long") from None


def serve_client(
    conn: socket.socket, rank: Callable[[RankRequest], dict[str, Any]], command: Answer | None = None
) -> None:
    """Read one request from `conn`, answer it with `rank`'s (or `command`'s) answer or the error it
    deserves, close. Never raises: a client that hangs up, stalls or sends garbage ends only its own
    connection. What a command's answer runs after is run only once the client says it took the answer."""
    try:
        with conn:
            deadline = time.monotonic() + CLIENT_TIMEOUT
            after: After = None
            body: str | None = None
            try:
                request = parse_request(read_request_line(conn, deadline))
                if isinstance(request, RankRequest):
                    answer = rank(request)
                elif command is None:
                    answer = {"error": "this keeper answers no commands"}
                else:
                    answer, body, after = command(request)
            except BadRequest as exc:
                answer = {"error": "bad request", "reason": str(exc)}
            conn.settimeout(CLIENT_TIMEOUT)
            lines = json.dumps(answer) + "\n" + ("" if body is None else body + "\n")
            conn.sendall(lines.encode("utf-8"))
            if after is not None and read_line(conn, time.monotonic() + CLIENT_TIMEOUT, len(ACK)) == ACK:
                after()
    except Exception:  # noqa: BLE001, S110 (gone, stalled or cut short: nothing to answer, nothing to report)
        pass


def refuse_client(conn: socket.socket) -> None:
    """Tell a client over the keeper's limit of connections that it is busy, without reading its request."""
    with contextlib.suppress(OSError), conn:
        conn.settimeout(0.2)
        conn.sendall(b'{"error": "busy"}\n')
