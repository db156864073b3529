"""The persistent vault index: which notes exist, their titles, tags, frontmatter and links, and the
search engine's rows, kept in SQLite under the user's cache directory and brought up to date from each
note's (path, mtime, size).

`read` uses it for link resolution and backlinks, `search` for ranking, `list` for metadata, completion
for the id list. A refresh indexes changed notes in batches, each its own transaction, so a large build
keeps its memory bounded, shows progress, lets other processes read and write between batches, and,
interrupted, resumes where it stopped. Only one process refreshes at a time (a lock file beside the
database); `read` and completion do not wait for another process's refresh but use the index as it is,
and `complete()` tells them when that is half a build (then `read` resolves links from a vault listing).
The index is a cache: any damage (a corrupt file, a missing table, another layout) rebuilds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ..notes.ids import open_regular
from ..notes.links import (
    PATH_MARK,
    LinkResolver,
    link_key,
    normalise_target,
    resolve_stored,
)
from ..report import Reporter
from . import attached
from . import snapshot as stored
from .scan import RACY_NS, VaultScan, Walker, digest_of, scan_vault
from .schema import FEATURE_TABLES, FILE, LOCK_FILE, SCHEMA_VERSION, TABLES, fingerprint, statements, with_link_indexes
from .sql import busy_or_same, is_damage, select_in

if TYPE_CHECKING:
    from pathlib import Path

    from ..config import Config
    from .batch import _Batch

_T = TypeVar("_T")

#: Above this many links to resolve in one refresh, load every id into memory once instead of querying.
BULK_RESOLUTION = 200
#: Seconds a refresh that waits for another process's refresh waits for its lock before it uses the index
#: as it is: a holder that never lets go (a keeper stopped with Ctrl-Z as it indexed, a process hung on a
#: network file system) must not hang every search. As long as SQLite's own wait (seen.BUSY_TIMEOUT).
LOCK_WAIT = 30.0
#: The warning of a waiting refresh that gave up.
LOCK_HELD = (
    "another amem process has held the vault index's refresh lock for {:g} s (stopped or hung?): "
    "the results are from the index as it is and may miss changes made since"
)
#: meta key present while every note the last refresh found is in the index with its links resolved:
#: absent in an index built empty, and during a refresh of more than one batch (another process's build)
_COMPLETE = "complete"


_COLUMNS = "SELECT rowid, id, mtime_ns, size, digest, folder FROM notes"


class RefreshStats:
    """What a refresh or update did. `warnings` name the notes that could not be indexed; `busy` says
    another process was refreshing and this one used the index as it was."""

    # A plain class rather than a dataclass: every call pays a dataclass's creation at start-up.
    def __init__(self) -> None:
        self.added = self.changed = self.removed = 0
        self.warnings: list[str] = []
        self.busy = False


class _Diff:
    def __init__(self) -> None:
        self.removed: list[tuple[int, str]] = []
        self.to_index: list[str] = []
        self.settled: list[int] = []
        self.dirs_changed = False
        #: a thorough scan found the stored snapshot missing or different, so it is to be written again
        self.snapshot_stale = False
        #: the stored snapshot a thorough scan was compared with (None: there was none to trust)
        self.known: stored.Snapshot | None = None
        #: the notes whose (mtime, size) the scan found changed since that snapshot
        self.changed: list[str] = []
        #: the digest of the thorough scan (see snapshot.scan_sum), and how many notes it had then
        self.digest: str | None = None
        self.scanned = 0

    @property
    def pending(self) -> bool:
        return bool(self.removed or self.to_index or self.settled or self.dirs_changed)


class VaultIndex:
    """One vault's index database. Cheap to open; `refresh()` brings it up to date."""

    def __init__(self, config: Config, reporter: Reporter | None = None) -> None:
        self.config = config
        self.reporter = reporter or Reporter()
        #: the database file (a string: a read never loads `pathlib`; `path` is the same as a Path)
        self.file = os.path.join(config.cache_folder, FILE)
        self._conn: sqlite3.Connection | None = None
        #: this object built the database empty and has not walked the vault since: no keeper's
        #: confirmation and no list of changed notes can make it complete
        self._created = False

    @property
    def path(self) -> Path:
        from pathlib import Path

        return Path(self.file)

    @path.setter
    def path(self, path: str | os.PathLike[str]) -> None:
        self.file = os.fspath(path)

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
                os.path.realpath(c.vault_dir),
                list(c.extensions),
                list(c.exclude_dirs),
                c.index_hidden_dirs,
            ]
        )

    def _open(self) -> sqlite3.Connection:
        from ..cachedir import ensure_cache_folder

        ensure_cache_folder(os.path.dirname(self.file))
        for attempt in (1, 2):
            conn = None
            fresh = not os.path.exists(self.file)
            try:
                # Not bound to its thread: a long-lived process's searches reuse it, one at a time (index.kept).
                conn = sqlite3.connect(self.file, timeout=30, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                # A cache: losing its last transactions to a power cut costs a rebuild, never a note.
                conn.execute("PRAGMA synchronous=OFF")
                if not self._is_current(conn):
                    self._create(conn)
                    if fresh and self._created:  # this version's first file: another's may be beside it
                        from . import versions

                        versions.adopt(conn, json.loads(self._settings())[1], os.path.dirname(self.file))
                return conn
            except sqlite3.DatabaseError as exc:
                # Corrupt, foreign or of another layout: the index is only a cache, so start it again.
                if conn is not None:
                    conn.close()
                if attempt == 2 or not is_damage(exc):
                    raise busy_or_same(exc) from None
                self._discard()
        raise AssertionError("unreachable")

    def _is_current(self, conn: sqlite3.Connection) -> bool:
        """Whether the database holds this version's tables, exactly, for these settings. Any difference
        (a dropped table, a `meta` of another layout, an older schema) means: build it again."""
        master = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        if not any(name == "meta" for _, name, _ in master):
            return False
        stored = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('settings', 'schema', 'cold-build')"))
        if "cold-build" in stored:  # a cold build half way holds its links unindexed (see link_indexes)
            master = with_link_indexes(master)
        return stored.get("settings") == self._settings() and stored.get("schema") == fingerprint(master)

    def _create(self, conn: sqlite3.Connection) -> None:
        from . import fts

        conn.execute("BEGIN IMMEDIATE")
        try:
            with contextlib.suppress(sqlite3.DatabaseError):
                if self._is_current(conn):
                    conn.execute("COMMIT")  # another process built it while we waited
                    return
            same = self._same_vault(conn)
            kept = FEATURE_TABLES if same else ()
            seen = _seen_rows(conn) if same else []  # what amem last saw of each note holds for other settings
            names = [
                row
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
                    "AND (sql IS NULL OR sql NOT LIKE 'CREATE VIRTUAL%')"
                )
                if not row[0].startswith(kept)
            ]
            virtual = conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'").fetchall()
            for (name,) in virtual:
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for (name,) in names:
                kind = conn.execute("SELECT type FROM sqlite_master WHERE name = ?", (name,)).fetchone()
                if kind is not None:
                    conn.execute(f'DROP {"VIEW" if kind[0] == "view" else "TABLE"} IF EXISTS "{name}"')
            for statement in statements(TABLES + fts.SCHEMA):
                conn.execute(statement)
            fts.configure(conn)
            conn.executemany("INSERT OR IGNORE INTO seen (id, version) VALUES (?, ?)", seen)
            master = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
            conn.executemany(
                "INSERT INTO meta VALUES (?, ?)", [("settings", self._settings()), ("schema", fingerprint(master))]
            )
            conn.execute("COMMIT")
            self._created = True
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _same_vault(self, conn: sqlite3.Connection) -> bool:
        """Whether the index being built again was this vault's (its settings name the same folder): its
        feature tables are then kept. The semantic vectors are keyed by note id and by the note's bytes, and
        checked against each note when they are next used, so they outlive a new schema or other settings;
        a model takes minutes to embed a vault of thousands of notes again."""
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
            stored = json.loads(row[0]) if row else None
        except (sqlite3.DatabaseError, ValueError, TypeError):
            return False
        return isinstance(stored, list) and len(stored) > 1 and stored[1] == json.loads(self._settings())[1]

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.file}{suffix}")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def repairing(self, work: Callable[[], _T]) -> _T:
        """Run `work`; if the index turns out damaged (not merely locked by another process), start the
        index again and run it once more. The index is a cache: a refresh rebuilds all of it."""
        try:
            return work()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise busy_or_same(exc) from None
            self._discard()
            try:
                return work()
            except sqlite3.DatabaseError as again:
                raise busy_or_same(again) from None

    @contextlib.contextmanager
    def _refresh_lock(self, wait: bool) -> Iterator[bool]:
        """Hold the index file's refresh lock; yields False when another process holds it and `wait` is off."""
        try:
            import fcntl
        except ImportError:  # no flock: SQLite's own locking still keeps the index sound
            yield True
            return
        try:
            handle = open(os.path.join(os.path.dirname(self.file), LOCK_FILE), "a")  # noqa: SIM115
        except OSError:
            yield True
            return
        with handle:
            if not _take_lock(fcntl, handle, LOCK_WAIT if wait else 0):
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # --- refresh ------------------------------------------------------------------------------------

    def refresh(self, *, thorough: bool = True, wait: bool | None = None) -> RefreshStats:
        """Bring the index up to date with the vault; a damaged index is rebuilt silently.

        thorough (search): stat every note. Otherwise (read, completion) stat every folder and list
        only those whose mtime moved: that sees every note created, deleted or renamed and every save
        made by replacing the file (amem's own writes, most editors), but not an in-place rewrite of
        a note in an unchanged folder, which the next thorough refresh picks up.

        wait (default: thorough): when another process is refreshing, wait for it; otherwise use the
        index as it is now (`busy` in the result). Warnings are returned, not reported: the caller
        says which of them matter to it."""
        return self.repairing(lambda: self._refresh(thorough, thorough if wait is None else wait))

    def _refresh(self, thorough: bool, wait: bool) -> RefreshStats:
        from ..keeperproto.client import synced

        stats = RefreshStats()
        # The one place that decides how the vault is looked at: not at all when a live keeper of the vault
        # has applied every change made before this call (unless this call found no index and built it
        # empty: the keeper's changes went into the one that is gone); else every note, or the folders.
        self.conn  # noqa: B018 (opening it may build it empty, setting _created)
        if not self._created and synced(self):
            stats.warnings = self._problems()
            return stats
        with self._refresh_lock(wait) as held:
            if not held:
                stats.busy = True
            else:
                scan = attached.thorough_scan(self.config, self.conn) if thorough else self._quick_scan()
                if scan.temporaries:
                    from ..store.write import sweep_temporaries

                    sweep_temporaries(self.config, scan.temporaries)
                diff = self._diff(scan)
                if diff.pending or (diff.snapshot_stale and diff.known is None):
                    self._apply(scan, diff, stats, snapshot=scan.listed is None)
                else:
                    if diff.snapshot_stale and diff.digest is not None:
                        stored.store_digest(self.conn, diff.digest)  # the same notes, scanned in another order
                    self._mark_complete()  # an index of an amem that kept no such mark
                    self._write_search_rows()  # left by an interrupted refresh
                attached.remember_scan(self.conn, scan)  # what a build's walk passed
                self._created = False
        stats.warnings = self._problems()
        if stats.busy and wait:
            stats.warnings.append(LOCK_HELD.format(LOCK_WAIT))
        return stats

    def update(self, note_ids: Iterable[str]) -> RefreshStats:
        """Re-check exactly these notes, with no walk: index the changed, add the new, drop the gone.
        For an index keeper that learns of changes from file-system events. An index that had to be built
        again from nothing (damaged, or of another version) holds none of the other notes: then the whole
        vault is walked instead."""
        ids = list(dict.fromkeys(note_ids))

        def work() -> RefreshStats:
            self.conn  # noqa: B018 (opening it finds it unusable, if it is, and builds it empty)
            return self._refresh(True, True) if self._created else self._update(ids)

        return self.repairing(work)

    def _update(self, note_ids: list[str]) -> RefreshStats:
        stats = RefreshStats()
        scan = VaultScan(listed=set())
        walker = Walker(self.config, scan)
        for note_id in note_ids:
            found = walker.stat_note(note_id) if walker.is_note(note_id) else None
            if found is not None:
                scan.files[note_id] = found
        conn = self.conn
        diff = _Diff()
        rows = list(
            select_in(conn, "SELECT rowid, id, mtime_ns, size, digest, folder FROM notes WHERE id IN ({})", note_ids)
        )
        known = {row[1] for row in rows}
        racy = []
        for row in rows:
            found = scan.files.get(row[1])
            if found is None:
                diff.removed.append((row[0], row[1]))
            elif found != (row[2], row[3]):
                diff.to_index.append(row[1])
            elif row[4] is not None:
                racy.append(row)
        self._check_racy(scan, racy, diff)
        diff.to_index += [i for i in scan.files if i not in known]
        problems = {r[1] for r in conn.execute("SELECT rowid, id FROM notes WHERE problem IS NOT NULL")}
        diff.to_index += [i for i in scan.files if i in problems and i not in diff.to_index]
        with self._refresh_lock(True):
            if diff.pending:
                self._apply(scan, diff, stats, snapshot=False)
            else:
                self._write_search_rows()
        stats.warnings = self._problems()
        return stats

    def _quick_scan(self) -> VaultScan:
        """Stat the folders the index knows and list again only those whose mtime moved (and new ones
        under them); notes in the other folders are taken as the index has them."""
        known_dirs = dict(self.conn.execute("SELECT path, mtime_ns FROM dirs"))
        if not known_dirs:
            return scan_vault(self.config)
        scan = VaultScan(listed=set())
        walker = Walker(self.config, scan)
        for rel, recorded in known_dirs.items():
            try:
                st = walker.stat_folder(rel)
            except OSError:
                continue  # gone: its notes will be missing from the scan, hence removed
            if st.st_mode & 0o170000 != 0o040000:
                continue
            if st.st_mtime_ns == recorded:
                scan.dirs[rel] = recorded
            else:
                walker.list(rel, st.st_mtime_ns, skip=known_dirs)
        return scan

    def _diff(self, scan: VaultScan) -> _Diff:
        """What the scan shows changed since the index was written. Only the rows that can differ are
        fetched: those of the notes whose (mtime, size) differ from the last thorough refresh's snapshot
        (thorough), or of the folders that were listed again or vanished (quick); plus, always, the
        racily recent notes, whose content is compared, and the notes that could not be indexed, which
        are tried again (their problem may be gone with no visible change)."""
        diff = _Diff()
        rows, candidates, known_dirs = self._rows_to_compare(scan, diff)
        known = {row[1]: row for row in rows}
        self._check_racy(scan, self._compare(scan, known, diff), diff)
        on_disk = scan.files
        diff.to_index.extend(note_id for note_id in candidates if note_id in on_disk and note_id not in known)
        self._retry_problems(scan, diff)
        diff.dirs_changed = known_dirs != scan.dirs
        return diff

    def _rows_to_compare(self, scan: VaultScan, diff: _Diff) -> tuple[list[Any], Iterable[str], dict[str, int]]:
        """The index rows the scan may differ from, the ids that may be new, and the folders as last seen."""
        conn = self.conn
        rows = conn.execute(f"{_COLUMNS} WHERE digest IS NOT NULL").fetchall()
        if scan.listed is None:
            return self._thorough_rows(scan, diff, rows)
        known_dirs = dict(conn.execute("SELECT path, mtime_ns FROM dirs"))
        folders = sorted(scan.listed | (known_dirs.keys() - scan.dirs.keys()))
        rows += select_in(conn, f"{_COLUMNS} WHERE folder IN ({{}})", folders)
        return rows, scan.files, known_dirs

    def _thorough_rows(
        self, scan: VaultScan, diff: _Diff, racy: list[Any]
    ) -> tuple[list[Any], Iterable[str], dict[str, int]]:
        """As `_rows_to_compare`, for a scan of every note: nothing but the racy rows when the scan's digest is
        the stored one; else the rows of the notes whose (mtime, size) differ from the stored snapshot; with
        no snapshot to trust, every row. Folder mtimes only steer quick refreshes: a thorough one lists every
        folder anyway."""
        conn = self.conn
        diff.digest = stored.scan_sum(scan)  # first: before anything else refers to the scan's objects
        diff.scanned = len(scan.files)
        if stored.stored_sum(conn) == diff.digest:
            return racy, [], scan.dirs
        diff.snapshot_stale = True  # at least the digest is to be stored
        known = diff.known = stored.load(conn)
        if known is None:
            return conn.execute(_COLUMNS).fetchall(), scan.files, dict(conn.execute("SELECT path, mtime_ns FROM dirs"))
        diff.changed = stored.changed_ids(scan.files, known.files)
        racy += select_in(conn, f"{_COLUMNS} WHERE id IN ({{}})", diff.changed)
        return racy, diff.changed, known.dirs

    @staticmethod
    def _compare(scan: VaultScan, known: dict[str, Any], diff: _Diff) -> list[Any]:
        """Note the removed and changed notes among the rows in `diff`; return the racily recent rows."""
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
        return racy

    def _retry_problems(self, scan: VaultScan, diff: _Diff) -> None:
        """Notes stored as unreadable whose file now reads and decodes: index them again."""
        queued = set(diff.to_index)
        removed = {note_id for _, note_id in diff.removed}
        root = os.path.abspath(self.config.vault_dir)
        for note_id, mtime_ns, size in self.conn.execute(
            "SELECT id, mtime_ns, size FROM notes WHERE problem IS NOT NULL"
        ):
            if note_id in queued or note_id in removed:
                continue
            try:
                with open_regular(os.path.join(root, note_id)) as handle:
                    handle.read().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            scan.files.setdefault(note_id, (mtime_ns, size))
            diff.to_index.append(note_id)

    def _check_racy(self, scan: VaultScan, rows: list[Any], diff: _Diff) -> None:
        """Notes whose (mtime, size) matched but were modified racily recently: compare their content."""
        root = os.path.abspath(self.config.vault_dir)
        for rowid, note_id, mtime_ns, size, digest, _ in rows:
            if digest_of(os.path.join(root, note_id)) != digest:
                scan.files.setdefault(note_id, (mtime_ns, size))
                diff.to_index.append(note_id)  # racily clean: same (mtime, size), other content
            elif mtime_ns < scan.started_ns - RACY_NS:
                diff.settled.append(rowid)  # old enough now: (mtime, size) can be trusted

    # --- applying changes ---------------------------------------------------------------------------

    def _apply(self, scan: VaultScan, diff: _Diff, stats: RefreshStats, *, snapshot: bool) -> None:
        """Write the diff: removals first, then the notes to index in batches, each its own transaction;
        the folder list and the snapshot's delta (see snapshot.py) with the last. Until then the stored
        snapshot is not trusted, so an interrupted refresh is finished by the next one, which compares every
        row and finds the batches done."""
        from .batch import BATCH, _Batch  # here: a read of an unchanged vault writes no rows

        conn = self.conn
        batches = [diff.to_index[i : i + BATCH] for i in range(0, len(diff.to_index), BATCH)] or [[]]
        progress = self.reporter.progress("indexing", len(diff.to_index))
        work = _Batch(self, scan, stats, bulk=len(diff.to_index) > BULK_RESOLUTION, ids=diff.to_index)
        touched = {*diff.to_index, *(note_id for _, note_id in diff.removed), *diff.changed}
        keep = stored.Keeping(
            conn,
            scan,
            touched,
            known=diff.known,
            digest=(diff.digest, diff.scanned) if snapshot and diff.digest is not None else None,
            fold=snapshot and diff.known is None and diff.snapshot_stale,
        )
        del touched  # what Keeping needs of it, it holds (a cold build's: none)
        try:
            for number, batch in enumerate(work.ordered(batches)):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if number == 0:
                        conn.execute("DELETE FROM meta WHERE key = ?", (_COMPLETE,))
                        stored.forget(conn)
                        if diff.settled:
                            conn.executemany(
                                "UPDATE notes SET digest = NULL WHERE rowid = ?", [(r,) for r in diff.settled]
                            )
                        if diff.removed:
                            work.remove(diff.removed)
                    work.write(batch)
                    if number == len(batches) - 1:
                        if diff.dirs_changed:
                            conn.execute("DELETE FROM dirs")
                            conn.executemany("INSERT INTO dirs (path, mtime_ns) VALUES (?, ?)", scan.dirs.items())
                        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (_COMPLETE,))
                        keep.store(diff.dirs_changed)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                progress.step(len(batch))
        finally:
            progress.done()
        self._write_search_rows(work)

    def _mark_complete(self) -> None:
        if not self.complete():
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (_COMPLETE,))

    def complete(self) -> bool:
        """Whether the index holds every note its last refresh found, links resolved: False while another
        process's build (or a refresh of many notes) is half way, or after one was killed half way."""
        return self.conn.execute("SELECT 1 FROM meta WHERE key = ?", (_COMPLETE,)).fetchone() is not None

    def _write_search_rows(self, work: _Batch | None = None) -> None:
        """The second pass (see _Batch): write the marked search rows, a batch per transaction."""
        conn = self.conn
        pending = conn.execute("SELECT count(*) FROM notes WHERE search != 0").fetchone()[0]
        if not pending:
            return
        from .batch import _Batch

        if work is None:
            work = _Batch(self, VaultScan(), RefreshStats(), bulk=False)
        progress = self.reporter.progress("indexing search terms", pending)
        try:
            while True:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    written = work.search_rows()
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                if not written:
                    break
                progress.step(written)
        finally:
            progress.done()

    def _resolver(self, bulk: bool = False) -> LinkResolver:
        from .batch import IndexResolver

        if not bulk:
            return IndexResolver(self.conn, self.config.extensions)
        ids = [row[0] for row in self.conn.execute("SELECT id FROM notes WHERE problem IS NULL")]
        return LinkResolver(ids, self.config.extensions)

    def _problems(self) -> list[str]:
        # `+id`: sort the few problem rows found through their partial index, not scan the id index.
        return [
            f"skipped note {note_id!r}: {problem}"
            for note_id, problem in self.conn.execute(
                "SELECT id, problem FROM notes WHERE problem IS NOT NULL ORDER BY +id"
            )
        ]

    # --- queries (call refresh() first) -------------------------------------------------------------

    def ids(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT id FROM notes WHERE problem IS NULL ORDER BY id")]

    def resolve(self, target: str) -> str | None:
        """What a link target resolves to: a [[link]]'s as written, or a stored one (`stored_target`)."""
        key = target if target.startswith(PATH_MARK) else normalise_target(target)
        row = self.conn.execute("SELECT resolved FROM links WHERE target = ? LIMIT 1", (key,)).fetchone()
        if row is not None:
            return str(row[0]) if row[0] is not None else None
        return resolve_stored(self._resolver(), key)

    def aliased(self, name: str) -> list[str]:
        """The readable notes whose frontmatter `aliases` hold `name` (compared as link keys), in no order."""
        key = link_key(normalise_target(name))
        rows = self.conn.execute(
            "SELECT DISTINCT n.id FROM note_aliases a JOIN notes n ON n.rowid = a.note "
            "WHERE a.key = ? AND n.problem IS NULL",
            (key,),
        )
        return [row[0] for row in rows]

    def resolver(self) -> LinkResolver:
        """A LinkResolver whose lookups are queries on the index: cheap for a few links."""
        return self._resolver()

    def backlinks(self, note_id: str) -> list[str]:
        return [
            row[0]
            for row in self.conn.execute(
                "SELECT DISTINCT n.id FROM links l JOIN notes n ON n.rowid = l.src "
                "WHERE l.resolved = ? AND n.id != ? ORDER BY n.id",
                (note_id, note_id),
            )
        ]

    def has_conflict_copy(self, note_id: str) -> bool | None:
        """Whether a conflict copy of the note lies beside it (see notes.conflicts), as the index last saw
        the note's folder: one lookup where listing the folder reads every name in it. None when the index
        does not hold the note (one in an excluded folder, say), and so cannot tell."""
        from ..notes.conflicts import copy_prefix, is_copy_of

        folder, _, name = note_id.rpartition("/")
        prefix = f"{folder}/{copy_prefix(name)}" if folder else copy_prefix(name)
        # The ids that start with the prefix: a range of the ids' own index (U+10FFFF sorts after any
        # character, and UTF-8 keeps code points' order under SQLite's binary collation).
        ids = [
            row[0]
            for row in self.conn.execute(
                "SELECT id FROM notes WHERE id = ? OR (id >= ? AND id < ?)", (note_id, prefix, prefix + "\U0010ffff")
            )
        ]
        if note_id not in ids:
            return None
        return any(
            other != note_id and "/" not in other[len(prefix) :] and is_copy_of(other.rpartition("/")[2], name)
            for other in ids
        )

    def stats(self) -> dict[str, int]:
        """{notes, terms, bytes}: the notes indexed (readable ones), the search terms, the database's size."""
        conn = self.conn
        notes = conn.execute("SELECT count(*) FROM notes WHERE problem IS NULL").fetchone()[0]
        terms = conn.execute("SELECT count(*) FROM search_vocab").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
        return {"notes": notes, "terms": terms, "bytes": pages}

    def clear(self) -> None:
        """Delete the index, so that the next refresh builds it from nothing."""
        self._discard()

    # --- what amem last saw of each note (for modifiedExternally) -----------------------------------

    def last_seen(self, note_id: str) -> str | None:
        row = self.conn.execute("SELECT version FROM seen WHERE id = ?", (note_id,)).fetchone()
        return row[0] if row else None

    def mark_seen(self, note_id: str, version: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO seen (id, version) VALUES (?, ?)", (note_id, version))


def _seen_rows(conn: sqlite3.Connection) -> list[tuple[Any, Any]]:
    """The `seen` rows of a database about to be built again; none when it holds no such table."""
    try:
        return conn.execute("SELECT id, version FROM seen").fetchall()
    except sqlite3.DatabaseError:
        return []


def _take_lock(fcntl: Any, handle: Any, patience: float) -> bool:
    """Take the exclusive flock on `handle`, trying for up to `patience` seconds; whether it was taken."""
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def remember_written(config: Config, note_id: str, version: str) -> None:
    """Record what amem wrote, so that `read` does not call amem's own write an external change: in the
    database as it is (`seen.record_written`), else in the one built again first."""
    from .seen import record_written

    if record_written(config, note_id, version):
        return
    index = VaultIndex(config)
    try:
        index.mark_seen(note_id, version)
    finally:
        index.close()
