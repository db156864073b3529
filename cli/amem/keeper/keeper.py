"""The index keeper: one process per vault that keeps its index fresh from file-system events, so that
other amem processes need not stat every note to know the index is current. The protocol it serves, and
its client side, are in `amem.keeperproto.client`.

The cookie folder is a dot-folder with its own `.gitignore` (`*`), so neither the index nor git sees it.
It must be a real folder inside the vault: the keeper holds it open by descriptor and commands open it with
O_NOFOLLOW (see `amem.keeper.folder`), so a symlink a sync brings under its name is never followed.
The keeper watches the folders the index walks (see `_IndexRules`), with the watcher's tree machinery:
folders the index skips get no watch at all.
"""

from __future__ import annotations

import _thread
import contextlib
import errno
import fcntl
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import WatchError
from ..keeperproto.client import (
    COOKIE_SUFFIX,
    INFO_FILE,
    LOCK_FILE,
    SOCKET_FILE,
    SOCKET_PATH_MAX,
    SYNC_DIR,
    applying,
    confirmations,
    confirmed,
)
from ..report import Progress, Reporter

if TYPE_CHECKING:
    import queue
    import socket
    import threading
    from collections.abc import Callable

    from ..config import Config
    from ..fswatch.observer import TreeWatcher
    from ..fswatch.rules import IgnoreRules, WatchedRoot
    from .embedder import BackgroundEmbedder
    from .folder import KeeperFolder
    from .requests import After, CommandRequest, RankRequest

    #: How a keeper answers commands (`amem.ops.answers.answer`, handed down by whoever starts it): the
    #: keeper's config, the request, and the lock its rankings share.
    Answers = Callable[[Config, CommandRequest, threading.Lock], tuple[dict[str, Any], str | None, After]]

#: Ranking connections served at once; one more is told at once that the keeper is busy.
MAX_CLIENTS = 128

#: An absolute path left in a message (after the vault's and the cache's): at the start or after a
#: space, a quote or a bracket.
_ABSOLUTE = re.compile(r"""(^|[\s'"(\[])/[^\s'"()\[\]]+""")

# --- the keeper --------------------------------------------------------------------------------------


