"""The vectors' bookkeeping against today's index, in SQL: which notes need embedding, which rows go, and
how much of the vault the stored vectors cover. Imported by `semantic` and `embedding`; imports neither."""

from __future__ import annotations

import sqlite3

#: A note's stamp from today's index: anything that makes the index read the note again changes it.
_STAMP = "n.mtime_ns || ':' || n.size || ':' || coalesce(n.digest, '')"


#: Values that are functions of a database's content (the fingerprint, a model's coverage), the last
#: computed per connection (a long-lived process keeps a few open) and key: the connection, what says its
#: database is unchanged since (`_unchanged_since`), the key and the value.
_kept: list[tuple[sqlite3.Connection, tuple[int, int], str, object]] = []
_KEPT = 16
_FINGERPRINT = "fingerprint"


def index_fingerprint(conn: sqlite3.Connection) -> str | None:
    """A digest that changes whenever today's index changes a note: the (mtime, size) snapshot of every note
    (its base and delta, see snapshot.py), and the content digests of the notes too recent to trust their
    mtime. None when there is no snapshot to trust (an interrupted refresh left changes pending).

    A function of the database's content alone, so a connection that asks again while its database has not
    changed gets the last answer without reading and hashing the snapshot again (a fused search in the
    keeper or the MCP server: tens of milliseconds at 10,000 notes)."""
    from ..digest import sha1_hex
    from ..index.snapshot import stored_bytes

    mark = _unchanged_since(conn)
    found = _recall(conn, mark, _FINGERPRINT)
    if found is not _UNKNOWN:
        return found  # type: ignore[return-value]
    state = stored_bytes(conn)
    if state is None:
        fingerprint = None
    else:
        racy = conn.execute("SELECT id, digest FROM notes WHERE digest IS NOT NULL ORDER BY id").fetchall()
        fingerprint = sha1_hex(state + repr(racy).encode("utf-8"))
    _remember(conn, mark, _FINGERPRINT, fingerprint)
    return fingerprint


def fingerprint_stands(conn: sqlite3.Connection, fingerprint: str | None) -> None:
    """This connection's writes since its last `index_fingerprint` (the vectors, the sync mark) left the
    notes' state as it was: the fingerprint stands."""
    _remember(conn, _unchanged_since(conn), _FINGERPRINT, fingerprint)


def temporary_writes_since(conn: sqlite3.Connection, changes: int) -> None:
    """This connection wrote only temporary tables (a search's scores, `rank.SCORES`) since its total_changes
    was `changes`: a fingerprint or a coverage that stood then, with no other connection's commit since (its
    data_version the same), stands still, and the next fused search of this connection reuses it."""
    version, now = _unchanged_since(conn)
    if now != changes:
        _kept[:] = [
            (kept, (version, now) if kept is conn and mark == (version, changes) else mark, key, value)
            for kept, mark, key, value in _kept
        ]


#: What `_recall` gives for a value not kept (None is a fingerprint).
_UNKNOWN = object()


def _recall(conn: sqlite3.Connection, mark: tuple[int, int], key: str) -> object:
    for kept, kept_mark, kept_key, value in _kept:
        if kept is conn and kept_mark == mark and kept_key == key and not conn.in_transaction:
            return value
    return _UNKNOWN


def _remember(conn: sqlite3.Connection, mark: tuple[int, int], key: str, value: object) -> None:
    _kept[:] = [entry for entry in _kept if entry[0] is not conn or entry[2] != key][-(_KEPT - 1) :]
    if not conn.in_transaction:
        _kept.append((conn, mark, key, value))


def _unchanged_since(conn: sqlite3.Connection) -> tuple[int, int]:
    """Equal between two calls on one connection only if no connection changed its database in between:
    SQLite's data_version moves with every commit by another connection, total_changes with this one's."""
    version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    return version, conn.total_changes


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
    four places; 1 for an empty vault). A function of the database's content: a connection that asks again
    while its database has not changed gets the last answer (a fused search of a model embedded in the
    background asks every time, and this is a join of every note with its vectors' rows)."""
    mark, key = _unchanged_since(conn), f"coverage {model}"
    share = _recall(conn, mark, key)
    if share is _UNKNOWN:
        share = _coverage(conn, model)
        _remember(conn, mark, key, share)
    return share  # type: ignore[return-value]


def _coverage(conn: sqlite3.Connection, model: str) -> float:
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
