"""A command's side of the keeper's answers: `amem search`, `read` and `list` ask a live keeper of their vault
(`amem index --watch`, or the one `amem mcp` runs) to answer them, over the socket it already serves
semantic rankings on, and print what it answers. The keeper holds the index open with warm caches (and the
semantic vectors in memory), so such a command costs Python's start-up and one round trip; it never loads
SQLite, the tokenizer or the ranking itself.

The protocol, beside the ranking one (`keeper_client`), on the same socket:

- keeper.json says `"answers": ANSWERS` and `"amem": <version>` when its keeper answers commands.
- The command sends one line `{"v", "op", "amem", "settings", "tz", "config", "args"}`: the operation
  (`search`, `read`, `list`), its arguments, and what of its config the answer depends on. The keeper
  answers only when `amem` and `settings` (the vault and what the index holds) are its own and `tz` (the
  local zone's name) is its own; it runs the operation as the command would have, with the command's
  config values, inside its own vault, and sends two lines back: `{"warnings"}`, then the result as the
  command prints it when its stdout is not a terminal (so that the command need not parse it).
- The command then sends `ok`; only then does the keeper record what a `read` saw (the last-seen version
  behind `modifiedExternally`), so an answer that never reached the command leaves no trace.
- Anything else (no keeper, a stale socket, another version or settings, an error of the operation, an
  answer over MAX_ANSWER, no answer within ANSWER_TIMEOUT, a keeper that dies meanwhile): None, and the
  command answers in its own process, exactly as it would have without a keeper. An operation's own
  errors (a missing note, a bad --since) are always the command's to raise.

`AMEM_NO_KEEPER=1` makes a command answer in its own process, keeper or not (comparisons, benchmarks);
it still uses the keeper's sync cookies to skip the walk of the vault.

The console script asks before Click loads when it can (`amem.shim`), with the same request; a command it
asked for and that goes on through Click does not ask again (`asked`).
"""

from __future__ import annotations

import json
import os
import time

from .. import __version__
from .client import INFO_FILE, LOCK_FILE, lock_held

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from typing import Any

    from ..config import Config

#: The answers protocol's version, named in keeper.json by a keeper that answers commands.
ANSWERS = 1
#: The ranking protocol's request version, which command requests share (`keeper.requests`).
REQUEST_VERSION = 1
#: The longest answer a command takes; a longer one is answered in the command's own process.
MAX_ANSWER = 32 << 20
#: How long a command waits for the keeper's answer before it answers itself.
ANSWER_TIMEOUT = 5.0
#: The environment variable that makes commands answer in their own process.
NO_KEEPER = "AMEM_NO_KEEPER"
OPS = ("search", "read", "list")
ACK = b"ok\n"
#: Set by the console script's fast path once it has asked a keeper and its command goes on through Click:
#: the command then answers in its own process without asking again, so that a stopped or refusing keeper
#: costs one wait, not two.
asked = False


def answer_settings(config: Config) -> str:
    """What an answer depends on that only the keeper's own config can be trusted with: the real vault,
    what its index holds, and the semantic model its vectors are of. A keeper answers only requests of its
    own settings."""
    c = config
    return settings_of(c.vault_dir, c.extensions, c.exclude_dirs, c.index_hidden_dirs, c.semantic_model)


def settings_of(
    vault_root: str, extensions: tuple[str, ...], exclude_dirs: tuple[str, ...], hidden: bool, model: str
) -> str:
    """`answer_settings` of these config values."""
    vault = os.path.realpath(vault_root)
    return json.dumps([vault, list(extensions), list(exclude_dirs), hidden, model])


def config_view(config: Config) -> dict[str, Any]:
    """The command's own config values an answer uses: the keeper answers with these, not its own."""
    c = config
    return view_of(c.max_link_depth, c.max_search_results, c.semantic, c.timezone_name)


def view_of(max_link_depth: int, max_search_results: int, semantic: bool, timezone: str | None) -> dict[str, Any]:
    """`config_view` of these config values."""
    return {
        "maxLinkDepth": max_link_depth,
        "maxSearchResults": max_search_results,
        "semantic": semantic,
        "timezone": timezone,
    }


def local_zone() -> str | None:
    """The process's local zone as the C library was told it (TZ), which the keeper must share."""
    return os.environ.get("TZ")


