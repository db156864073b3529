"""Where observations go: the agentmemory server (through the durable spool), the vault, or stdout.

Every sink takes observations that are already redacted. `deliver` never raises and never blocks for long:
the server and vault sinks hand the work to their own thread, so a slow server or a busy vault never
delays the watcher's next observation.
"""

from __future__ import annotations

import collections
import json
import queue
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .observation import SessionIds
from .spool import ObservationSpool

if TYPE_CHECKING:
    from ..config import Config
    from .service import Watcher

Log = Callable[[str], None]

OBSERVE_PATH = "/agentmemory/observe"
REQUEST_TIMEOUT = 5.0
SESSION_LIMIT_TEXT = "Session observation limit reached"
#: HTTP answers that say "this observation will never be accepted": retrying cannot help.
PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 405, 410, 413, 415, 422})
_HINTS = {
    400: "the server refused the observation as invalid",
    401: "unauthorized: check --secret / AGENTMEMORY_SECRET",
    403: "forbidden: check --secret / AGENTMEMORY_SECRET",
    404: "not found: is --url / AGENTMEMORY_URL an agentmemory server?",
}


class Sink:
    name = "sink"

    def start(self) -> None:
        """Begin work (open the spool, start threads)."""

    def deliver(self, observation: dict[str, Any]) -> None:
        raise NotImplementedError

    def close(self, drain_timeout: float = 0.0) -> None:
        """Stop; may spend up to `drain_timeout` seconds finishing queued work."""

    def stats(self) -> dict[str, int]:
        return {}

    def describe(self) -> str:
        return self.name


# --- stdout -----------------------------------------------------------------------------------------


class StdoutSink(Sink):
    """One observation per line (NDJSON), flushed per line so that a pipe sees each one at once."""

    name = "stdout"

    def __init__(self, stream: TextIO | None = None, on_closed: Callable[[], None] | None = None) -> None:
        self.stream = stream or sys.stdout
        self.on_closed = on_closed
        self.delivered = 0
        self.closed = False
        self._lock = threading.Lock()

    def deliver(self, observation: dict[str, Any]) -> None:
        from ..output import emit_line

        with self._lock:
            if self.closed:
                return
            try:
                emit_line(observation, self.stream)
                self.delivered += 1
            except (BrokenPipeError, ValueError):
                # The reader went away (`amem watch --sink stdout | head -1`): like any Unix filter, stop.
                self.closed = True
                if self.on_closed is not None:
                    self.on_closed()

    def stats(self) -> dict[str, int]:
        return {"delivered": self.delivered}


# --- vault ------------------------------------------------------------------------------------------


def daily_note_id(timestamp: str, tz: tzinfo | None) -> str:
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    local = moment.astimezone(tz) if tz is not None else moment.astimezone()
    return f"observations/{local.date().isoformat()}.md"


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`, so the preview cannot break out."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def render_markdown(observation: dict[str, Any]) -> str:
    """An observation as a section of the daily note: a line `amem search` can find, then the preview
    in a fence (so that links or headings inside a file's text do not become the vault's own)."""
    data = observation["data"]
    rel = data["files"][0]
    name = f"`{rel}`" if "`" not in rel else rel
    facts = f"project {observation['project']}, session {observation['sessionId']}, {observation['timestamp']}"
    if data["changeKind"] == "file_delete":
        return f"- **{data['changeKind']}** {name} ({facts})"
    size = f"{data['size']} bytes{', truncated' if data['truncated'] else ''}"
    line = f"- **{data['changeKind']}** {name}: {size} ({facts})"
    _, _, preview = data["content"].partition("\n\n")
    if not preview.strip():
        return line
    fence = _fence(preview)
    return f"{line}\n\n{fence}text\n{preview.rstrip()}\n{fence}"