class Keeper:
    """Keeps one vault's index fresh until stopped. `start()` raises WatchError when another keeper runs
    for the vault or the vault cannot be watched."""

    def __init__(self, config: Config, reporter: Reporter | None = None, answers: Answers | None = None) -> None:
        self.config = config
        #: what answers the commands that ask (see `amem.keeperproto.ask`); None: they answer themselves
        self.answers = answers
        self.root = os.path.abspath(config.vault_root)
        #: every warning of the keeper's (the watcher's, the index's, the model's) names no host path
        self.reporter: Reporter = VaultWords(reporter or Reporter(), self.root, str(config.cache_dir))
        self.extensions = tuple(e.lower() for e in config.extensions)
        self._lock_fd: int | None = None
        self._tree: TreeWatcher | None = None
        import queue

        self._events: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        #: a change the events cannot name (overflow, a folder moved): walk the whole vault next time
        self._dirty = False
        self.applied = 0
        self._listener: socket.socket | None = None
        self._server: threading.Thread | None = None
        self._closing = False
        import threading

        #: one ranking at a time: the model and the vectors it keeps are shared
        self._ranking = threading.Lock()
        #: the keeper's own folder in the vault, open by descriptor from start() to stop()
        self._folder: KeeperFolder | None = None
        #: embeds in the background when the semantic model is too slow for searches to (keeper/embedder)
        self._embedder: BackgroundEmbedder | None = None

    # --- life ---------------------------------------------------------------------------------------

    def claim(self) -> None:
        """Become the vault's one keeper (before anything else is done); WatchError when another is."""
        if self._lock_fd is not None:
            return
        cache = self.config.cache_dir
        cache.mkdir(parents=True, exist_ok=True)
        fd = os.open(cache / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise WatchError(f"another amem keeper (pid {_keeper_pid(cache)}) is keeping this vault's index") from None
        self._lock_fd = fd
        with contextlib.suppress(OSError):
            (cache / INFO_FILE).unlink()  # a killed keeper's: commands must not wait for it

    def start(self) -> dict[str, int]:
        """Claim the vault, watch it, bring the index up to date; return the index's stats."""
        from ..fswatch.rules import WatchedRoot

        self.claim()
        confirmations()
        cache = self.config.cache_dir
        try:
            from .folder import KeeperFolder

            self._folder = folder = KeeperFolder.open(self.root, self.reporter)
            self._tree = _tree_watcher(self._on_path, self._on_folder, self._on_warning)
            self._tree.add_root(WatchedRoot(path=self.root, project="", rules=_index_rules(self.config, self.root)))
            self._tree.start()
            stats = self._apply(None)  # after the watches are on: no change falls in between
            for name in folder.cookies():  # left by commands that gave up waiting
                folder.discard(name)
            from ..index.index import VaultIndex

            described: dict[str, Any] = {
                "pid": os.getpid(),
                "settings": VaultIndex(self.config)._settings(),
                "vault": self.root,
                "model": self.config.semantic_model,  # searches of another semantic.model rank themselves
            }
            if self._listen():
                described["socket"] = SOCKET_FILE
                if self.answers is not None:
                    from .. import __version__
                    from ..keeperproto.ask import ANSWERS

                    described.update(answers=ANSWERS, amem=__version__)
            (cache / INFO_FILE).write_text(json.dumps(described), encoding="utf-8")
        except OSError as exc:
            self.stop()
            raise WatchError(f"cannot keep the index of this vault: {exc.strerror or type(exc).__name__}") from None
        except BaseException:
            self.stop()
            raise
        import threading

        self._thread = threading.Thread(target=self._run, name="amem-index-keeper", daemon=True)
        self._thread.start()
        self._start_embedding()
        if self._listener is not None:
            self._server = threading.Thread(target=self._serve, name="amem-index-keeper-ranking", daemon=True)
            self._server.start()
        return stats

    def stop(self) -> None:
        """Stop watching, say so (keeper.json goes first, then the lock), and leave the vault as found."""
        if self._lock_fd is None:
            return
        with contextlib.suppress(OSError):
            (self.config.cache_dir / INFO_FILE).unlink()
        self._stop_serving()
        if self._embedder is not None:
            self._embedder.stop()
            self._embedder = None
        if self._thread is not None:
            self._events.put(None)
            self._thread.join(timeout=30)
            self._thread = None
        if self._tree is not None:
            self._tree.stop()
            self._tree = None
        os.close(self._lock_fd)  # releases the lock
        self._lock_fd = None
        if self._folder is not None:
            self._folder.remove()
            self._folder = None

    # --- semantic ranking ---------------------------------------------------------------------------

    def _start_embedding(self) -> None:
        from ..semantic.embedding import background

        if background(self.config):
            from .embedder import BackgroundEmbedder

            self._embedder = BackgroundEmbedder(self.config, self.reporter)
            self._embedder.start()

    def _listen(self) -> bool:
        """Listen on the cache folder's socket (bound under another name, made 0600, then renamed into
        place, so that it is never reachable with wider rights); False when its path is too long or it
        cannot be bound, and searches then rank in their own processes."""
        import socket

        final = str(self.config.cache_dir / SOCKET_FILE)
        fresh = final + ".new"
        with contextlib.suppress(OSError):
            os.unlink(final)  # a killed keeper's
        if len(os.fsencode(fresh)) > SOCKET_PATH_MAX:
            return False
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with contextlib.suppress(OSError):
                os.unlink(fresh)
            listener.bind(fresh)
            os.chmod(fresh, 0o600)
            os.rename(fresh, final)
            listener.listen(128)
        except OSError:
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(fresh)
            return False
        self._listener = listener
        return True

    def _stop_serving(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        import socket

        path = str(self.config.cache_dir / SOCKET_FILE)
        self._closing = True
        if self._server is not None:
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:
                wake.settimeout(1.0)
                wake.connect(path)  # accept() returns, sees _closing, and the thread ends
            self._server.join(timeout=30)
            self._server = None
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(path)

    def _serve(self) -> None:
        """Accept ranking requests until stopped, each connection read by a thread of its own (a client
        that sends nothing, or slowly, holds up no other); the ranking itself is one at a time."""
        import threading

        from .requests import refuse_client, serve_client

        listener = self._listener
        slots = threading.BoundedSemaphore(MAX_CLIENTS)
        while listener is not None and not self._closing:
            try:
                conn, _ = listener.accept()
            except OSError as exc:
                if exc.errno in (errno.EBADF, errno.EINVAL):
                    return  # the listener is closed
                time.sleep(0.05)  # out of descriptors, or a client gone before it was accepted
                continue
            if self._closing:
                conn.close()
                return
            if not slots.acquire(blocking=False):
                refuse_client(conn)  # told at once, unread: it ranks itself
                continue

            def client(conn: socket.socket = conn) -> None:
                try:
                    serve_client(conn, self._answer, self._command)
                finally:
                    slots.release()

            try:
                threading.Thread(target=client, name="amem-index-keeper-client", daemon=True).start()
            except RuntimeError:  # no thread to be had
                slots.release()
                conn.close()

    def _answer(self, request: RankRequest) -> dict[str, Any]:
        try:
            with self._ranking:
                ranking = self._rank(request.query, request.depth, request.among)
        except Exception as exc:  # the searcher ranks itself; the keeper keeps running
            return {"error": type(exc).__name__}
        return {"error": "no semantic ranking"} if ranking is None else {"ranking": ranking}

    def _command(self, request: CommandRequest) -> tuple[dict[str, Any], str | None, After]:
        if self.answers is None:
            return {"error": "this keeper answers no commands"}, None, None
        try:
            return self.answers(self.config, request, self._ranking)
        except Exception as exc:  # the command answers itself; the keeper keeps running
            return {"error": type(exc).__name__}, None, None

    def _rank(self, query: str, depth: int, among: set[str] | None) -> list[tuple[str, float]] | None:
        """What a search would rank in its own process: the model loaded (once), the vectors brought up to
        date with the index and kept in memory, then `semantic.rank`. On an index kept open between
        requests, as searches keep theirs (`index.kept`), so that what a connection remembers of an
        unchanged database (the vectors' coverage, a join of every note) is not computed again each time."""
        from ..index import kept
        from ..search.fused import for_search
        from ..semantic import semantic

        semantic.KEEP_VECTORS = kept.KEEP_INDEX = True
        index = kept.take_index(self.config, self.reporter)
        try:
            ranker = for_search(index, self.reporter)
            if ranker.embedder is None:
                return None
            return semantic.rank(index.conn, ranker.embedder, query, depth, among=among)
        finally:
            kept.give_back(index)

    # --- events -------------------------------------------------------------------------------------

    def _on_path(self, root: WatchedRoot, path: str) -> None:
        self._events.put(path)

    def _on_folder(self, path: str) -> None:
        # A folder created, deleted or moved: the notes it took away are not named by any event.
        self._dirty = True
        self._events.put("")

    def _on_warning(self, message: str) -> None:
        self._dirty = True  # the watcher lost track of something: trust only a walk
        self.reporter.warn(message)

    def _run(self) -> None:
        import queue

        folder = self._folder
        assert folder is not None
        while True:
            batch = [self._events.get()]
            with contextlib.suppress(queue.Empty):
                while len(batch) < 100_000:
                    batch.append(self._events.get_nowait())
            cookies, notes = self._sorted(batch, folder)
            try:
                if notes or self._dirty:
                    self._apply(None if self._dirty else notes)
            except Exception as exc:  # keep running: the next change or cookie tries again
                self._dirty = True
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{type(exc).__name__}: {exc}"
                self.reporter.warn(f"the index keeper could not update the index: {reason}")
                cookies = []  # unconfirmed: the commands waiting walk the vault themselves
            for cookie in cookies:
                folder.discard(cookie)
            if cookies:
                confirmed()  # a command of this process waiting for one looks again at once
            if None in batch:
                return

    def _sorted(self, batch: list[str | None], folder: KeeperFolder) -> tuple[list[str], set[str]]:
        """The cookies (names in the keeper's folder, still there) and the notes (ids) a batch of events
        names; a folder's event ("") has set _dirty, the stop (None) is the caller's."""
        from ..index.scan import is_utf8

        cookies: list[str] = []
        notes: set[str] = set()
        for path in batch:
            if not path:
                continue
            rel = os.path.relpath(path, self.root).replace(os.sep, "/")
            if rel.startswith(SYNC_DIR + "/"):
                name = rel[len(SYNC_DIR) + 1 :]
                if name.endswith(COOKIE_SUFFIX) and "/" not in name and folder.has(name):
                    cookies.append(name)
            elif rel.lower().endswith(self.extensions) and is_utf8(rel):  # else no scan lists it
                notes.add(rel)
        return cookies, notes

    def _apply(self, notes: set[str] | None) -> dict[str, int]:
        """Bring the index up to date: exactly these notes (vault-relative ids the events named), or, when
        None, the whole vault by a walk. Returns the index's stats after a walk."""
        from ..index.index import VaultIndex

        self._dirty = False
        index = VaultIndex(self.config, self.reporter)
        applying.add(_thread.get_ident())
        try:
            if notes is None:
                index.refresh(thorough=True)
            else:
                index.update(notes)
            self.applied += 1
            if self._embedder is not None:
                self._embedder.kick()
            return index.stats() if notes is None else {}
        finally:
            applying.discard(_thread.get_ident())
            index.close()


class VaultWords(Reporter):
    """Hands warnings on with every host path replaced: a path in the vault by its vault-relative id, the
    vault itself and the cache folder by those words, any other absolute path by "a path outside the
    vault". A keeper runs for days; its log is read by people the host's layout is none of."""

    def __init__(self, inner: Reporter, root: str, cache: str) -> None:
        self.inner = inner
        places: list[tuple[str, str]] = []
        for path, words in ((root, "the vault"), (cache, "the cache folder")):
            for spelling in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
                places.append((spelling, words))
        places.sort(key=lambda place: -len(place[0]))  # the cache folder may lie inside the vault
        self._places = places

    def _plain(self, message: str) -> str:
        for path, words in self._places:
            if words == "the vault":
                message = message.replace(path + os.sep, "")
            message = re.sub(re.escape(path) + r"(?=$|[/\s'\"])(?:/[^\s'\"]*)?", words, message)
        return _ABSOLUTE.sub(r"\1a path outside the vault", message)

    def warn(self, message: str) -> None:
        self.inner.warn(self._plain(message))

    def progress(self, label: str, total: int) -> Progress:
        return self.inner.progress(label, total)


def _keeper_pid(cache: Path) -> str:
    try:
        return str(json.loads((cache / INFO_FILE).read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"


def _tree_watcher(on_path: Any, on_folder: Any, warn: Any) -> TreeWatcher:
    """The watcher's tree (one inotify instance on Linux, so that one queue orders every event), telling
    the keeper about folder changes too."""
    import sys

    from ..fswatch.observer import InotifyTree, WatchdogTree

    class KeeperTree(InotifyTree):
        def _handle_folder(self, root: WatchedRoot, path: str, rel: str, mask: int, cookie: int) -> None:
            super()._handle_folder(root, path, rel, mask, cookie)
            on_folder(path)

    if sys.platform.startswith("linux"):
        try:
            return KeeperTree(on_path, warn)
        except (ImportError, OSError) as exc:
            warn(f"inotify is not available ({exc}); using watchdog's recursive observer")
    return WatchdogTree(on_path, warn)


def _index_rules(config: Config, root: str) -> IgnoreRules:
    """The watcher's ignore rules, answered by the index's walk: a folder is watched exactly when the index
    lists it (not .git, node_modules, .obsidian, an excludeDirs name, a dot-folder unless indexHiddenDirs,
    or a name that is not UTF-8), plus the keeper's cookie folder; files are all reported, the keeper sorts
    them. (The watcher's own defaults would skip folders the index lists, such as build/ and dist/.)"""
    from ..fswatch.rules import IgnoreRules
    from ..index.scan import ALWAYS_SKIPPED, is_utf8

    skipped = set(ALWAYS_SKIPPED) | set(config.exclude_dirs)
    hidden = bool(config.index_hidden_dirs)

    class IndexRules(IgnoreRules):
        def is_ignored(self, rel: str, *, is_dir: bool) -> bool:
            if not is_dir or rel == SYNC_DIR:
                return False
            name = rel.rsplit("/", 1)[-1]
            return name in skipped or (name.startswith(".") and not hidden) or not is_utf8(name)

    return IndexRules(root, use_gitignore=False)
