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


def record_written(config: Config, note_id: str, version: str) -> bool:
    """Record what amem wrote in the index as it is; False when there is no index yet or a damaged one,
    which `index.remember_written` builds again first."""
    path = os.path.join(config.cache_folder, FILE)
    if not os.path.isfile(path):
        return False
    try:
        _insert(path, note_id, version)
    except sqlite3.DatabaseError as exc:
        from .sql import busy_or_same, is_damage

        if not is_damage(exc):
            raise busy_or_same(exc) from None
        return False
    return True


def _insert(path: str, note_id: str, version: str) -> None:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")  # a cache, as VaultIndex opens it
        conn.execute("INSERT OR REPLACE INTO seen (id, version) VALUES (?, ?)", (note_id, version))
    finally:
        conn.close()
