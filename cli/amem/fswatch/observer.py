"""Watching folder trees without watching what is ignored.

On Linux, `InotifyTree` keeps one inotify instance with one non-recursive watch per folder that is not
ignored, built on watchdog's inotify bindings. An ignored folder (node_modules, dist, a .gitignore'd
`target/`, the vault) gets no watch at all, and neither does anything below it, so a repository with a huge
node_modules costs nothing for it. Folders created (or moved in) later are watched as they appear and
scanned for files already inside them.

Why not watchdog's recursive schedule: it adds a watch for every folder under the root, ignored or not.
Why not one non-recursive `observer.schedule()` per folder: watchdog runs a thread per scheduled watch
(2,000 folders would be 2,000 threads, each waking up regularly), and older versions open an inotify
instance per watch, which the default limit of 128 per user cannot afford.

Elsewhere (macOS FSEvents, Windows), `WatchdogTree` uses watchdog's native recursive observer, which costs
one OS handle per root however many folders there are, and filters the events with the same rules.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from .rules import WatchedRoot

#: Called with the root and the absolute path of a file that changed.
OnPath = Callable[[WatchedRoot, str], None]
Log = Callable[[str], None]


class TreeWatcher:
    """What the watcher needs from a backend. `on_created`, when set, is also called (before `on_path`)
    for an event that made a new directory entry (IN_CREATE, watchdog's "created"): a new file, as opposed
    to a write or a rename over an existing one."""

    backend = "none"
    on_created: OnPath | None = None

    def _report(self, root: WatchedRoot, path: str, created: bool) -> None:
        if created and self.on_created is not None:
            self.on_created(root, path)
        self.on_path(root, path)

    on_path: OnPath

    def add_root(self, root: WatchedRoot) -> None:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    @property
    def watch_count(self) -> int | None:
        """OS watches in use, when the backend can tell."""
        return None


def make_tree_watcher(
    on_path: OnPath, warn: Log, backend: str = "auto", *, on_created: OnPath | None = None
) -> TreeWatcher:
    tree: TreeWatcher | None = None
    if backend in ("auto", "inotify") and sys.platform.startswith("linux"):
        try:
            tree = InotifyTree(on_path, warn)
        except (ImportError, OSError) as exc:
            if backend == "inotify":
                raise
            warn(f"inotify is not available ({exc}); using watchdog's recursive observer")
    if tree is None:
        tree = WatchdogTree(on_path, warn)
    tree.on_created = on_created
    return tree


# --- Linux ------------------------------------------------------------------------------------------


class InotifyTree(TreeWatcher):
    backend = "inotify"

    def __init__(self, on_path: OnPath, warn: Log) -> None:
        from watchdog.observers import inotify_c as ic

        self._ic: Any = ic  # typed loosely: the bindings' annotations differ between watchdog versions
        c = ic.InotifyConstants
        self.IN_ISDIR = c.IN_ISDIR
        self.IN_CREATE = c.IN_CREATE
        self.IN_DELETE = c.IN_DELETE
        self.IN_MOVED_FROM = c.IN_MOVED_FROM
        self.IN_MOVED_TO = c.IN_MOVED_TO
        self.IN_DELETE_SELF = c.IN_DELETE_SELF
        self.IN_MOVE_SELF = c.IN_MOVE_SELF
        self.IN_IGNORED = c.IN_IGNORED
        self.IN_Q_OVERFLOW = c.IN_Q_OVERFLOW
        #: What a folder's watch reports. Attribute-only changes (chmod, touch -a) are left out: they do not
        #: change what a file says. IN_CLOSE_WRITE marks the end of a save, IN_MODIFY covers writers that keep
        #: a file open; IN_EXCL_UNLINK drops events for files already unlinked; IN_ONLYDIR refuses a file
        #: that replaced the folder meanwhile; IN_DONT_FOLLOW keeps symlinked folders out of the tree.
        self.mask = (
            c.IN_CREATE
            | c.IN_MODIFY
            | c.IN_CLOSE_WRITE
            | c.IN_DELETE
            | c.IN_MOVED_FROM
            | c.IN_MOVED_TO
            | c.IN_DELETE_SELF
            | c.IN_MOVE_SELF
            | c.IN_ONLYDIR
            | c.IN_DONT_FOLLOW
            | c.IN_EXCL_UNLINK
        )
        self._file_events = c.IN_CREATE | c.IN_MODIFY | c.IN_CLOSE_WRITE | c.IN_DELETE | c.IN_MOVED_FROM | c.IN_MOVED_TO
        fd = ic.inotify_init()
        if fd < 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init failed: {os.strerror(err)}")
        os.set_inheritable(fd, False)
        self._fd = fd
        self._wake_r, self._wake_w = os.pipe()
        self.on_path = on_path
        self.warn = warn
        self._lock = threading.RLock()
        self._wd_folder: dict[int, tuple[WatchedRoot, str]] = {}
        self._folder_wd: dict[str, int] = {}
        self._roots: list[WatchedRoot] = []
        #: cookie → (root, old path, time) for folders moved away, matched by a later IN_MOVED_TO.
        self._moved_away: dict[int, tuple[WatchedRoot, str, float]] = {}
        self._thread: threading.Thread | None = None
        self._limit_reported = False
        self._failures_reported = 0
        self._closed = False

    @property
    def watch_count(self) -> int:
        with self._lock:
            return len(self._wd_folder)

    def watched_folders(self) -> list[str]:
        with self._lock:
            return sorted(self._folder_wd)

    def add_root(self, root: WatchedRoot) -> None:
        """Watch the root and every folder under it that is not ignored. Raises OSError when the root itself
        cannot be watched."""
        with self._lock:
            self._roots.append(root)
            root.folders = self._watch_tree(root, root.path, report_files=False)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="amem-watch-inotify", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=10)
        for fd in (self._fd, self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the instance drops all its watches at once

    # --- watches --------------------------------------------------------------------------------------

    def _add_watch(self, folder: str) -> int:
        wd = self._ic.inotify_add_watch(self._fd, os.fsencode(folder), self.mask)
        if wd < 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), folder)
        return int(wd)

    def _watch_tree(
        self,
        root: WatchedRoot,
        top: str,
        *,
        report_files: bool,
        moved_from: tuple[WatchedRoot, str] | None = None,
    ) -> int:
        """Add a watch to `top` and every non-ignored folder below it. The watch goes on before the folder
        is listed, so a file created meanwhile is seen either by the listing or by an event (the debounce
        merges the two). With `report_files`, files found are reported as changes (a folder that appeared
        with content); with `moved_from`, their old paths are reported too (as deletes, since they are gone).
        """
        added = 0
        stack = [top]
        rules = root.rules
        while stack:
            folder = stack.pop()
            try:
                wd = self._add_watch(folder)
            except OSError as exc:
                if folder == top == root.path:
                    raise
                self._report_watch_failure(folder, exc)
                continue
            self._wd_folder[wd] = (root, folder)
            self._folder_wd[folder] = wd
            added += 1
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue
            folder_rel = root.rel(folder) if folder != root.path else ""
            if rules.use_gitignore and any(e.name == ".gitignore" for e in entries):
                rules.load_gitignore(folder_rel)
            for entry in entries:
                rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if not rules.is_ignored(rel, is_dir=True):
                        stack.append(entry.path)
                elif report_files and not rules.is_ignored(rel, is_dir=False):
                    # In a folder just created, a file found is new; in one moved in, it existed before.
                    self._report(root, entry.path, moved_from is None)
                    if moved_from is not None:
                        old_root, old_top = moved_from
                        old_path = old_top + entry.path[len(top) :]
                        if not old_root.rules.is_path_ignored(old_root.rel(old_path)):
                            self.on_path(old_root, old_path)
        return added

    def _unwatch_tree(self, top: str) -> None:
        prefix = top + os.sep
        for folder in [f for f in self._folder_wd if f == top or f.startswith(prefix)]:
            wd = self._folder_wd.pop(folder)
            self._wd_folder.pop(wd, None)
            self._ic.inotify_rm_watch(self._fd, wd)

    def _report_watch_failure(self, folder: str, exc: OSError) -> None:
        if exc.errno == errno.ENOSPC:
            if not self._limit_reported:
                self._limit_reported = True
                self.warn(
                    f"the inotify watch limit is reached; {folder} and other folders are not watched "
                    "(raise fs.inotify.max_user_watches, or ignore more folders)"
                )
        elif exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # gone already: nothing to watch
            # A home folder can hold hundreds of unreadable folders: name a few, not all of them.
            self._failures_reported += 1
            if self._failures_reported <= 5:
                more = (
                    " (further folders that cannot be watched are not logged)" if self._failures_reported == 5 else ""
                )
                self.warn(f"cannot watch {folder}: {exc.strerror}{more}")

    def _reconcile(self, root: WatchedRoot, top: str) -> None:
        """After a .gitignore changed: watch what is no longer ignored, drop what now is."""
        wanted: set[str] = set()
        stack = [top]
        while stack:
            folder = stack.pop()
            wanted.add(folder)
            try:
                with os.scandir(folder) as listing:
                    for entry in listing:
                        if entry.is_dir(follow_symlinks=False):
                            rel = root.rel(entry.path)
                            if not root.rules.is_ignored(rel, is_dir=True):
                                stack.append(entry.path)
            except OSError:
                continue
        prefix = top + os.sep
        for folder in [f for f in self._folder_wd if (f == top or f.startswith(prefix)) and f not in wanted]:
            if folder in self._folder_wd:
                self._unwatch_tree(folder)
        for folder in sorted(wanted - set(self._folder_wd)):
            if folder not in self._folder_wd:
                # Its files did not change by becoming visible: watch them from now on, report nothing.
                self._watch_tree(root, folder, report_files=False)

    # --- events ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while True:
            try:
                ready = poller.poll()  # no timeout: an idle watcher costs no CPU at all
            except InterruptedError:
                continue
            stopping = any(fd == self._wake_r for fd, _ in ready)
            # On the way out too: a change made just before SIGTERM is still read and handed on.
            if any(fd == self._fd for fd, _ in ready) and not self._read_and_handle():
                return
            if stopping:
                return

    def _read_and_handle(self) -> bool:
        """Read and handle one buffer of events; False when the inotify descriptor is unusable."""
        try:
            data = os.read(self._fd, 256 * 1024)
        except (InterruptedError, BlockingIOError):
            return True
        except OSError:
            return False
        offset = 0
        while offset + 16 <= len(data):
            wd, mask, cookie, length = struct.unpack_from("iIII", data, offset)
            name = data[offset + 16 : offset + 16 + length].rstrip(b"\0")
            offset += 16 + length
            try:
                with self._lock:
                    self._handle(wd, mask, cookie, os.fsdecode(name))
            except Exception as exc:  # one odd event must not end the watching
                self.warn(f"watch event not handled: {type(exc).__name__}: {exc}")
        return True

    def _handle(self, wd: int, mask: int, cookie: int, name: str) -> None:
        if mask & self.IN_Q_OVERFLOW:
            self.warn("the kernel's event queue overflowed: some changes were missed; re-scanning folders")
            for root in self._roots:
                self._reconcile(root, root.path)
            return
        if mask & self.IN_IGNORED:
            entry = self._wd_folder.pop(wd, None)  # the folder is gone (or we removed the watch)
            if entry is not None and self._folder_wd.get(entry[1]) == wd:
                del self._folder_wd[entry[1]]
            return
        entry = self._wd_folder.get(wd)
        if entry is None:
            return
        root, folder = entry
        if not name:
            if mask & (self.IN_DELETE_SELF | self.IN_MOVE_SELF) and folder == root.path:
                self.warn(
                    f"{root.path} was {'deleted' if mask & self.IN_DELETE_SELF else 'moved'}; it is no longer watched"
                )
            return
        path = os.path.join(folder, name)
        rel = root.rel(path)
        if mask & self.IN_ISDIR:
            self._handle_folder(root, path, rel, mask, cookie)
            return
        if name == ".gitignore" and root.rules.use_gitignore:
            folder_rel = root.rel(folder) if folder != root.path else ""
            if root.rules.load_gitignore(folder_rel):
                self._reconcile(root, folder)
        if mask & self._file_events and not root.rules.is_ignored(rel, is_dir=False):
            self._report(root, path, bool(mask & self.IN_CREATE))

    def _handle_folder(self, root: WatchedRoot, path: str, rel: str, mask: int, cookie: int) -> None:
        # Folders themselves produce no observation; they only change what is watched.
        if mask & self.IN_MOVED_FROM:
            self._unwatch_tree(path)
            now = time.monotonic()
            self._moved_away = {k: v for k, v in self._moved_away.items() if now - v[2] < 5.0}
            self._moved_away[cookie] = (root, path, now)
        elif mask & (self.IN_CREATE | self.IN_MOVED_TO):
            source = self._moved_away.pop(cookie, None) if mask & self.IN_MOVED_TO else None
            if root.rules.is_ignored(rel, is_dir=True):
                if source is not None:
                    self._report_moved_away(source[0], source[1], path)
                return
            self._watch_tree(root, path, report_files=True, moved_from=(source[0], source[1]) if source else None)
        elif mask & self.IN_DELETE:
            self._unwatch_tree(path)

    def _report_moved_away(self, old_root: WatchedRoot, old_top: str, new_top: str) -> None:
        """A watched folder moved into an ignored place: its files left the watched tree. They can still be
        listed where they are now, which names the old paths to report (as deletes, since they are gone)."""
        for folder, _, files in os.walk(new_top):
            for name in files:
                old_path = old_top + os.path.join(folder, name)[len(new_top) :]
                if not old_root.rules.is_path_ignored(old_root.rel(old_path)):
                    self.on_path(old_root, old_path)


# --- other platforms --------------------------------------------------------------------------------


class WatchdogTree(TreeWatcher):
    backend = "watchdog"

    def __init__(self, on_path: OnPath, warn: Log) -> None:
        from watchdog.observers import Observer

        self.on_path = on_path
        self.warn = warn
        self._observer: Any = Observer()
        self._roots: list[WatchedRoot] = []

    def add_root(self, root: WatchedRoot) -> None:
        handler = _FilteringHandler(root, self)
        self._observer.schedule(handler, root.path, recursive=True)
        self._roots.append(root)

    def start(self) -> None:
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=10)


class _FilteringHandler(FileSystemEventHandler):
    def __init__(self, root: WatchedRoot, tree: TreeWatcher) -> None:
        super().__init__()
        self.root = root
        self.tree = tree

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory:
            return
        paths = [event.src_path]
        if event.event_type == "moved":
            paths.append(event.dest_path)
        for raw in paths:
            path = os.fsdecode(raw)
            if not path:
                continue
            rel = self.root.rel(path)
            if rel.startswith("..") or self.root.rules.is_path_ignored(rel):
                continue
            if os.path.basename(path) == ".gitignore":
                folder_rel = os.path.dirname(rel)
                self.root.rules.load_gitignore(folder_rel)
            self.tree._report(self.root, path, event.event_type == "created" and raw == event.src_path)
