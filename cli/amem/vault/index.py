"""The persistent vault index: which notes exist, their titles, frontmatter and links, kept in SQLite
under the user's cache directory and brought up to date from each note's (path, mtime, size).

`read` uses it for link resolution and backlinks, `search` for ranking, completion for the id list.
Extensions (the search index) keep their own tables in the same database and are updated in the same
transaction, so the whole index always describes one state of the vault.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..output import warn
from .links import LinkResolver, extract_links, normalise_target, resolution_keys
from .notes import note_title, parse_note

#: Bump when the tables or what goes in them change; an index of another version is rebuilt.
SCHEMA_VERSION = 1
ALWAYS_SKIPPED = frozenset({".git", "node_modules", ".obsidian"})
#: Files modified this recently may change again within the file system's timestamp granularity
#: without a visible (mtime, size) change, so their content digest is checked on the next refresh.
RACY_NS = 3_000_000_000

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE notes (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    digest TEXT,               -- set while the file is racily recent (see RACY_NS)
    problem TEXT,              -- why the note could not be indexed (not UTF-8, unreadable), else NULL
    title TEXT NOT NULL DEFAULT '',
    frontmatter TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE links (
    src INTEGER NOT NULL,      -- notes.rowid of the linking note
    seq INTEGER NOT NULL,
    target TEXT NOT NULL,      -- normalised target, heading/block part removed
    resolved TEXT              -- note id the target resolves to, NULL when none
);
CREATE INDEX links_src ON links (src);
CREATE INDEX links_target ON links (target);
CREATE INDEX links_resolved ON links (resolved);
CREATE TABLE seen (id TEXT PRIMARY KEY, version TEXT NOT NULL);
"""


@dataclass(frozen=True)
class IndexedNote:
    """What extensions receive for each note added or changed during a refresh."""

    rowid: int
    id: str
    title: str
    body: str
    frontmatter: dict[str, Any]


@dataclass
class RefreshStats:
    added: int = 0
    changed: int = 0
    removed: int = 0
    rebuilt: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Diff:
    removed: list[tuple[int, str]] = field(default_factory=list)
    to_index: list[str] = field(default_factory=list)
    settled: list[int] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        return bool(self.removed or self.to_index or self.settled)


def _extensions() -> tuple[ModuleType, ...]:
    """Modules that keep tables in the index: each has SCHEMA, add_notes(conn, notes), remove_notes(conn, rowids)."""
    return ()


def scan_vault(config: Any) -> Iterator[tuple[str, str, os.stat_result]]:
    """(id, path, stat) of every indexable note: skips .git, node_modules, .obsidian, other dot-folders
    unless indexHiddenDirs, and excludeDirs at any depth. Symlinked folders are not followed."""
    root = os.path.abspath(config.vault_root)
    extensions = tuple(e.lower() for e in config.extensions)
    excluded = set(config.exclude_dirs)
    hidden = config.index_hidden_dirs
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if name in ALWAYS_SKIPPED or name in excluded or (name.startswith(".") and not hidden):
                        continue
                    stack.append((entry.path, f"{prefix}{name}/"))
                elif name.lower().endswith(extensions):
                    try:
                        stat = entry.stat()
                    except OSError:
                        continue  # deleted during the scan, or a broken symlink
                    if stat.st_mode & 0o170000 == 0o100000:
                        yield f"{prefix}{name}", entry.path, stat


