"""The watcher as a whole: options from the config, roots, the tree watcher, the debounce, the sinks.

`WatchOptions.from_config` reads the watch the config describes (flags, environment and config files are
already laid over each other by the config loader); `Watcher` runs one watch; `run_watch` is what
`amem watch` calls: it runs until SIGINT/SIGTERM and then stops cleanly.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import UsageError, WatchError
from ..fswatch.rules import IgnoreRules, WatchedRoot
from ..paths import cache_home, is_inside, state_home
from .debounce import Debouncer
from .observation import SessionIds, git_toplevel, observe_path, project_name

if TYPE_CHECKING:
    from ..config import Config
    from ..fswatch.observer import TreeWatcher
    from .sinks import Sink

Log = Callable[[str], None]

#: How often (seconds) a running watcher looks whether a stop signal came.
STOP_POLL = 0.2

NO_ROOTS = (
    "no folders to watch: give DIR arguments, set AGENTMEMORY_FS_WATCH_DIRS (comma-separated), "
    "or list watch.dirs in the config"
)


@dataclass(frozen=True)
class WatchOptions:
    roots: tuple[str, ...]
    sinks: tuple[str, ...]
    url: str
    secret: str | None = None
    project: str | None = None
    session_id: str | None = None
    ignore: tuple[str, ...] = ()
    allow_binary: bool = False
    debounce_ms: int = 500
    use_gitignore: bool = True
    #: amem's own folders, never observed: the vault, its state (the spool) and its cache.
    excluded: tuple[str, ...] = ()
    spool_dir: Path = field(default_factory=lambda: state_home() / "amem" / "spool")
    retry_initial: float = 0.5
    retry_max: float = 30.0
    #: how long a stopping watcher keeps sending what is queued while the server answers
    drain_timeout: float = 3.0
    backend: str = "auto"

    @classmethod
    def from_config(cls, config: Config, *, use_gitignore: bool = True) -> WatchOptions:
        """The watch `config` describes; load_config has already laid the command's flags over it."""
        watch = config.watch
        if not watch.dirs:
            raise UsageError(NO_ROOTS)
        return cls(
            roots=watch.dirs,
            sinks=watch.effective_sinks,
            url=watch.server_url,
            secret=watch.secret,
            project=watch.project,
            session_id=watch.session_id,
            ignore=watch.ignore,
            allow_binary=watch.allow_binary,
            debounce_ms=watch.debounce_ms,
            use_gitignore=use_gitignore,
            excluded=(str(config.vault_root), str(state_home() / "amem"), str(cache_home() / "amem")),
        )


@dataclass
class WatchSummary:
    observed: int
    sinks: dict[str, dict[str, int]]
    roots: list[str]
    #: stdout's reader went away (`amem watch --sink stdout | head -1`)
    stdout_closed: bool = False

    def line(self) -> str:
        parts = [f"{self.observed} observed"]
        for name, stats in self.sinks.items():
            parts.append(f"{name}: " + ", ".join(f"{v} {k}" for k, v in stats.items()))
        return "watch stopped: " + "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"observed": self.observed, "sinks": self.sinks, "roots": self.roots}


