"""SQLite helpers the index's modules share: `IN (…)` queries in chunks SQLite's parameter cap accepts, and
what an error of the database says (damage to rebuild from, or a lock or refusal to report)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InternalError


def select_in(conn: sqlite3.Connection, sql: str, values: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
    """Rows of `sql` with its `IN ({})` filled with `values`, in chunks that SQLite's parameter cap accepts."""
    for start in range(0, len(values), 900):
        chunk = values[start : start + 900]
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), chunk)


def run_in(conn: sqlite3.Connection, sql: str, values: Sequence[Any]) -> None:
    """Run `sql` with its `IN ({})` filled with `values`, chunked as in select_in."""
    for start in range(0, len(values), 900):
        chunk = values[start : start + 900]
        conn.execute(sql.format(",".join("?" * len(chunk))), chunk)


#: SQLite result codes that say the file system refused or another process holds a lock: the index
#: may be sound, so it is not thrown away. Every other error means damage.
_NOT_DAMAGE = {3, 5, 6, 7, 8, 9, 10, 13, 14, 15, 23}  # PERM BUSY LOCKED NOMEM READONLY INTERRUPT IOERR FULL …


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """A damaged, foreign or other-layout index, as opposed to one that is locked or cannot be written."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF not in _NOT_DAMAGE
    message = str(exc)
    return not any(word in message for word in ("locked", "busy", "readonly", "disk", "unable to open"))


def busy_or_same(exc: sqlite3.DatabaseError) -> Exception:
    if isinstance(exc, sqlite3.OperationalError) and "unable to open" in str(exc):
        from ..cachedir import cache_variable
        from ..errors import IoError

        return IoError(f"cannot use the cache folder (set by {cache_variable()}): cannot open the vault index there")
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return InternalError(
            "the vault index is locked by another amem process that has not finished in 30 s; try again"
        )
    return exc
