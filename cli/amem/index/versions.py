"""The index files of other schema versions in a vault's cache folder.

Each schema version keeps its own database file (`schema.FILE`; before version 15, `index.sqlite`). An
amem upgraded while an older one still runs (a keeper, an MCP server an agent started hours ago) would
otherwise find the other's layout at every turn and build the whole index again, each time the file
changed hands: seconds at 10,000 notes, a minute at 50,000.

When this version builds its file for the first time, it takes the semantic vectors of this vault's
newest file of another version (they are keyed by note id and the note's bytes, and checked against each
note when next used, so a model need not embed the vault again) and what amem last saw of each note (the
`seen` rows: a read after the upgrade still says `modifiedExternally` of a note changed since), and
removes every other version's file that no process has open; `amem index` (and a keeper as it starts)
removes those that were open then.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3

from .schema import FEATURE_TABLES, FILE

#: What SQLite keeps beside a database file.
SIDE_FILES = ("-wal", "-shm", "-journal")
#: The byte of a WAL database's `-shm` file that every connection holds a read lock on for as long as it
#: is open (SQLite's unix VFS: UNIX_SHM_BASE 120 + UNIX_SHM_DMS 8).
_OPEN_MARK = 128


def other_versions(folder: str) -> list[str]:
    """The index files of other schema versions in the cache folder, the most recently changed first."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = [
        os.path.join(folder, name)
        for name in names
        if name != FILE and (name == "index.sqlite" or (name.startswith("index-") and name.endswith(".sqlite")))
    ]
    return sorted(found, key=_changed, reverse=True)


def _changed(path: str) -> int:
    latest = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            latest = max(latest, os.stat(path + suffix).st_mtime_ns)
    return latest


def adopt(conn: sqlite3.Connection, vault: str, folder: str) -> None:
    """Take the feature tables and the `seen` rows of the newest index of another version that is this
    vault's, into the new database `conn` holds (outside a transaction); then remove every other version's
    file not in use."""
    for path in other_versions(folder):
        if _carry_over(conn, path, vault):
            break
    remove_unused(folder)


def remove_unused(folder: str) -> list[str]:
    """Remove the other versions' index files that no process has open (`amem index` asks too: a file
    still open when this version's was made stays until then); the names of those removed."""
    removed = []
    for path in other_versions(folder):
        if not in_use(path):
            for suffix in ("", *SIDE_FILES):
                with contextlib.suppress(OSError):  # one that cannot be removed stays: it is only a cache
                    os.unlink(path + suffix)
            if not os.path.lexists(path):
                removed.append(os.path.basename(path))
    return removed


def _carry_over(conn: sqlite3.Connection, path: str, vault: str) -> bool:
    """Copy the feature tables and the `seen` rows of the database at `path` when it is this vault's;
    whether it was."""
    try:
        conn.execute("ATTACH DATABASE ? AS other", (path,))
    except sqlite3.DatabaseError:
        return False
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT value FROM other.meta WHERE key = 'settings'").fetchone()
            stored = json.loads(row[0]) if row else None
            if not (isinstance(stored, list) and len(stored) > 1 and stored[1] == vault):
                conn.execute("ROLLBACK")
                return False
            master = conn.execute(  # tables and indexes only: never another file's triggers or views
                "SELECT type, name, sql FROM other.sqlite_master WHERE type IN ('table', 'index') "
                "AND sql IS NOT NULL ORDER BY type DESC"
            ).fetchall()
            present = {name for (name,) in conn.execute("SELECT name FROM main.sqlite_master")}
            for kind, name, sql in master:  # tables first, then their indexes
                if not str(name).startswith(FEATURE_TABLES) or name in present:
                    continue
                if not str(sql).startswith(f"CREATE {kind.upper()} "):
                    raise ValueError(f"not a plain {kind}")
                conn.execute(sql)
                if kind == "table":
                    conn.execute(f'INSERT INTO main."{name}" SELECT * FROM other."{name}"')
            columns = {row[1] for row in conn.execute("PRAGMA other.table_info(seen)")}
            if {"id", "version"} <= columns:  # what amem last saw of each note, for modifiedExternally
                conn.execute("INSERT OR IGNORE INTO main.seen (id, version) SELECT id, version FROM other.seen")
            conn.execute("COMMIT")
            return True
        except (sqlite3.DatabaseError, ValueError, TypeError):
            with contextlib.suppress(sqlite3.DatabaseError):
                conn.execute("ROLLBACK")
            return False
    finally:
        with contextlib.suppress(sqlite3.DatabaseError):
            conn.execute("DETACH DATABASE other")


def in_use(path: str) -> bool:
    """Whether a process has the WAL database at `path` open: every open connection holds a read lock on
    a byte of its `-shm` file, which the last one to close removes. Unsure counts as in use."""
    try:
        import fcntl
    except ImportError:  # no such locks here: never remove another's file
        return True
    try:
        fd = os.open(path + "-shm", os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _OPEN_MARK, os.SEEK_SET)
    except OSError:
        return True
    else:
        return False
    finally:
        os.close(fd)  # and with it the lock just taken
