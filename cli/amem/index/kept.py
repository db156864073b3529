"""Open indexes kept between operations by a process that lives on (the keeper, `amem mcp`, `amem batch`):
an operation takes an index of its vault kept open by an earlier one (its connection, its page cache), or a
new one, and gives it back to be kept (at most KEPT, each used by one operation at a time, reused only while
its file is still the index's) or closed."""

from __future__ import annotations

import _thread
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config
    from ..report import Reporter
    from .index import VaultIndex

#: Set by long-lived processes: an operation leaves its index open for the next one.
KEEP_INDEX = False
KEPT = 4
_kept: list[tuple[VaultIndex, tuple[int, int]]] = []
_kept_lock = _thread.allocate_lock()


def take_index(config: Config, reporter: Reporter | None = None) -> VaultIndex:
    """An index of this vault kept open by an earlier operation (KEEP_INDEX), when its file is still the
    index's (not replaced by a rebuild meanwhile); a new one otherwise."""
    from .index import VaultIndex

    index = VaultIndex(config, reporter)
    settings = index._settings()
    with _kept_lock:
        for i, (kept, identity) in enumerate(_kept):
            if kept.file == index.file and kept._settings() == settings:
                del _kept[i]
                if _identity(kept.file) == identity:
                    kept.config, kept.reporter = config, index.reporter
                    return kept
                kept.close()
                break
    return index


def give_back(index: VaultIndex) -> None:
    """Keep the index open for the next operation (KEEP_INDEX: at most KEPT of them), or close it."""
    identity = _identity(index.file) if KEEP_INDEX and index._conn is not None else None
    if identity is not None:
        with _kept_lock:
            if len(_kept) < KEPT:
                _kept.append((index, identity))
                return
    index.close()


def _identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The file's device and inode: an open connection keeps its file's inode from being reused, so the
    same identity means the same file."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino
