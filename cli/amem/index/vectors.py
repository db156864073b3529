"""The vectors' bookkeeping against today's index, in SQL: which notes need embedding, which rows go, and
how much of the vault the stored vectors cover. Imported by `semantic` and `embedding`; imports neither."""

from __future__ import annotations

import sqlite3

#: A note's stamp from today's index: anything that makes the index read the note again changes it.
_STAMP = "n.mtime_ns || ':' || n.size || ':' || coalesce(n.digest, '')"


def index_fingerprint(conn: sqlite3.Connection) -> str | None:
    """A digest that changes whenever today's index changes a note: the (mtime, size) snapshot of every note
    (its base and delta, see snapshot.py), and the content digests of the notes too recent to trust their
    mtime. None when there is no snapshot to trust (an interrupted refresh left changes pending)."""
    from ..digest import sha1_hex
    from .snapshot import stored_bytes

    state = stored_bytes(conn)
    if state is None:
        return None
    racy = conn.execute("SELECT id, digest FROM notes WHERE digest IS NOT NULL ORDER BY id").fetchall()
    return sha1_hex(state + repr(racy).encode("utf-8"))


def index_changes(conn: sqlite3.Connection, model: str) -> tuple[list[tuple[str, str]], list[str]]:
    """What `sync` would find by comparing index_stamps with the stored rows of `model`, computed by SQLite."""
    stale = conn.execute(
        f"SELECT n.id, {_STAMP} FROM notes n LEFT JOIN semantic_vectors v ON v.model = ? AND v.id = n.id"
        f" WHERE n.problem IS NULL AND (v.stamp IS NULL OR v.stamp != {_STAMP}) ORDER BY n.id",
        (model,),
    ).fetchall()
    gone = conn.execute(
        "SELECT v.id FROM semantic_vectors v LEFT JOIN notes n ON n.id = v.id AND n.problem IS NULL"
        " WHERE v.model = ? AND n.id IS NULL",
        (model,),
    ).fetchall()
    return [(row[0], row[1]) for row in stale], [row[0] for row in gone]


#: A row stamped while its note was racily recent (the stamp ends in the note's digest), of a note whose
#: digest has since been cleared with its mtime and size unchanged: the index cleared the digest only after
#: reading the same content again, so the vectors are still the note's.
_SETTLED = "(n.digest IS NULL AND v.stamp LIKE n.mtime_ns || ':' || n.size || ':%')"


def coverage(conn: sqlite3.Connection, model: str) -> float:
    """The share of the index's readable notes whose vectors of `model` are up to date (0..1, rounded to
    four places; 1 for an empty vault)."""
    total = conn.execute("SELECT count(*) FROM notes WHERE problem IS NULL").fetchone()[0]
    if not total:
        return 1.0
    try:
        done = conn.execute(
            f"SELECT count(*) FROM notes n JOIN semantic_vectors v ON v.model = ? AND v.id = n.id"
            f" WHERE n.problem IS NULL AND (v.stamp = {_STAMP} OR {_SETTLED})",
            (model,),
        ).fetchone()[0]
    except sqlite3.OperationalError:  # no vectors table yet
        return 0.0
    return round(int(done) / int(total), 4)


def stored_coverage(conn: sqlite3.Connection) -> float:
    """`coverage` of the model whose vectors the database holds (the one its meta names), 0 with none."""
    try:
        row = conn.execute("SELECT value FROM semantic_meta WHERE key = 'model'").fetchone()
    except sqlite3.OperationalError:
        return 0.0
    return coverage(conn, row[0]) if row else 0.0
