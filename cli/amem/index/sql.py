"""SQLite helpers the index's modules share: `IN (…)` queries in chunks SQLite's parameter cap accepts."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any


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
