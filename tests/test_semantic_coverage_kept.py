"""The vectors' coverage is a function of the database's content: a kept connection that asks again while
nothing changed gets the last answer without the join of every note with its vectors, and any change, by
another connection or by its own, is seen at once; a search's temporary scores are no change."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from amem.config import load_config
from amem.index.index import VaultIndex
from amem.report import Reporter
from amem.search.query import search
from amem.semantic import vectors
from tests.conftest import write_file


def test_a_kept_connection_reuses_its_coverage_until_the_database_changes(vault: Path) -> None:
    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "coffee.md", "# Coffee\n\nThe espresso machine needs descaling.\n")
    config = load_config()
    assert search(config, "token", semantic=True)["semantic"] == "ok"  # static: embedded inline
    index = VaultIndex(config, Reporter())
    try:
        conn = index.conn
        model = conn.execute("SELECT value FROM semantic_meta WHERE key = 'model'").fetchone()[0]
        joins: list[str] = []
        conn.set_trace_callback(lambda sql: joins.append(sql) if "JOIN semantic_vectors" in sql else None)
        assert vectors.coverage(conn, model) == 1.0 and len(joins) == 1
        assert vectors.coverage(conn, model) == 1.0 and len(joins) == 1  # nothing changed
        assert vectors.coverage(conn, "another model") == 0.0 and len(joins) == 2  # per model
        # another connection's commit (a keeper embedding, a refresh) is seen
        other = sqlite3.connect(index.path)
        with other:
            other.execute("DELETE FROM semantic_vectors WHERE id = 'auth.md'")
        other.close()
        assert vectors.coverage(conn, model) == 0.5 and len(joins) == 3
        # and the connection's own
        with conn:
            conn.execute("DELETE FROM semantic_vectors WHERE id = 'coffee.md'")
        assert vectors.coverage(conn, model) == 0.0 and len(joins) == 4
        # a search's temporary scores, said to be so, are no change; unsaid, the coverage is asked again
        changes = conn.total_changes
        conn.execute("CREATE TEMP TABLE scores (doc INTEGER)")
        conn.execute("INSERT INTO scores VALUES (1)")
        vectors.temporary_writes_since(conn, changes)
        assert vectors.coverage(conn, model) == 0.0 and len(joins) == 4
        conn.execute("INSERT INTO scores VALUES (2)")
        assert vectors.coverage(conn, model) == 0.0 and len(joins) == 5
    finally:
        index.close()
