"""ObservationSpool: the server sink's durable queue, so that delivery is at-least-once.

Layout, under `<state home>/amem/spool/<server key>/` (one folder per server URL, so a restarted watcher
resends to the server the observations were meant for):

- `<instance>/` — one folder per running watcher, held with an exclusive lock on `<instance>/.lock` for the
  process's life. Each observation is one `<time ns>-<pid>-<seq>.json` file, written atomically (temporary
  file, fsync, rename) with mode 0600 because it holds file previews, *before* it is sent, and removed only
  when the server really stored it. A new watcher adopts the folders whose lock nobody holds any more (their
  watcher stopped or was killed) and resends their files, oldest first.
- `failed/` — observations the server rejected for good (400 invalid, 401 unauthorized, …). They are kept,
  not retried: move them back into an instance folder (or any `*.json` into a new watcher's folder) to retry.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import secrets
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..atomicfile import atomic_replace, is_temporary

_LOCK_NAME = ".lock"
FAILED = "failed"


def server_key(url: str) -> str:
    """A folder name for a server URL: readable host and port, plus a hash of the whole URL."""
    digest = hashlib.sha1(url.encode("utf-8")).hexdigest()[:12]
    readable = re.sub(r"^[a-z][a-z0-9+.-]*://", "", url.lower())
    readable = re.sub(r"[^a-z0-9.-]+", "_", readable).strip("_")[:48] or "server"
    return f"{readable}-{digest}"


class SpoolError(OSError):
    pass


class ObservationSpool:
    def __init__(self, base: Path, url: str) -> None:
        self.url = url
        self.base = Path(base) / server_key(url)
        self.failed_dir = self.base / FAILED
        self.instance = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.dir = self.base / self.instance
        self._lock_fd: int | None = None
        self._seq = itertools.count()
        self._write_lock = threading.Lock()

    # --- life cycle -----------------------------------------------------------------------------------

    def open(self) -> list[Path]:
        """Create this watcher's folder, take its lock, adopt orphaned folders; return what is waiting."""
        _make_private_dir(self.base.parent)
        _make_private_dir(self.base)
        _make_private_dir(self.dir)
        self._lock_fd = _lock_file(self.dir / _LOCK_NAME, blocking=True)
        self._adopt_orphans()
        return self.pending()

    def close(self) -> None:
        """Release the folder: removed when empty, otherwise left for the next watcher to adopt."""
        if self._lock_fd is None:
            return
        if not self.pending():
            self._remove_folder(self.dir)
        _unlock(self._lock_fd)
        self._lock_fd = None

    def _adopt_orphans(self) -> None:
        try:
            siblings = [p for p in self.base.iterdir() if p.is_dir() and p.name not in (FAILED, self.instance)]
        except OSError:
            return
        for folder in siblings:
            try:
                fd = _lock_file(folder / _LOCK_NAME, blocking=False)
            except FileNotFoundError:
                fd = None  # a folder without a lock file (being created, or the watcher was killed early)
                if not _old_enough(folder):
                    continue
            except BlockingIOError:
                continue  # its watcher is alive
            try:
                for item in folder.iterdir():
                    if item.name.endswith(".json"):
                        with suppress(OSError):
                            os.replace(item, self.dir / item.name)
                self._remove_folder(folder)
            finally:
                if fd is not None:
                    _unlock(fd)

    @staticmethod
    def _remove_folder(folder: Path) -> None:
        with suppress(OSError):
            for item in folder.iterdir():
                if item.name == _LOCK_NAME or is_temporary(item.name):
                    with suppress(OSError):
                        item.unlink()
            folder.rmdir()

    # --- the queue ------------------------------------------------------------------------------------

    def pending(self) -> list[Path]:
        """This watcher's spooled observations, oldest first (file names start with a ns timestamp)."""
        try:
            names = sorted(n for n in os.listdir(self.dir) if n.endswith(".json"))
        except OSError:  # not created (yet), or not creatable
            return []
        return [self.dir / n for n in names]

    def put(self, observation: dict[str, Any]) -> Path:
        """Write one observation durably; only then may it be sent."""
        with self._write_lock:
            name = f"{time.time_ns():020d}-{os.getpid()}-{next(self._seq):08d}.json"
        path = self.dir / name
        atomic_replace(str(path), _encode(observation), 0o600)
        return path

    def rewrite(self, path: Path, observation: dict[str, Any]) -> None:
        atomic_replace(str(path), _encode(observation), 0o600)

    @staticmethod
    def load(path: Path) -> dict[str, Any] | None:
        """The observation in `path`; None when it is gone. Raises ValueError for a damaged file."""
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        if not isinstance(data, dict):
            raise ValueError(f"{path.name} does not hold an observation")
        return data

    @staticmethod
    def remove(path: Path) -> None:
        with suppress(FileNotFoundError):
            path.unlink()

    def fail(self, path: Path) -> Path:
        """Move an observation the server refused into failed/, where it stays until someone acts."""
        _make_private_dir(self.failed_dir)
        target = self.failed_dir / path.name
        with suppress(FileNotFoundError):
            os.replace(path, target)
        return target

    def count(self) -> int:
        return len(self.pending())

    def failed_count(self) -> int:
        try:
            return sum(1 for n in os.listdir(self.failed_dir) if n.endswith(".json"))
        except OSError:
            return 0


def _encode(observation: dict[str, Any]) -> bytes:
    return json.dumps(observation, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _make_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    with suppress(OSError):
        os.chmod(path, 0o700)


def _old_enough(folder: Path, seconds: float = 60.0) -> bool:
    try:
        return time.time() - folder.stat().st_mtime > seconds
    except OSError:
        return False


def _lock_file(path: Path, *, blocking: bool) -> int:
    """An open descriptor holding an exclusive lock on `path` (released when closed, even by SIGKILL)."""
    flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
    if blocking:
        flags |= os.O_CREAT
    fd = os.open(path, flags, 0o600)
    try:
        try:
            import fcntl
        except ImportError:  # Windows
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        else:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError as exc:
        os.close(fd)
        if not blocking and not isinstance(exc, BlockingIOError):
            raise BlockingIOError(str(exc)) from exc
        raise
    return fd


def _unlock(fd: int) -> None:
    with suppress(OSError):
        os.close(fd)
