"""The persistent vault index: which notes exist, their titles, frontmatter and links, kept in SQLite
under the user's cache directory and brought up to date from each note's (path, mtime, size).

`read` uses it for link resolution and backlinks, `search` for ranking, completion for the id list.
Extensions (the search index) keep their own tables in the same database and are updated in the same
transaction, so the whole index always describes one state of the vault.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, TypeVar

from ..digest import sha1_hex
from ..errors import InternalError
from ..output import warn
from .links import LinkResolver, extract_links, normalise_target, resolution_keys

_T = TypeVar("_T")

#: Bump when the tables or what goes in them change; an index of another version is rebuilt.
SCHEMA_VERSION = 5
ALWAYS_SKIPPED = frozenset({".git", "node_modules", ".obsidian"})
#: A file or folder modified this shortly before a scan may change again within the file system's
#: timestamp granularity (2 s on FAT, 1 s on ext3) without a visible mtime change: such files keep a
#: content digest and such folders are listed again on the next refresh.
RACY_NS = 2_000_000_000
#: Above this many links to resolve in one refresh, load every id into memory once instead of querying.
BULK_RESOLUTION = 200
#: meta key of the marshalled ({id: (mtime_ns, size)}, {folder: mtime_ns}) a thorough refresh last stored
_SNAPSHOT = f"snapshot-marshal-{marshal.version}"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE notes (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    folder TEXT NOT NULL,      -- the id's folder with its trailing '/', '' at the vault root
    name TEXT NOT NULL,        -- the id's last segment, for base-name link resolution
    rid TEXT NOT NULL,         -- the id reversed, so that path-suffix resolution is an index range
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    digest TEXT,               -- set while the file is racily recent (see RACY_NS)
    problem TEXT,              -- why the note could not be indexed (not UTF-8, unreadable), else NULL
    title TEXT NOT NULL DEFAULT '',
    frontmatter TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX notes_folder ON notes (folder);
CREATE INDEX notes_name ON notes (name);
CREATE INDEX notes_rid ON notes (rid);
CREATE INDEX notes_racy ON notes (digest) WHERE digest IS NOT NULL;
CREATE INDEX notes_problem ON notes (problem) WHERE problem IS NOT NULL;
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
CREATE TABLE dirs (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL);  -- -1: recheck next time
"""


class IndexedNote(NamedTuple):
    """What extensions receive for each note added or changed during a refresh."""

    rowid: int
    id: str
    title: str
    body: str
    frontmatter: dict[str, Any]


# Plain classes rather than dataclasses: every call pays their creation at start-up.
class RefreshStats:
    def __init__(self) -> None:
        self.added = self.changed = self.removed = 0
        self.warnings: list[str] = []


class VaultScan:
    """What a scan saw: notes by id as (mtime_ns, size), and folders by vault-relative path."""

    def __init__(self, listed: set[str] | None = None) -> None:
        self.started_ns = time.time_ns()
        self.files: dict[str, tuple[int, int]] = {}
        self.dirs: dict[str, int] = {}
        #: folders whose notes are all in `files`; None when every folder was listed (a thorough scan)
        self.listed = listed


class _Diff:
    def __init__(self) -> None:
        self.removed: list[tuple[int, str]] = []
        self.to_index: list[str] = []
        self.settled: list[int] = []
        self.dirs_changed = False
        #: a thorough scan found the stored snapshot missing or different, so it is to be written again
        self.snapshot_stale = False

    @property
    def pending(self) -> bool:
        return bool(self.removed or self.to_index or self.settled or self.dirs_changed)


#: Modules keeping tables in the index, named here so that opening the index need not import them.
_EXTENSION_MODULES = ("amem.vault.search",)


def _extensions() -> tuple[ModuleType, ...]:
    """Modules keeping tables in the index; each has SCHEMA, add_notes(conn, notes), remove_notes(conn, rowids).
    Imported on first use: a refresh that changes nothing never needs them."""
    import importlib

    return tuple(importlib.import_module(name) for name in _EXTENSION_MODULES)