class Watcher:
    """One running watch. `start()` attaches the roots and starts the sinks; `stop()` flushes and returns
    the summary. Observations can be followed with `on_observation` (tests, benchmarks)."""

    def __init__(
        self,
        options: WatchOptions,
        *,
        config: Config,
        stdout: TextIO | None = None,
        log: Log | None = None,
        warn: Log | None = None,
    ) -> None:
        from ..output import info
        from ..output import warn as warn_line

        self.options = options
        self.config = config
        self.log = log or info
        self.warn = warn or warn_line
        self.stdout = stdout
        self.sessions = SessionIds(options.session_id)
        self.roots: list[WatchedRoot] = []
        self.observed = 0
        self.on_observation: Callable[[dict[str, Any]], None] | None = None
        self.stop_requested = threading.Event()
        self._sinks: list[Sink] = []
        self._tree: TreeWatcher | None = None
        self._debouncer: Debouncer | None = None
        self._count_lock = threading.Lock()
        #: Paths whose pending burst created them (flushed as new files).
        self._created: set[tuple[WatchedRoot, str]] = set()
        self._started = False

    # --- start ----------------------------------------------------------------------------------------

    def start(self) -> None:
        from ..fswatch.observer import make_tree_watcher

        self._tree = tree = make_tree_watcher(
            self._on_path, self.warn, self.options.backend, on_created=self._on_created
        )
        failures: list[str] = []
        for raw in self.options.roots:
            reason = self._attach(tree, raw)
            if reason:
                failures.append(reason)
                self.warn(f"not watching {reason}")
        if not self.roots:
            tree.stop()
            detail = "; ".join(failures) or "none given"
            raise WatchError(f"could not watch any of the configured roots: {detail}", reasons=failures)

        self._sinks = self._make_sinks()
        for sink in self._sinks:
            try:
                sink.start()
            except OSError as exc:  # e.g. the spool folder cannot be created
                tree.stop()
                for started in self._sinks[: self._sinks.index(sink)]:
                    started.close()
                self._sinks = []
                raise WatchError(f"cannot start the {sink.name} sink: {exc}") from None
        self._debouncer = Debouncer(
            self.options.debounce_ms / 1000.0,
            self._flush,
            on_error=lambda exc: self.warn(f"change not observed: {exc}"),
        )
        self._debouncer.start()
        tree.start()
        self._started = True

        for root in self.roots:
            self.log(
                f"watching {root.path} (project {root.project}, {root.folders} folder(s))"
                if tree.watch_count is not None
                else f"watching {root.path} (project {root.project})"
            )
        if tree.watch_count is not None:
            self.log(f"{tree.watch_count} OS watch(es) in use; ignored folders are not watched")
        self.log(
            "observations go to " + ", ".join(s.describe() for s in self._sinks) + f"; session {self.sessions.current}"
        )

    def _attach(self, tree: TreeWatcher, raw: str) -> str | None:
        """Attach one root; return why it could not be, or None."""
        path = os.path.normpath(os.path.abspath(raw))
        if not os.path.exists(path):
            return f"{path}: no such directory"
        if not os.path.isdir(path):
            return f"{path}: not a directory"
        for other in self.roots:
            if other.path == path:
                return None  # given twice: once is enough
            if is_inside(path, other.path) or is_inside(other.path, path):
                return f"{path}: overlaps the watched root {other.path}"
        toplevel = git_toplevel(path)
        rules = IgnoreRules(
            path,
            patterns=self.options.ignore,
            use_gitignore=self.options.use_gitignore,
            excluded=self.options.excluded,
            git_toplevel=toplevel,
        )
        if rules.root_excluded:
            return f"{path}: it is amem's own vault or state folder, whose changes amem makes itself"
        root = WatchedRoot(path=path, project=self.options.project or project_name(path, toplevel), rules=rules)
        try:
            tree.add_root(root)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                return f"{path}: the inotify watch limit is reached (raise fs.inotify.max_user_watches)"
            return f"{path}: {exc.strerror or exc}"
        self.roots.append(root)
        return None

    def _make_sinks(self) -> list[Sink]:
        from .sinks import SINKS

        return [SINKS[name](self) for name in self.options.sinks]

    # --- the pipeline ---------------------------------------------------------------------------------

    def _on_created(self, root: WatchedRoot, path: str) -> None:
        # A burst that made the file is one observation of a new file, whatever writes followed.
        with self._count_lock:
            self._created.add((root, path))

    def _on_path(self, root: WatchedRoot, path: str) -> None:
        key = (root, path)
        if self._debouncer is not None:
            self._debouncer.touch(key)
        else:
            self._flush(key)

    def _flush(self, key: tuple[WatchedRoot, str]) -> None:
        root, path = key
        with self._count_lock:
            created = key in self._created
            self._created.discard(key)
        # The rules may have changed since the event (a .gitignore edit): ask again at flush time.
        if root.rules.is_path_ignored(root.rel(path)):
            return
        observation = observe_path(root, path, self.sessions.current, self.options.allow_binary, created=created)
        if observation is None:
            return
        with self._count_lock:
            self.observed += 1
        for sink in self._sinks:
            try:
                sink.deliver(observation)
            except Exception as exc:  # one sink's bug must not keep the observation from the others
                self.warn(f"{sink.name} sink failed: {type(exc).__name__}: {exc}")
        if self.on_observation is not None:
            self.on_observation(observation)

    # --- stop -----------------------------------------------------------------------------------------

    @property
    def watch_count(self) -> int | None:
        return self._tree.watch_count if self._tree is not None else None

    def stop(self) -> WatchSummary:
        """Stop watching, flush pending debounced changes into the sinks, close them; undelivered
        observations stay in the spool for the next watcher."""
        if self._started and self._tree is not None:
            self._started = False
            self._tree.stop()
            if self._debouncer is not None:
                self._debouncer.stop(flush_pending=True)
            for sink in self._sinks:
                sink.close(self.options.drain_timeout)
        return WatchSummary(
            self.observed,
            {s.name: s.stats() for s in self._sinks},
            [r.path for r in self.roots],
            stdout_closed=any(getattr(s, "closed", False) for s in self._sinks),
        )


def run_watch(options: WatchOptions, *, config: Config, stdout: TextIO | None = None) -> WatchSummary:
    """Watch until SIGINT, SIGTERM or SIGHUP (or until stdout's reader goes away), then stop cleanly."""
    watcher = Watcher(options, config=config, stdout=stdout)
    previous: dict[int, Any] = {}
    # The handler runs in this thread, which may be inside stop_requested.wait() holding the Event's lock:
    # setting the Event there would wait for that lock for ever. So it only records the signal (no lock),
    # and the wait below looks at the record every STOP_POLL seconds.
    signalled: list[int] = []
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(number, lambda signum, _: signalled.append(signum))
    try:
        watcher.start()
        while not signalled and not watcher.stop_requested.wait(STOP_POLL):
            pass
    finally:
        summary = watcher.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
    watcher.log(summary.line())
    return summary