class VaultSink(Sink):
    """Appends each observation to `observations/<YYYY-MM-DD>.md` through the vault core's write_note, so
    that `amem search` finds it without a server. Observations that arrive together share one append."""

    name = "vault"

    def __init__(self, config: Config, warn: Log) -> None:
        self.config = config
        self.warn = warn
        self.delivered = 0
        self.failed = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._failing = False

    def describe(self) -> str:
        return f"vault {self.config.vault_root}/observations/"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="amem-watch-vault", daemon=True)
        self._thread.start()

    def deliver(self, observation: dict[str, Any]) -> None:
        self._queue.put(observation)

    def close(self, drain_timeout: float = 0.0) -> None:
        if self._thread is None:
            return
        self._queue.put(None)
        # What is queued is written before the watcher exits: it costs one append per daily note.
        self._thread.join(timeout=max(drain_timeout, 10.0))

    def stats(self) -> dict[str, int]:
        return {"delivered": self.delivered, "failed": self.failed}

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch: list[dict[str, Any]] = []
            item = self._queue.get()
            while True:
                if item is None:
                    stopping = True
                else:
                    batch.append(item)
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._write(batch)

    def _write(self, batch: list[dict[str, Any]]) -> None:
        from ..errors import AmemError
        from ..ops.write import write_note

        notes: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for observation in batch:
            notes[daily_note_id(observation["timestamp"], self.config.tz)].append(observation)
        for note_id, observations in notes.items():
            content = "\n\n".join(render_markdown(o) for o in observations)
            try:
                write_note(self.config, note_id, content, mode="append")
            except Exception as exc:  # the sink's thread must survive whatever the vault says
                self.failed += len(observations)
                if not self._failing:  # once per outage, not once per observation
                    self._failing = True
                    message = exc.message if isinstance(exc, AmemError) else str(exc)
                    self.warn(f"cannot append observations to the vault note {note_id}: {message}")
                continue
            if self._failing:
                self._failing = False
                self.warn(f"vault writes work again ({note_id})")
            self.delivered += len(observations)


# --- server -----------------------------------------------------------------------------------------


class _Outcome:
    DELIVERED = "delivered"
    LIMIT = "limit"
    REJECTED = "rejected"
    RETRY = "retry"

    def __init__(self, kind: str, reason: str = "", status: int | None = None) -> None:
        self.kind = kind
        self.reason = reason
        self.status = status


