"""Atomic file replacement, shared by note writes and the watcher's spool."""

from __future__ import annotations

import errno
import os
import re
from contextlib import suppress
from typing import NamedTuple

#: Temporary files end with this, so that scans and clean-ups can tell them from real files.
TEMP_SUFFIX = ".amem-tmp"
#: `.<name>.<pid>-<8 hex>.amem-tmp`; files written before the pid was recorded have only the hex part.
#: (compiled by re on first use: only a scan that meets a temporary file asks)
_TEMP_NAME = r"^\.(?P<name>.+)\.(?:(?P<pid>\d+)-)?[0-9a-f]{8}" + re.escape(TEMP_SUFFIX) + "$"


def is_temporary(name: str) -> bool:
    return name.endswith(TEMP_SUFFIX)


class Temporary(NamedTuple):
    """What a temporary file's name says: the file it was going to replace, and the writer's pid."""

    target: str
    pid: int | None


def parse_temporary(path: str) -> Temporary | None:
    """The target and writer of the temporary file at `path`, or None when it is not one of amem's."""
    folder, name = os.path.split(path)
    match = re.match(_TEMP_NAME, name)
    if match is None:
        return None
    pid = match.group("pid")
    return Temporary(os.path.join(folder, match.group("name")), int(pid) if pid else None)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine (it may belong to another user)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def atomic_replace(target: str, data: bytes, mode: int | None) -> None:
    """Write `data` to a temporary file beside `target`, flush it to disk, then rename it over `target`.
    Readers see the old file or the new one, never a mix; the temporary file never outlives a failure."""
    folder, name = os.path.split(target)
    # The writer's pid in the name lets a clean-up tell a crashed writer's file from a live one's.
    tmp = os.path.join(folder, f".{name}.{os.getpid()}-{os.urandom(4).hex()}{TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