class VaultIndex:
    """One vault's index database. Cheap to open; `refresh()` brings it up to date."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.path: Path = config.cache_dir / "index.sqlite"
        self._conn: sqlite3.Connection | None = None
        self.refreshed = False

    # --- connection ---------------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _settings(self) -> str:
        c = self.config
        return json.dumps([SCHEMA_VERSION, os.path.realpath(c.vault_root), list(c.extensions),
                           list(c.exclude_dirs), c.index_hidden_dirs, [m.__name__ for m in _extensions()]])

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in (1, 2):
            try:
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                row = conn.execute("SELECT value FROM meta WHERE key='settings'").fetchone() \
                    if conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone() else None
                if row is None or row[0] != self._settings():
                    self._create(conn)
                return conn
            except sqlite3.DatabaseError:
                # Corrupt or foreign file: the index is only a cache, so start it again.
                if attempt == 2:
                    raise
                self._discard()
        raise AssertionError("unreachable")

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='settings'").fetchone() \
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone() else None
            if row is not None and row[0] == self._settings():
                conn.execute("COMMIT")  # another process built it while we waited
                return
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
            for name in names:
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for statement in _statements(_SCHEMA + "".join(m.SCHEMA for m in _extensions())):
                conn.execute(statement)
            conn.execute("INSERT INTO meta VALUES ('settings', ?)", (self._settings(),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- refresh ------------------------------------------------------------------------------------

    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the vault; a corrupt index is rebuilt silently."""
        try:
            stats = self._refresh()
        except sqlite3.DatabaseError:
            self._discard()
            stats = self._refresh()
            stats.rebuilt = True
        self.refreshed = True
        for message in stats.warnings:
            warn(message)
        return stats

    def _refresh(self) -> RefreshStats:
        on_disk = {note_id: (path, st) for note_id, path, st in scan_vault(self.config)}
        stats = RefreshStats()
        if not self._diff(on_disk).pending:
            stats.warnings = self._problems()
            return stats
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have refreshed while we waited for the write lock: diff again.
            diff = self._diff(on_disk)
            if diff.settled:
                conn.executemany("UPDATE notes SET digest = NULL WHERE rowid = ?", [(r,) for r in diff.settled])
            if diff.removed or diff.to_index:
                self._apply(on_disk, diff.removed, diff.to_index, stats)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        stats.warnings = self._problems()
        return stats

    def _diff(self, on_disk: dict[str, tuple[str, os.stat_result]]) -> _Diff:
        known = {row[1]: row for row in self.conn.execute(
            "SELECT rowid, id, mtime_ns, size, digest FROM notes")}
        diff = _Diff()
        diff.removed = [(row[0], note_id) for note_id, row in known.items() if note_id not in on_disk]
        now_ns = time.time_ns()
        for note_id, (path, st) in on_disk.items():
            row = known.get(note_id)
            if row is None or row[2] != st.st_mtime_ns or row[3] != st.st_size:
                diff.to_index.append(note_id)
            elif row[4] is not None:
                if _digest_of(path) != row[4]:
                    diff.to_index.append(note_id)  # racily clean: same (mtime, size), other content
                elif now_ns - st.st_mtime_ns >= RACY_NS:
                    diff.settled.append(row[0])  # old enough now: (mtime, size) can be trusted
        return diff

    def _apply(self, on_disk: dict[str, tuple[str, os.stat_result]], removed: list[tuple[int, str]],
               to_index: list[str], stats: RefreshStats) -> None:
        conn = self.conn
        extensions = _extensions()
        known = dict(conn.execute("SELECT id, rowid FROM notes"))
        id_set_changed = bool(removed)
        if removed:
            rowids = [rowid for rowid, _ in removed]
            _delete_in(conn, "DELETE FROM notes WHERE rowid IN ({})", rowids)
            _delete_in(conn, "DELETE FROM links WHERE src IN ({})", rowids)
            for ext in extensions:
                ext.remove_notes(conn, rowids)
            stats.removed = len(removed)

        progress = _Progress(len(to_index))
        indexed: list[IndexedNote] = []
        parsed_links: dict[int, list[str]] = {}
        now_ns = time.time_ns()
        for note_id in to_index:
            path, st = on_disk[note_id]
            rowid = known.get(note_id)
            if rowid is not None:
                conn.execute("DELETE FROM links WHERE src = ?", (rowid,))
                stats.changed += 1
            else:
                stats.added += 1
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
                text = data.decode("utf-8")
                problem = None
            except OSError as exc:
                data, text, problem = b"", "", f"cannot read it ({exc.strerror})"
            except UnicodeDecodeError:
                text, problem = "", "it is not UTF-8 text"
            digest = _digest(data) if now_ns - st.st_mtime_ns < RACY_NS else None
            if problem is None:
                note = parse_note(text, note_id)
                title = note_title(note.frontmatter, note.body, note_id)
                frontmatter = json.dumps(note.frontmatter, ensure_ascii=False, default=str)
            else:
                title, frontmatter = "", "{}"
            values = (note_id, st.st_mtime_ns, st.st_size, digest, problem, title, frontmatter)
            if rowid is None:
                id_set_changed = id_set_changed or problem is None
                rowid = conn.execute("INSERT INTO notes (id, mtime_ns, size, digest, problem, title, frontmatter)"
                                     " VALUES (?, ?, ?, ?, ?, ?, ?)", values).lastrowid
                assert rowid is not None
            else:
                conn.execute("UPDATE notes SET id=?, mtime_ns=?, size=?, digest=?, problem=?, title=?, "
                             "frontmatter=? WHERE rowid=?", (*values, rowid))
                for ext in extensions:
                    ext.remove_notes(conn, [rowid])
            if problem is None:
                parsed_links[rowid] = [normalise_target(link.target) for link in extract_links(note.body)]
                indexed.append(IndexedNote(rowid, note_id, title, note.body, note.frontmatter))
            progress.step()
        progress.done()

        resolver = self._resolver() if (parsed_links or id_set_changed) else None
        if id_set_changed and resolver is not None:
            # A note that appeared or vanished changes only links whose target could name it.
            affected: set[str] = set()
            for _, note_id in removed:
                affected |= resolution_keys(note_id, self.config.extensions)
            for note_id in to_index:
                if note_id not in known:
                    affected |= resolution_keys(note_id, self.config.extensions)
            targets = sorted(affected)
            for start in range(0, len(targets), 500):
                chunk = targets[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT DISTINCT target FROM links WHERE target IN ({marks})", chunk).fetchall()
                conn.executemany("UPDATE links SET resolved = ? WHERE target = ?",
                                 [(resolver.resolve(t), t) for (t,) in rows])
        if resolver is not None:
            conn.executemany(
                "INSERT INTO links (src, seq, target, resolved) VALUES (?, ?, ?, ?)",
                [(rowid, seq, target, resolver.resolve(target))
                 for rowid, targets_of in parsed_links.items() for seq, target in enumerate(targets_of) if target])
        for ext in extensions:
            ext.add_notes(conn, indexed)

    def _resolver(self) -> LinkResolver:
        ids = [row[0] for row in self.conn.execute("SELECT id FROM notes WHERE problem IS NULL")]
        return LinkResolver(ids, self.config.extensions)

    def _problems(self) -> list[str]:
        return [f"skipped note {note_id!r}: {problem}" for note_id, problem in
                self.conn.execute("SELECT id, problem FROM notes WHERE problem IS NOT NULL ORDER BY id")]

    # --- queries (call refresh() first) -------------------------------------------------------------

    def ids(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT id FROM notes WHERE problem IS NULL ORDER BY id")]

    def resolve(self, target: str) -> str | None:
        key = normalise_target(target)
        row = self.conn.execute("SELECT resolved FROM links WHERE target = ? LIMIT 1", (key,)).fetchone()
        if row is not None:
            return row[0]  # type: ignore[no-any-return]
        return self._resolver().resolve(key)

    def backlinks(self, note_id: str) -> list[str]:
        return [row[0] for row in self.conn.execute(
            "SELECT DISTINCT n.id FROM links l JOIN notes n ON n.rowid = l.src "
            "WHERE l.resolved = ? AND n.id != ? ORDER BY n.id", (note_id, note_id))]

    # --- what amem last saw of each note (for modifiedExternally) -----------------------------------

    def last_seen(self, note_id: str) -> str | None:
        row = self.conn.execute("SELECT version FROM seen WHERE id = ?", (note_id,)).fetchone()
        return row[0] if row else None

    def mark_seen(self, note_id: str, version: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO seen (id, version) VALUES (?, ?)", (note_id, version))


def _statements(script: str) -> Iterator[str]:
    for statement in script.split(";"):
        if statement.strip():
            yield statement


def _delete_in(conn: sqlite3.Connection, sql: str, values: list[int]) -> None:
    for start in range(0, len(values), 500):
        chunk = values[start:start + 500]
        conn.execute(sql.format(",".join("?" * len(chunk))), chunk)


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(data).hexdigest()


def _digest_of(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return _digest(handle.read())
    except OSError:
        return None


class _Progress:
    """Progress on stderr for builds that take more than a second, only when stderr is a terminal."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self.start = time.monotonic()
        self.shown = False
        self.tty = total > 0 and sys.stderr.isatty()

    def step(self) -> None:
        self.count += 1
        if self.tty and self.count % 250 == 0 and time.monotonic() - self.start > 1:
            sys.stderr.write(f"\ramem: indexing {self.count}/{self.total} notes")
            sys.stderr.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write(f"\ramem: indexed {self.total} notes{' ' * 10}\n")
            sys.stderr.flush()