class ServerSink(Sink):
    """POSTs to <url>/agentmemory/observe, at least once: every observation is spooled before it is sent
    and leaves the spool only when the server stored it (a 2xx whose body does not say success:false).

    Failures are retried, oldest first, with exponential backoff capped at `retry_max` seconds. A session
    the server calls full moves the watcher to a new session id and the observation is resent. Answers that
    can never succeed (400, 401, …) move the observation to the spool's failed/ folder. Each kind of failure
    is logged once per outage, not once per observation.
    """

    name = "server"

    def __init__(
        self,
        url: str,
        secret: str | None,
        spool: ObservationSpool,
        sessions: SessionIds,
        *,
        log: Log,
        warn: Log,
        retry_initial: float = 0.5,
        retry_max: float = 30.0,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.url = url.rstrip("/")
        self.endpoint = self.url + OBSERVE_PATH
        self.secret = secret
        self.spool = spool
        self.sessions = sessions
        self.log = log
        self.warn = warn
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self.timeout = timeout
        self.delivered = 0
        self.rejected = 0
        self.resent = 0
        self._queue: collections.deque[Path | dict[str, Any]] = collections.deque()
        self._cond = threading.Condition()
        self._closing = False
        self._drain_deadline = 0.0
        self._in_outage = False
        self._reported: set[str] = set()
        self._thread: threading.Thread | None = None
        self._session: Any = None
        self._backoff = retry_initial
        self._limit_streak = 0

    def describe(self) -> str:
        return f"server {self.url} (spool {self.spool.base})"

    def start(self) -> None:
        waiting = self.spool.open()
        if waiting:
            self.resent = len(waiting)
            self.log(f"resending {len(waiting)} spooled observation(s) to {self.url}")
        with self._cond:
            self._queue.extend(waiting)
        self._thread = threading.Thread(target=self._run, name="amem-watch-server", daemon=True)
        self._thread.start()

    def deliver(self, observation: dict[str, Any]) -> None:
        item: Path | dict[str, Any]
        try:
            item = self.spool.put(observation)
        except OSError as exc:
            # The spool is the promise of delivery; without it, keep the observation in memory and say so.
            self._report(
                "spool",
                f"cannot write the spool in {self.spool.dir}: {exc}; observations are kept "
                "in memory only until it works again",
            )
            item = observation
        with self._cond:
            self._queue.append(item)
            self._cond.notify()

    def close(self, drain_timeout: float = 0.0) -> None:
        with self._cond:
            self._closing = True
            self._drain_deadline = time.monotonic() + drain_timeout
            self._cond.notify_all()
        if self._thread is not None:
            # A request in flight may take up to its timeout; after that, what is left stays spooled.
            self._thread.join(timeout=drain_timeout + self.timeout + 1.0)
        self.spool.close()

    def stats(self) -> dict[str, int]:
        return {"delivered": self.delivered, "spooled": self.spool.count(), "failed": self.rejected}

    # --- the sender thread ----------------------------------------------------------------------------

    def _should_stop(self) -> bool:
        """Under the lock: stop at once in an outage, else after the queue drains or the deadline."""
        if not self._closing:
            return False
        return self._in_outage or not self._queue or time.monotonic() >= self._drain_deadline

    def _run(self) -> None:
        import requests  # noqa: F401 - imported here, off the watcher's start-up path, not at the first send

        self._backoff = self.retry_initial
        self._limit_streak = 0
        while (item := self._next_item()) is not None:
            loaded = self._load(item)
            if loaded is None:
                continue
            path, observation = loaded
            outcome = self._post(observation)
            if outcome.kind == _Outcome.DELIVERED:
                self._delivered(item, path)
            elif outcome.kind == _Outcome.LIMIT and self._limit_streak < 3:
                self._move_session(observation, path)
            elif outcome.kind == _Outcome.REJECTED:
                self._rejected(item, path, outcome)
            elif not self._wait_out_failure(outcome):
                return

    def _next_item(self) -> Path | dict[str, Any] | None:
        """The oldest queued observation (its spool path, or itself when it could not be spooled), waiting
        for one; None when it is time to stop."""
        with self._cond:
            while not self._queue and not self._closing:
                self._cond.wait()
            if self._should_stop():
                return None
            return self._queue[0]

    def _load(self, item: Path | dict[str, Any]) -> tuple[Path | None, dict[str, Any]] | None:
        """(spool path or None, observation) for a queued item; None when there is nothing to send (a
        damaged spool file, moved to failed/, or one removed by hand), which leaves the queue."""
        if not isinstance(item, Path):
            return None, item
        try:
            observation = self.spool.load(item)
        except (OSError, ValueError) as exc:
            self._report("damaged", f"spooled observation {item.name} is damaged ({exc}); moved to failed/")
            self.spool.fail(item)
            self._pop(item)
            return None
        if observation is None:  # removed by hand while queued
            self._pop(item)
            return None
        return item, observation

    def _delivered(self, item: Path | dict[str, Any], path: Path | None) -> None:
        if path is not None:
            self.spool.remove(path)
        self._pop(item)
        self.delivered += 1
        self._backoff = self.retry_initial
        self._limit_streak = 0
        self._recovered()

    def _move_session(self, observation: dict[str, Any], path: Path | None) -> None:
        """The server's session is full: the observation (and those after it) go to the next session."""
        self._limit_streak += 1
        old = observation.get("sessionId", "")
        new = self.sessions.rotate(old)
        if old != new:
            self.log(f"session {old} reached the server's observation limit; continuing as {new}")
        observation["sessionId"] = new
        if path is not None:
            self.spool.rewrite(path, observation)

    def _rejected(self, item: Path | dict[str, Any], path: Path | None, outcome: _Outcome) -> None:
        self.rejected += 1
        where = f"kept in {self.spool.fail(path).parent}" if path is not None else "dropped"
        self._pop(item)
        self._report(
            f"rejected-{outcome.status}",
            f"{self.url} rejected an observation ({outcome.reason}); not retrying it, {where} "
            "(further rejections like it are not logged)",
        )

    def _wait_out_failure(self, outcome: _Outcome) -> bool:
        """Report the outage (once) and wait for the backoff; False when closing cut the wait short."""
        self._in_outage = True
        self._report(
            "outage",
            f"cannot deliver to {self.url}: {outcome.reason}; observations are spooled in {self.spool.dir} "
            f"and retried (backoff up to {self.retry_max:g} s)",
        )
        retry_at = time.monotonic() + self._backoff
        with self._cond:
            # New observations do not cut the backoff short (they wait behind the oldest); only closing does.
            while not self._should_stop() and (wait := retry_at - time.monotonic()) > 0:
                self._cond.wait(wait)
            if self._should_stop():
                return False
        self._backoff = min(self._backoff * 2, self.retry_max)
        self._limit_streak = 0
        return True

    def _pop(self, item: Path | dict[str, Any]) -> None:
        with self._cond:
            if self._queue and self._queue[0] is item:
                self._queue.popleft()
            else:
                rest = [p for p in self._queue if p is not item]
                self._queue.clear()
                self._queue.extend(rest)

    def _report(self, kind: str, message: str) -> None:
        if kind not in self._reported:
            self._reported.add(kind)
            self.warn(message)

    def _recovered(self) -> None:
        if self._in_outage:
            self._in_outage = False
            self.log(f"delivering to {self.url} again")
        self._reported.clear()

    def _post(self, observation: dict[str, Any]) -> _Outcome:
        import requests

        if self._session is None:
            self._session = requests.Session()
            self._session.headers["Content-Type"] = "application/json"
            if self.secret:
                self._session.headers["Authorization"] = f"Bearer {self.secret}"
        body = json.dumps(observation, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        try:
            response = self._session.post(self.endpoint, data=body, timeout=self.timeout)
        except requests.Timeout:
            return _Outcome(_Outcome.RETRY, f"no answer within {self.timeout:g} s")
        except requests.RequestException as exc:
            return _Outcome(_Outcome.RETRY, _connection_reason(exc))
        try:
            answer = response.json()
        except ValueError:
            answer = None
        return _classify(response.status_code, answer)


def _classify(status: int, answer: Any) -> _Outcome:
    """What an answer of the server means for the observation: stored, session full, never, or later."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if 200 <= status < 300:
        if isinstance(answer, dict) and answer.get("success") is False:
            text = str(error or "success: false")
            if SESSION_LIMIT_TEXT.lower() in text.lower():
                return _Outcome(_Outcome.LIMIT, text, status)
            return _Outcome(_Outcome.RETRY, f"HTTP {status} but not stored: {text}")
        return _Outcome(_Outcome.DELIVERED, status=status)
    reason = f"HTTP {status}" + (f": {error}" if error else "")
    if status in PERMANENT_STATUSES:
        hint = _HINTS.get(status)
        return _Outcome(_Outcome.REJECTED, f"{reason}; {hint}" if hint else reason, status)
    return _Outcome(_Outcome.RETRY, reason, status)


def _connection_reason(exc: BaseException) -> str:
    text = str(exc)
    for marker in (
        "Connection refused",
        "Name or service not known",
        "No route to host",
        "Connection reset",
        "timed out",
    ):
        if marker in text:
            return marker.lower()
    return type(exc).__name__


# --- the registry -----------------------------------------------------------------------------------


def _server_sink(watcher: Watcher) -> Sink:
    options = watcher.options
    return ServerSink(
        options.url,
        options.secret,
        ObservationSpool(options.spool_dir, options.url),
        watcher.sessions,
        log=watcher.log,
        warn=watcher.warn,
        retry_initial=options.retry_initial,
        retry_max=options.retry_max,
    )


def _vault_sink(watcher: Watcher) -> Sink:
    return VaultSink(watcher.config, watcher.warn)


def _stdout_sink(watcher: Watcher) -> Sink:
    return StdoutSink(watcher.stdout, on_closed=watcher.stop_requested.set)


#: Every sink by the name `--sink` and `watch.sinks` give it, and how a watcher builds it.
SINKS: dict[str, Callable[[Watcher], Sink]] = {"server": _server_sink, "vault": _vault_sink, "stdout": _stdout_sink}
SINK_NAMES = tuple(SINKS)