def no_keeper() -> bool:
    """Whether AMEM_NO_KEEPER asks commands to answer in their own process."""
    return os.environ.get(NO_KEEPER, "") not in ("", "0")


class Answer:
    """A keeper's answer: the warnings the operation met (in order, once each), and the result as
    `output.one_line` renders it. (A plain class: a NamedTuple would need `typing` loaded.)"""

    __slots__ = ("text", "warnings")

    def __init__(self, warnings: list[str], text: str) -> None:
        self.warnings = warnings
        self.text = text


def ask(config: Config, op: str, args: dict[str, Any]) -> Answer | None:
    """The live keeper's answer to operation `op`, or None (answer in this process) when there is none
    or anything fails. Never raises."""
    if no_keeper() or asked:
        return None
    socket_path = answering_socket(config.cache_folder)
    if socket_path is None:
        return None
    return exchange(socket_path, request_line(op, answer_settings(config), config_view(config), args))


def request_line(op: str, settings: str, view: dict[str, Any], args: dict[str, Any]) -> bytes:
    """The request for operation `op` with these settings, config values and arguments, as sent."""
    request = {
        "v": REQUEST_VERSION,
        "op": op,
        "amem": __version__,
        "settings": settings,
        "tz": local_zone(),
        "config": view,
        "args": args,
    }
    return json.dumps(request).encode("utf-8") + b"\n"


def answering_socket(cache: str) -> str | None:
    """The socket of a live keeper, keeping its index in the cache folder `cache`, that answers commands
    of this amem; None when there is none."""
    if not lock_held(os.path.join(cache, LOCK_FILE)):
        return None  # no keeper (a socket left by a killed one is never tried)
    try:
        with open(os.path.join(cache, INFO_FILE), encoding="utf-8") as handle:
            described = json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(described, dict) or described.get("answers") != ANSWERS:
        return None  # an older keeper, or one that does not answer commands
    name = described.get("socket")
    if described.get("amem") != __version__ or described.get("pid") == os.getpid():
        return None
    if not isinstance(name, str) or not name or "/" in name:
        return None
    return os.path.join(cache, name)


def exchange(path: str, request: bytes) -> Answer | None:
    """Send `request` to the keeper's socket at `path` and take its answer; None when it refuses, fails,
    is too long or too late (the command then answers itself). Never raises."""
    try:
        return _exchange(path, request)
    except (OSError, ValueError, RecursionError):  # gone, stalled, cut short, too long or malformed
        return None


def _exchange(path: str, request: bytes) -> Answer | None:
    import _socket  # the C module: `socket` would load `selectors` and more, for nothing used here

    deadline = time.monotonic() + ANSWER_TIMEOUT
    client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        client.settimeout(ANSWER_TIMEOUT)
        client.connect(path)
        client.sendall(request)
        lines = _Lines(client, deadline)
        header = json.loads(lines.next())
        if not isinstance(header, dict) or not _strings(header.get("warnings")):
            return None  # an error: the command answers itself
        text = lines.next().decode("utf-8").removesuffix("\n")
        if not text.startswith("{") or not text.endswith("}"):
            return None
        try:  # noqa: SIM105 (contextlib would cost the fast path its import)
            client.sendall(ACK)  # the answer is taken: the keeper may record what it saw
        except OSError:
            pass
    finally:
        client.close()
    return Answer(header["warnings"], text)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


class _Lines:
    """Newline-ended lines from a socket by a deadline, MAX_ANSWER bytes in all: TimeoutError when they do
    not come in time, ValueError when cut short or too long."""

    def __init__(self, conn: _socket.socket, deadline: float) -> None:
        self.conn = conn
        self.deadline = deadline
        self.data = bytearray()
        self.taken = 0

    def next(self) -> bytes:
        while (end := self.data.find(b"\n", self.taken)) < 0:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no answer in time")
            self.conn.settimeout(remaining)
            piece = self.conn.recv(1 << 18)
            if not piece:
                raise ValueError("the answer was cut short")
            if len(self.data) + len(piece) > MAX_ANSWER:
                raise ValueError("the answer is too long")
            self.data += piece
        line, self.taken = bytes(self.data[self.taken : end + 1]), end + 1
        return line
