"""What amem last wrote of each note, recorded in the index's `seen` table by a write, which needs no more
of the index: no schema check, no refresh, none of the link or search modules.

The row goes straight into the existing database. A database that is missing, damaged or of another layout
is left to `VaultIndex`, which builds it again first; a database of other settings takes the row and keeps
it when the next refresh builds the other tables again for the same vault.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

from .schema import FILE

if TYPE_CHECKING:
    from ..config import Config

#: As long as `VaultIndex` waits for another process's transaction.
BUSY_TIMEOUT = 30


def remember_written(config: Config, note_id: str, version: str) -> None:
    """Record what amem wrote, so that `read` does not call amem's own write an external change."""
    path = os.path.join(config.cache_folder, FILE)
    if os.path.isfile(path):
        try:
            _insert(path, note_id, version)
            return
        except sqlite3.DatabaseError as exc:
            from .index import _busy_or_same, _is_damage

            if not _is_damage(exc):
                raise _busy_or_same(exc) from None
    from .index import VaultIndex  # no index yet, or a damaged one: built again, then the row

    index = VaultIndex(config)
    try:
        index.mark_seen(note_id, version)
    finally:
        index.close()


def _insert(path: str, note_id: str, version: str) -> None:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")  # a cache, as VaultIndex opens it
        conn.execute("INSERT OR REPLACE INTO seen (id, version) VALUES (?, ?)", (note_id, version))
    finally:
        conn.close()