class _Walker:
    """Lists vault folders by the spec's rules: skips .git, node_modules, .obsidian, other dot-folders
    unless indexHiddenDirs, and excludeDirs at any depth. Symlinked folders are not followed."""

    def __init__(self, config: Any, scan: VaultScan) -> None:
        self.root = os.path.abspath(config.vault_root)
        self.extensions = tuple(e.lower() for e in config.extensions)
        self.excluded = set(config.exclude_dirs)
        self.hidden = config.index_hidden_dirs
        self.scan = scan
        self.racy_before = scan.started_ns - RACY_NS

    def folder_path(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def list(self, rel: str, mtime_ns: int, skip: Container[str] = ()) -> None:
        """Record folder `rel` and its notes; walk its subfolders, except those in `skip`."""
        stack = [(rel, mtime_ns)]
        while stack:
            rel, mtime_ns = stack.pop()
            try:
                entries = os.scandir(self.folder_path(rel))
            except OSError:
                continue
            self.scan.dirs[rel] = -1 if mtime_ns >= self.racy_before else mtime_ns
            if self.scan.listed is not None:
                self.scan.listed.add(rel)
            files = self.scan.files
            extensions = self.extensions
            with entries:
                # The hot loop of every search: notes first, with as few calls per entry as possible.
                for entry in entries:
                    name = entry.name
                    try:
                        if name.lower().endswith(extensions):
                            st = entry.stat()
                            if st.st_mode & 0o170000 == 0o100000:
                                files[rel + name] = (st.st_mtime_ns, st.st_size)
                                continue
                        if entry.is_dir(follow_symlinks=False):
                            if name in ALWAYS_SKIPPED or name in self.excluded or (name[0] == "." and not self.hidden):
                                continue
                            sub = f"{rel}{name}/"
                            if sub not in skip:
                                stack.append((sub, entry.stat(follow_symlinks=False).st_mtime_ns))
                    except OSError:
                        continue  # deleted during the scan, or a broken symlink


def scan_vault(config: Any) -> VaultScan:
    """Every indexable note and folder of the vault, each note stat'ed."""
    scan = VaultScan()
    try:
        root_mtime = os.stat(config.vault_root).st_mtime_ns
    except OSError:
        return scan
    _Walker(config, scan).list("", root_mtime)
    return scan


class VaultIndex:
    """One vault's index database. Cheap to open; `refresh()` brings it up to date."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.path: Path = config.cache_dir / "index.sqlite"
        self._conn: sqlite3.Connection | None = None

    # --- connection ---------------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _settings(self) -> str:
        c = self.config
        return json.dumps(
            [
                SCHEMA_VERSION,
                os.path.realpath(c.vault_root),
                list(c.extensions),
                list(c.exclude_dirs),
                c.index_hidden_dirs,
                list(_EXTENSION_MODULES),
            ]
        )

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in (1, 2):
            try:
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                # A cache: losing its last transactions to a power cut costs a rebuild, never a note.
                conn.execute("PRAGMA synchronous=OFF")
                row = (
                    conn.execute("SELECT value FROM meta WHERE key='settings'").fetchone()
                    if conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone()
                    else None
                )
                if row is None or row[0] != self._settings():
                    self._create(conn)
                return conn
            except sqlite3.DatabaseError as exc:
                # Corrupt or foreign file: the index is only a cache, so start it again.
                if attempt == 2 or not _is_damage(exc):
                    raise _busy_or_same(exc) from None
                self._discard()
        raise AssertionError("unreachable")

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = (
                conn.execute("SELECT value FROM meta WHERE key='settings'").fetchone()
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone()
                else None
            )
            if row is not None and row[0] == self._settings():
                conn.execute("COMMIT")  # another process built it while we waited
                return
            names = [
                r[0]
                for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")
            ]
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

    def refresh(self, *, thorough: bool = True) -> RefreshStats:
        """Bring the index up to date with the vault; a corrupt index is rebuilt silently.

        thorough (search): stat every note. Otherwise (read, completion) stat every folder and list
        only those whose mtime moved: that sees every note created, deleted or renamed and every save
        made by replacing the file (amem's own writes, most editors), but not an in-place rewrite of
        a note in an unchanged folder, which the next thorough refresh picks up."""
        from .keeper import synced

        if synced(self):  # a live keeper of the vault has applied every change made before this call
            stats = RefreshStats()
            stats.warnings = self._problems()
        else:
            stats = self.repairing(lambda: self._refresh(thorough))
        for message in stats.warnings:
            warn(message)
        return stats

    def repairing(self, work: Callable[[], _T]) -> _T:
        """Run `work`; if the index file turns out damaged (not merely locked by another process), start
        the index again and run it once more. The index is a cache: a refresh rebuilds all of it."""
        try:
            return work()
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc):
                raise _busy_or_same(exc) from None
            self._discard()
            try:
                return work()
            except sqlite3.DatabaseError as again:
                raise _busy_or_same(again) from None

    def _refresh(self, thorough: bool) -> RefreshStats:
        scan = scan_vault(self.config) if thorough else self._quick_scan()
        stats = RefreshStats()
        conn = self.conn
        seen_version = conn.execute("PRAGMA data_version").fetchone()[0]
        diff = self._diff(scan)
        if not diff.pending and not diff.snapshot_stale:
            stats.warnings = self._problems()
            return stats
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA data_version").fetchone()[0] != seen_version:
                # Another process committed while we waited for the write lock: diff again.
                diff = self._diff(scan)
            if diff.settled:
                conn.executemany("UPDATE notes SET digest = NULL WHERE rowid = ?", [(r,) for r in diff.settled])
            if diff.removed or diff.to_index:
                self._apply(scan, diff.removed, diff.to_index, stats)
            if diff.dirs_changed:
                conn.execute("DELETE FROM dirs")
                conn.executemany("INSERT INTO dirs (path, mtime_ns) VALUES (?, ?)", scan.dirs.items())
            if scan.listed is None:
                # scan.files now holds exactly the (mtime, size) stored for every note (see _apply).
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)", (_SNAPSHOT, marshal.dumps((scan.files, scan.dirs)))
                )
            elif diff.pending:
                conn.execute("DELETE FROM meta WHERE key = ?", (_SNAPSHOT,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        stats.warnings = self._problems()
        return stats

    def _quick_scan(self) -> VaultScan:
        """Stat the folders the index knows and list again only those whose mtime moved (and new ones
        under them); notes in the other folders are taken as the index has them."""
        known_dirs = dict(self.conn.execute("SELECT path, mtime_ns FROM dirs"))
        if not known_dirs:
            return scan_vault(self.config)
        scan = VaultScan(listed=set())
        walker = _Walker(self.config, scan)
        for rel, recorded in known_dirs.items():
            try:
                st = os.lstat(walker.folder_path(rel))
            except OSError:
                continue  # gone: its notes will be missing from the scan, hence removed
            if st.st_mode & 0o170000 != 0o040000:
                continue
            if st.st_mtime_ns == recorded:
                scan.dirs[rel] = recorded
            else:
                walker.list(rel, st.st_mtime_ns, skip=known_dirs)
        return scan

    def _snapshot(self) -> object:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (_SNAPSHOT,)).fetchone()
        try:
            return marshal.loads(row[0]) if row else None
        except (EOFError, ValueError, TypeError):
            return None

    def _diff(self, scan: VaultScan) -> _Diff:
        """What the scan shows changed since the index was written. Only the rows that can differ are
        fetched: those of the notes whose (mtime, size) differ from the last thorough refresh's snapshot
        (thorough), or of the folders that were listed again or vanished (quick); plus, always, the
        racily recent notes, whose content is compared."""
        conn = self.conn
        columns = "SELECT rowid, id, mtime_ns, size, digest, folder FROM notes"
        diff = _Diff()
        rows = conn.execute(f"{columns} WHERE digest IS NOT NULL").fetchall()
        candidates: Iterable[str] = scan.files
        snapshot = self._snapshot() if scan.listed is None else None
        if isinstance(snapshot, tuple):
            # Folder mtimes only steer quick refreshes; a thorough one lists every folder anyway.
            known_files, known_dirs = snapshot
            files = scan.files
            candidates = [i for i, seen in files.items() if known_files.get(i) != seen]
            candidates += [i for i in known_files if i not in files]
            rows += select_in(conn, f"{columns} WHERE id IN ({{}})", candidates)
            diff.snapshot_stale = bool(candidates) or known_dirs != scan.dirs
        else:
            known_dirs = dict(conn.execute("SELECT path, mtime_ns FROM dirs"))
            diff.snapshot_stale = scan.listed is None
            if scan.listed is None:
                rows = conn.execute(columns).fetchall()
            else:
                folders = sorted(scan.listed | (known_dirs.keys() - scan.dirs.keys()))
                rows += select_in(conn, f"{columns} WHERE folder IN ({{}})", folders)
        known = {row[1]: row for row in rows}
        on_disk = scan.files
        racy = []
        for note_id, row in known.items():
            if scan.listed is None or row[5] in scan.listed or row[5] not in scan.dirs:
                found = on_disk.get(note_id)
                if found is None:
                    diff.removed.append((row[0], note_id))
                    continue
                if found != (row[2], row[3]):
                    diff.to_index.append(note_id)
                    continue
            if row[4] is not None:
                racy.append(row)
        self._check_racy(scan, racy, diff)
        diff.to_index.extend(note_id for note_id in candidates if note_id in on_disk and note_id not in known)
        diff.dirs_changed = known_dirs != scan.dirs
        return diff

    def _check_racy(self, scan: VaultScan, rows: list[Any], diff: _Diff) -> None:
        """Notes whose (mtime, size) matched but were modified racily recently: compare their content."""
        root = os.path.abspath(self.config.vault_root)
        for rowid, note_id, mtime_ns, size, digest, _ in rows:
            if _digest_of(os.path.join(root, note_id)) != digest:
                scan.files.setdefault(note_id, (mtime_ns, size))
                diff.to_index.append(note_id)  # racily clean: same (mtime, size), other content
            elif mtime_ns < scan.started_ns - RACY_NS:
                diff.settled.append(rowid)  # old enough now: (mtime, size) can be trusted

    def _apply(self, scan: VaultScan, removed: list[tuple[int, str]], to_index: list[str], stats: RefreshStats) -> None:
        from .notes import note_title, parse_note  # here, so that a refresh that changes nothing loads no YAML

        conn = self.conn
        extensions = _extensions()
        known: dict[str, int] = dict(select_in(conn, "SELECT id, rowid FROM notes WHERE id IN ({})", to_index))
        id_set_changed = bool(removed)
        if removed:
            rowids = [rowid for rowid, _ in removed]
            run_in(conn, "DELETE FROM notes WHERE rowid IN ({})", rowids)
            run_in(conn, "DELETE FROM links WHERE src IN ({})", rowids)
            for ext in extensions:
                ext.remove_notes(conn, rowids)
            stats.removed = len(removed)

        progress = _Progress(len(to_index))
        flipped: list[str] = []  # known notes that became readable or unreadable: link targets or not now
        indexed: list[IndexedNote] = []
        parsed_links: dict[int, list[str]] = {}
        racy_before = scan.started_ns - RACY_NS
        root = os.path.abspath(self.config.vault_root)
        for note_id in to_index:
            path = os.path.join(root, note_id)
            mtime_ns, size = scan.files[note_id]
            rowid = known.get(note_id)
            if rowid is not None:
                conn.execute("DELETE FROM links WHERE src = ?", (rowid,))
                stats.changed += 1
            else:
                stats.added += 1
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
                    st = os.fstat(handle.fileno())  # the (mtime, size) of exactly these bytes
                mtime_ns, size = st.st_mtime_ns, st.st_size
                text = data.decode("utf-8")
                problem = None
            except OSError as exc:
                data, text, problem = b"", "", f"cannot read it ({exc.strerror})"
            except UnicodeDecodeError:
                text, problem = "", "it is not UTF-8 text"
            digest = sha1_hex(data) if mtime_ns >= racy_before else None
            if problem is None:
                note = parse_note(text, note_id)
                title = note_title(note.frontmatter, note.body, note_id)
                frontmatter = json.dumps(note.frontmatter, ensure_ascii=False, default=str)
            else:
                title, frontmatter = "", "{}"
            cut = note_id.rfind("/") + 1
            values = (
                note_id,
                note_id[:cut],
                note_id[cut:],
                note_id[::-1],
                mtime_ns,
                size,
                digest,
                problem,
                title,
                frontmatter,
            )
            scan.files[note_id] = (mtime_ns, size)  # what is stored, for the snapshot
            if rowid is None:
                id_set_changed = id_set_changed or problem is None
                rowid = conn.execute(
                    "INSERT INTO notes (id, folder, name, rid, mtime_ns, size, digest, problem, "
                    "title, frontmatter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                ).lastrowid
                assert rowid is not None
            else:
                was_readable = conn.execute("SELECT problem IS NULL FROM notes WHERE rowid = ?", (rowid,)).fetchone()[0]
                if bool(was_readable) != (problem is None):
                    flipped.append(note_id)
                    id_set_changed = True
                conn.execute(
                    "UPDATE notes SET id=?, folder=?, name=?, rid=?, mtime_ns=?, size=?, digest=?, "
                    "problem=?, title=?, frontmatter=? WHERE rowid=?",
                    (*values, rowid),
                )
                for ext in extensions:
                    ext.remove_notes(conn, [rowid])
            if problem is None:
                parsed_links[rowid] = [normalise_target(link.target) for link in extract_links(note.body)]
                indexed.append(IndexedNote(rowid, note_id, title, note.body, note.frontmatter))
            progress.step()
        progress.done()

        pending = sum(len(t) for t in parsed_links.values())
        resolver = self._resolver(bulk=pending > BULK_RESOLUTION) if (pending or id_set_changed) else None
        if id_set_changed and resolver is not None:
            # A note that appeared or vanished changes only links whose target could name it.
            affected: set[str] = set()
            for _, note_id in removed:
                affected |= resolution_keys(note_id, self.config.extensions)
            for note_id in to_index:
                if note_id not in known:
                    affected |= resolution_keys(note_id, self.config.extensions)
            for note_id in flipped:
                affected |= resolution_keys(note_id, self.config.extensions)
            rows = select_in(conn, "SELECT DISTINCT target FROM links WHERE target IN ({})", sorted(affected))
            conn.executemany(
                "UPDATE links SET resolved = ? WHERE target = ?", [(resolver.resolve(t), t) for (t,) in set(rows)]
            )
        if resolver is not None:
            conn.executemany(
                "INSERT INTO links (src, seq, target, resolved) VALUES (?, ?, ?, ?)",
                [
                    (rowid, seq, target, resolver.resolve(target))
                    for rowid, targets_of in parsed_links.items()
                    for seq, target in enumerate(targets_of)
                    if target
                ],
            )
        for ext in extensions:
            ext.add_notes(conn, indexed)

    def _resolver(self, bulk: bool = False) -> LinkResolver:
        if not bulk:
            return _IndexResolver(self.conn, self.config.extensions)
        ids = [row[0] for row in self.conn.execute("SELECT id FROM notes WHERE problem IS NULL")]
        return LinkResolver(ids, self.config.extensions)

    def _problems(self) -> list[str]:
        return [
            f"skipped note {note_id!r}: {problem}"
            for note_id, problem in self.conn.execute(
                "SELECT id, problem FROM notes WHERE problem IS NOT NULL ORDER BY id"
            )
        ]

    # --- size, for `amem index` ------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """{notes, terms, bytes}: the notes indexed (readable ones), the search terms, the database's size."""
        conn = self.conn
        notes = conn.execute("SELECT count(*) FROM notes WHERE problem IS NULL").fetchone()[0]
        terms = conn.execute("SELECT count(*) FROM search_terms").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
        return {"notes": notes, "terms": terms, "bytes": pages}

    def clear(self) -> None:
        """Delete the index, so that the next refresh builds it from nothing."""
        self._discard()

    # --- queries (call refresh() first) -------------------------------------------------------------

    def ids(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT id FROM notes WHERE problem IS NULL ORDER BY id")]

    def resolve(self, target: str) -> str | None:
        key = normalise_target(target)
        row = self.conn.execute("SELECT resolved FROM links WHERE target = ? LIMIT 1", (key,)).fetchone()
        if row is not None:
            return str(row[0]) if row[0] is not None else None
        return self._resolver().resolve(key)

    def backlinks(self, note_id: str) -> list[str]:
        return [
            row[0]
            for row in self.conn.execute(
                "SELECT DISTINCT n.id FROM links l JOIN notes n ON n.rowid = l.src "
                "WHERE l.resolved = ? AND n.id != ? ORDER BY n.id",
                (note_id, note_id),
            )
        ]

    # --- what amem last saw of each note (for modifiedExternally) -----------------------------------

    def last_seen(self, note_id: str) -> str | None:
        row = self.conn.execute("SELECT version FROM seen WHERE id = ?", (note_id,)).fetchone()
        return row[0] if row else None

    def mark_seen(self, note_id: str, version: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO seen (id, version) VALUES (?, ?)", (note_id, version))


_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """A damaged or foreign index file, as opposed to one another process holds locked."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    return not isinstance(exc, sqlite3.OperationalError)


def _busy_or_same(exc: sqlite3.DatabaseError) -> Exception:
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return InternalError(
            "the vault index is locked by another amem process that has not finished in 30 s; try again"
        )
    return exc


class _IndexResolver(LinkResolver):
    """Answers the resolver's lookups with indexed queries: cheap for a few links, where loading every
    id into memory would cost more than the queries."""

    def __init__(self, conn: sqlite3.Connection, extensions: tuple[str, ...]) -> None:
        super().__init__((), extensions)
        self.conn = conn

    def _ids(self, where: str, values: list[str]) -> list[str]:
        sql = f"SELECT id FROM notes WHERE problem IS NULL AND ({where})"
        return [row[0] for row in self.conn.execute(sql, values)]

    def find_exact(self, candidates: list[str]) -> list[str]:
        found = set(self._ids(f"id IN ({','.join('?' * len(candidates))})", candidates))
        return [c for c in candidates if c in found]

    def find_suffix(self, candidates: list[str]) -> list[str]:
        found: list[str] = []
        for candidate in candidates:
            low = ("/" + candidate)[::-1]
            found += self._ids("rid >= ? AND rid < ?", [low, low + "\U0010ffff"])
        return found

    def find_basename(self, names: list[str]) -> list[str]:
        return self._ids(f"name IN ({','.join('?' * len(names))})", names)


def _statements(script: str) -> Iterator[str]:
    for statement in script.split(";"):
        if statement.strip():
            yield statement


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


def _digest_of(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return sha1_hex(handle.read())
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
