"""The vectors' bookkeeping against today's index, in SQL: which notes need embedding, which rows go, and
how much of the vault the stored vectors cover. Imported by `semantic` and `embedding`; imports neither."""

from __future__ import annotations

import sqlite3

#: A note's stamp from today's index: anything that makes the index read the note again changes it.
_STAMP = "n.mtime_ns || ':' || n.size || ':' || coalesce(n.digest, '')"


#: The last fingerprints computed, per connection (a long-lived process keeps a few open): the connection,
#: what says its database is unchanged since (`_unchanged_since`), and the fingerprint.
_fingerprints: list[tuple[sqlite3.Connection, tuple[int, int], str | None]] = []
_FINGERPRINTS_KEPT = 8


def index_fingerprint(conn: sqlite3.Connection) -> str | None:
    """A digest that changes whenever today's index changes a note: the (mtime, size) snapshot of every note
    (its base and delta, see snapshot.py), and the content digests of the notes too recent to trust their
    mtime. None when there is no snapshot to trust (an interrupted refresh left changes pending).

    A function of the database's content alone, so a connection that asks again while its database has not
    changed gets the last answer without reading and hashing the snapshot again (a fused search in the
    keeper or the MCP server: tens of milliseconds at 10,000 notes)."""
    from ..digest import sha1_hex
    from .snapshot import stored_bytes

    mark = _unchanged_since(conn)
    for kept, kept_mark, fingerprint in _fingerprints:
        if kept is conn and kept_mark == mark and not conn.in_transaction:
            return fingerprint
    state = stored_bytes(conn)
    if state is None:
        found = None
    else:
        racy = conn.execute("SELECT id, digest FROM notes WHERE digest IS NOT NULL ORDER BY id").fetchall()
        found = sha1_hex(state + repr(racy).encode("utf-8"))
    _remember(conn, mark, found)
    return found


def fingerprint_stands(conn: sqlite3.Connection, fingerprint: str | None) -> None:
    """This connection's writes since its last `index_fingerprint` (the vectors, the sync mark) left the
    notes' state as it was: the fingerprint stands."""
    _remember(conn, _unchanged_since(conn), fingerprint)


def temporary_writes_since(conn: sqlite3.Connection, changes: int) -> None:
    """This connection wrote only temporary tables (a search's scores, `rank.SCORES`) since its total_changes
    was `changes`: a fingerprint or a coverage that stood then, with no other connection's commit since (its
    data_version the same), stands still, and the next fused search of this connection reuses it."""
    version, now = _unchanged_since(conn)
    if now == changes:
        return
    for kept, (kept_version, kept_changes), fingerprint in _fingerprints:
        if kept is conn and kept_version == version and kept_changes == changes:
            _remember(conn, (version, now), fingerprint)
            break
    _coverages[:] = [
        (kept, (version, now) if kept is conn and mark == (version, changes) else mark, model, share)
        for kept, mark, model, share in _coverages
    ]


def _remember(conn: sqlite3.Connection, mark: tuple[int, int], fingerprint: str | None) -> None:
    _fingerprints[:] = [entry for entry in _fingerprints if entry[0] is not conn][-(_FINGERPRINTS_KEPT - 1) :]
    if not conn.in_transaction:
        _fingerprints.append((conn, mark, fingerprint))


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


#: The last coverages computed, per connection and model, as `_fingerprints` (a fused search of a model
#: embedded in the background asks for it every time: a join of every note with its vectors' rows).
_coverages: list[tuple[sqlite3.Connection, tuple[int, int], str, float]] = []


def coverage(conn: sqlite3.Connection, model: str) -> float:
    """The share of the index's readable notes whose vectors of `model` are up to date (0..1, rounded to
    four places; 1 for an empty vault). A function of the database's content: a connection that asks again
    while its database has not changed gets the last answer."""
    mark = _unchanged_since(conn)
    for kept, kept_mark, kept_model, share in _coverages:
        if kept is conn and kept_mark == mark and kept_model == model and not conn.in_transaction:
            return share
    share = _coverage(conn, model)
    _coverages[:] = [entry for entry in _coverages if entry[0] is not conn or entry[2] != model]
    del _coverages[: max(0, len(_coverages) - (_FINGERPRINTS_KEPT - 1))]
    if not conn.in_transaction:
        _coverages.append((conn, mark, model, share))
    return share


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
