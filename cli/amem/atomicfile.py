"""Atomic file replacement, shared by note writes and the watcher's spool."""

from __future__ import annotations

import os
from contextlib import suppress

#: Temporary files end with this, so that scans and clean-ups can tell them from real files.
TEMP_SUFFIX = ".amem-tmp"


def is_temporary(name: str) -> bool:
    return name.endswith(TEMP_SUFFIX)


def atomic_replace(target: str, data: bytes, mode: int | None) -> None:
    """Write `data` to a temporary file beside `target`, flush it to disk, then rename it over `target`.
    Readers see the old file or the new one, never a mix; the temporary file never outlives a failure."""
    folder, name = os.path.split(target)
    tmp = os.path.join(folder, f".{name}.{os.urandom(4).hex()}{TEMP_SUFFIX}")
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
