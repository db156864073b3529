"""One batch of a refresh: the notes it forgets, reads and stores (rows, tags, links, search rows), and
the links it resolves again, each step named (`_Batch.write`)."""

from __future__ import annotations

import collections
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..notes.ids import may_read, open_regular
from ..notes.links import (
    PATH_MARK,
    LinkResolver,
    link_key,
    resolution_keys,
    resolve_stored,
)
from .note_reader import CHUNK, NoteRow, Reading, ReadNote, WorkerReads, read_note, search_fields
from .scan import RACY_NS
from .sql import run_in, select_in

if TYPE_CHECKING:
    from .index import RefreshStats, VaultIndex
    from .scan import VaultScan

#: Notes indexed per transaction: small enough that other processes wait a fraction of a second for
#: the write lock and that an interrupted build keeps nearly all its work, large enough to amortise.
BATCH = 400
#: A cold build's second pass writes this many search rows a transaction (fewer when their notes outgrow
#: `fts.PENDING_BYTES`: it holds their fields in memory): FTS5 flushes and merges its segments at each
#: commit (and whenever its pending terms outgrow that buffer), so fewer, larger transactions write fewer
#: segments to merge (10k genvault notes: the pass 1.7 → 1.5 s). A kill loses at most one such
#: transaction's work: the marks stay for the next refresh.
COLD_SEARCH_BATCH = 2000
#: Link targets whose resolution a cold build remembers (most targets are named by several notes); past
#: this many the memo starts again, so that its memory stays bounded in any vault.
_RESOLVED_MEMO = 65536
#: meta key present while a cold build is half way: its links were resolved against notes it had not
#: stored yet, so whichever refresh finishes its work resolves every link again first.
_COLD_BUILD = "cold-build"
_SET_META = "INSERT OR REPLACE INTO meta VALUES (?, '1')"
#: A cold build of at least this many notes reads them in a worker process while it writes SQLite: the
#: worker costs a Python start (~0.1 s), which a smaller build does not win back.
WORKER_FROM = 2000
#: A cold build's search fields (all but the backlinks, unknown until its last batch), kept from its
#: first pass for its second; in the connection's temporary database, gone with it.
_KEPT_SEARCH = "CREATE TEMP TABLE IF NOT EXISTS kept_search (rowid INTEGER PRIMARY KEY, head, headings, body, keys)"


#: `id=?, folder=?, …` for an UPDATE of every column of a _NoteRow.
_ROW_ASSIGNMENTS = ", ".join(f"{name}=?" for name in NoteRow._fields)


class _Batch:
    """Applies one refresh's changes inside the transactions `_apply` opens, in two passes.

    The first writes notes, tags and links, resolves links, and marks the search rows to write (changed
    notes) or whose backlinks field to rewrite (notes whose linking notes changed). The second writes
    those search rows, reading each note again, once every link of the refresh is known, so that a
    cold build writes each row once with its final backlinks. The marks are committed with each batch:
    an interrupted refresh leaves them for the next one to finish.

    A cold build (`cold`: bulk work into an index that holds no note) resolves every link against all the
    notes it is about to index from its first batch on, so that no link stored early is resolved again
    when its target's batch comes: its resolver knows every note of the scan, less those found unreadable
    (whose links are then resolved again, as when a note goes). Until its last batch is committed, a
    `_COLD_BUILD` mark says so: the refresh that finishes a killed one resolves every link again."""

    def __init__(
        self, index: VaultIndex, scan: VaultScan, stats: RefreshStats, *, bulk: bool, ids: Sequence[str] = ()
    ) -> None:
        self.index = index
        self.conn = index.conn
        self.config = index.config
        self.scan = scan
        self.stats = stats
        self.bulk = bulk
        self.root = os.path.abspath(self.config.vault_root)
        self.real_root = os.path.realpath(self.root)
        self.racy_before = scan.started_ns - RACY_NS
        self._memory: LinkResolver | None = None
        self._resolved: dict[str, tuple[str, str, str | None]] = {}  # a cold build's memo of _link_columns
        self.cold = bulk and bool(ids) and self.conn.execute("SELECT 1 FROM notes LIMIT 1").fetchone() is None
        self._cold_left = len(ids)  # notes the cold build has yet to write
        self._checked_cold_mark = self.cold
        self.reading = Reading(self.root, self.real_root, self.racy_before, self.config.extensions, self.cold)
        self._worker: WorkerReads | None = None
        self._here = False  # the batch being written is the last one left, read here, not by the worker
        self._back: list[str] | None = None  # the last batch left, whose notes this process reads ahead
        self._kept_back: list[ReadNote] = []  # those notes, read while the worker had none at hand
        self._first_rowid = 1  # in a cold build, the rowid of the batch's first note (see `ordered`)
        self._links_unindexed = False  # a cold build's links table is without its indexes (see write)
        if self.cold:
            self._memory = CompactResolver(ids, self.config.extensions)
            # The search fields a cold build makes as it reads, for its second pass (never read twice).
            self.conn.execute(_KEPT_SEARCH)
            self.conn.execute("DELETE FROM temp.kept_search")
            if len(ids) >= WORKER_FROM:
                self._worker = WorkerReads(self.reading, ((note_id, scan.files[note_id]) for note_id in ids))

    def ordered(self, batches: list[list[str]]) -> Iterator[list[str]]:
        """The batches in the order to write them. With a worker reading ahead from the first, this process
        reads the notes of the last batch left whenever the worker has none at hand (here, and between
        the chunks of a batch in `_reads`), and writes that batch once it has read all of it: neither
        process waits for the other, and they meet in the middle, however their speeds compare. A cold
        build's rowids follow the order of `batches` all the same: search ranks ties by rowid, and the
        index must not depend on which process was the faster."""
        left: collections.deque[tuple[int, list[str]]] = collections.deque()
        first = 1
        for batch in batches:
            left.append((first, batch))
            first += len(batch)
        worker = self._worker
        while left:
            kept = len(self._kept_back)
            self._here = worker is not None and (
                kept == len(left[-1][1]) or (len(left) == 1 and kept > 0) or not worker.ready()
            )
            self._first_rowid, batch = left.pop() if self._here else left.popleft()
            self._back = left[-1][1] if left and worker is not None else None
            yield batch

    def _read_back_while_waiting(self) -> None:
        """Read notes of the last batch left, here, for as long as the worker has none at hand."""
        back, worker = self._back, self._worker
        if back is None or worker is None:
            return
        kept = self._kept_back
        while len(kept) < len(back) and not worker.ready():
            note_id = back[len(kept)]
            kept.append(read_note(self.reading, note_id, self.scan.files[note_id]))

    def resolver(self) -> LinkResolver:
        if not self.bulk:
            return IndexResolver(self.conn, self.config.extensions)
        if self._memory is None:
            self._memory = self.index._resolver(bulk=True)
        return self._memory

    def _link_columns(self, resolver: LinkResolver, target: str) -> tuple[str, str, str | None]:
        """A stored target's (tkey, nkey, resolved), remembered per target in a cold build (whose resolver
        changes only when a note turns out unreadable, which forgets the memo)."""
        if not self.cold:
            return (*_target_keys(target), resolve_stored(resolver, target))
        memo = self._resolved
        found = memo.get(target)
        if found is None:
            if len(memo) >= _RESOLVED_MEMO:
                memo.clear()
            found = memo[target] = (*_target_keys(target), resolve_stored(resolver, target))
        return found

    def _unreadable_in_cold_build(self, note_id: str) -> set[str]:
        """A note the cold build's resolver counted on is unreadable: no link may resolve to it. Returns
        the keys whose links are to be resolved again."""
        assert self._memory is not None
        self._memory.remove(note_id)
        self._resolved.clear()
        return resolution_keys(note_id, self.config.extensions)

    def remove(self, removed: list[tuple[int, str]]) -> None:
        from . import fts

        conn = self.conn
        rowids = [rowid for rowid, _ in removed]
        dirty = {r[0] for r in select_in(conn, "SELECT resolved FROM links WHERE src IN ({})", rowids) if r[0]}
        searchable = [
            r[0]
            for r in select_in(
                conn, "SELECT rowid FROM notes WHERE rowid IN ({}) AND search != 1 AND problem IS NULL", rowids
            )
        ]
        fts.delete(conn, searchable)
        run_in(conn, "DELETE FROM notes WHERE rowid IN ({})", rowids)
        run_in(conn, "DELETE FROM links WHERE src IN ({})", rowids)
        run_in(conn, "DELETE FROM note_tags WHERE note IN ({})", rowids)
        run_in(conn, "DELETE FROM note_aliases WHERE note IN ({})", rowids)
        self.stats.removed += len(removed)
        keys: set[str] = set()
        for _, note_id in removed:
            keys |= resolution_keys(note_id, self.config.extensions)
        self._memory = None  # the in-memory resolver knew the removed notes
        dirty |= self._reresolve(keys)
        self._mark_backlinks(dirty)

    def write(self, batch: list[str]) -> None:
        """Index the notes of `batch` (new or changed): their rows, tags and links, in one go."""
        self._finish_killed_cold_build()
        if not batch:
            return
        conn = self.conn
        if self.cold:
            self._cold_batch(len(batch))
        known, readable_before, old_targets = self._forget(batch)
        keys: set[str] = set()  # targets that a note appearing or vanishing may now resolve differently
        added: list[str] = []
        new_rows: list[tuple[Any, ...]] = []
        next_rowid = self._first_new_rowid()
        tag_rows: list[tuple[int, str]] = []
        alias_rows: list[tuple[int, str]] = []
        link_rows: list[tuple[int, int, str, int, int, int]] = []
        kept: list[tuple[int, str, str, str, str]] = []
        for note in self._reads(batch):
            note_id = note.row.id
            self.scan.restate(note_id, (note.row.mtime_ns, note.row.size))  # what is stored, for the snapshot
            readable = note.row.problem is None
            old = known.get(note_id)
            if old is None:
                self.stats.added += 1
                rowid = next_rowid
                next_rowid += 1
                new_rows.append((rowid, *note.row))
                if note.search is not None:
                    kept.append((rowid, *note.search))
                if self.cold:
                    if not readable:
                        keys |= self._unreadable_in_cold_build(note_id)
                elif readable:
                    keys |= resolution_keys(note_id, self.config.extensions)
                    added.append(note_id)
            else:
                self.stats.changed += 1
                rowid = old
                if (rowid in readable_before) != readable:  # a link target or not now
                    keys |= resolution_keys(note_id, self.config.extensions)
                    self._memory = None
                conn.execute(f"UPDATE notes SET {_ROW_ASSIGNMENTS} WHERE rowid=?", (*note.row, rowid))
            tag_rows += [(rowid, tag) for tag in note.tags]
            alias_rows += [(rowid, key) for key in note.aliases]
            link_rows += [(rowid, seq, *target) for seq, target in enumerate(note.targets)]
        conn.executemany(
            f"INSERT INTO notes (rowid, {', '.join(NoteRow._fields)}) VALUES (?{', ?' * len(NoteRow._fields)})",
            new_rows,
        )
        conn.executemany("INSERT INTO note_tags (note, tag) VALUES (?, ?)", tag_rows)
        conn.executemany("INSERT INTO note_aliases (note, key) VALUES (?, ?)", alias_rows)
        self._keep_search(kept)
        if self._memory is not None:
            for note_id in added:
                self._memory.add(note_id)
        self._mark_backlinks(self._store_links(link_rows, keys, old_targets))
        self._cold_links_done()

    def _cold_batch(self, size: int) -> None:
        """A cold build's batch begins: its mark is set until the last; its first of several drops the
        links indexes."""
        self._cold_left -= size
        done = self._cold_left <= 0  # the last batch: every link now resolves as it will stay
        self.conn.execute("DELETE FROM meta WHERE key = ?" if done else _SET_META, (_COLD_BUILD,))
        if not done and not self._links_unindexed:
            self._drop_link_indexes()

    def _drop_link_indexes(self) -> None:
        """A cold build stores its links unindexed, in the transaction that sets its mark (see
        `schema.link_indexes`): other processes take the index as current all the same."""
        from .schema import link_indexes

        for name, _ in link_indexes():
            self.conn.execute(f"DROP INDEX IF EXISTS {name}")
        self._links_unindexed = True

    def _index_links(self, only: tuple[str, ...] = ()) -> None:
        """Make the links indexes missing (those named in `only`, or all): after a cold build's last batch,
        when a refresh finishes a killed one, or when a cold build must look links up by key."""
        from .schema import link_indexes

        for name, sql in link_indexes():
            if not only or name in only:
                self.conn.execute(sql.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))

    def _cold_links_done(self) -> None:
        """After a cold build's last batch every link is resolved: the resolver of every note and its memo
        go before the snapshot is stored and the second pass starts (a third of a big build's memory); its
        links are indexed."""
        if self.cold and self._cold_left <= 0:
            self._index_links()
            self._memory = None
            self._resolved = {}

    def _first_new_rowid(self) -> int:
        """The rowid of the batch's first new note: in a cold build, its place in the scan's order (see
        `ordered`); else after the last one stored."""
        if self.cold:
            return self._first_rowid
        return int(self.conn.execute("SELECT max(rowid) FROM notes").fetchone()[0] or 0) + 1

    def _keep_search(self, kept: list[tuple[int, str, str, str, str]]) -> None:
        """Keep a cold build's search fields for its second pass; after its last batch, stop its worker."""
        if kept:  # a cold build's (only it makes them, and only it has the table)
            self.conn.executemany("INSERT INTO temp.kept_search VALUES (?, ?, ?, ?, ?)", kept)
        if self._cold_left <= 0 and self._worker is not None:
            self._worker.close()

    def _finish_killed_cold_build(self) -> None:
        """A cold build was killed half way (its mark is there): resolve every stored link again against
        the notes the index holds, once, before this refresh goes on."""
        if self._checked_cold_mark:
            return
        self._checked_cold_mark = True
        conn = self.conn
        if conn.execute("SELECT 1 FROM meta WHERE key = ?", (_COLD_BUILD,)).fetchone() is None:
            return
        self._index_links()
        resolver = self.index._resolver(bulk=True)
        moved: set[str] = set()
        updates = []
        for target, old in conn.execute("SELECT DISTINCT target, resolved FROM links").fetchall():
            new = resolve_stored(resolver, target)
            if new != old:
                updates.append((new, target))
                moved |= {i for i in (old, new) if i}
        conn.executemany("UPDATE links SET resolved = ? WHERE target = ?", updates)
        self._mark_backlinks(moved)
        conn.execute("DELETE FROM meta WHERE key = ?", (_COLD_BUILD,))

    def _forget(self, batch: list[str]) -> tuple[dict[str, int], set[int], dict[int, set[str]]]:
        """Drop what the index holds of the batch's known notes (links, tags, search rows); returns their
        rowids by id, the rowids that were readable, and the notes each one linked to."""
        from . import fts

        conn = self.conn
        known: dict[str, int] = {}
        readable: set[int] = set()
        searchable: list[int] = []
        query = "SELECT id, rowid, problem IS NULL, search != 1 FROM notes WHERE id IN ({})"
        for note_id, rowid, is_readable, has_search_row in select_in(conn, query, batch):
            known[note_id] = rowid
            if is_readable:
                readable.add(rowid)
                if has_search_row:
                    searchable.append(rowid)
        rowids = list(known.values())
        # A note's outgoing links change the backlinks of the notes it stops or starts linking to only.
        old_targets: dict[int, set[str]] = {}
        for src, resolved in select_in(conn, "SELECT src, resolved FROM links WHERE src IN ({})", rowids):
            if resolved:
                old_targets.setdefault(src, set()).add(resolved)
        run_in(conn, "DELETE FROM links WHERE src IN ({})", rowids)
        run_in(conn, "DELETE FROM note_tags WHERE note IN ({})", rowids)
        run_in(conn, "DELETE FROM note_aliases WHERE note IN ({})", rowids)
        fts.delete(conn, searchable)
        return known, readable, old_targets

    def _reads(self, batch: list[str]) -> list[ReadNote]:
        """The batch's notes read: by the worker reading ahead of a big cold build (and here while it has
        none at hand, see `ordered`), else here."""
        notes = [(note_id, self.scan.files[note_id]) for note_id in batch]
        if self._worker is None:
            return [read_note(self.reading, note_id, stat) for note_id, stat in notes]
        if self._here:
            kept, self._kept_back = self._kept_back, []
            return kept + [read_note(self.reading, note_id, stat) for note_id, stat in notes[len(kept) :]]
        found: list[ReadNote] = []
        for start in range(0, len(notes), CHUNK):
            self._read_back_while_waiting()
            found += self._worker.take(notes[start : start + CHUNK])
        return found

    def _store_links(
        self, link_rows: list[tuple[int, int, str, int, int, int]], keys: set[str], old_targets: dict[int, set[str]]
    ) -> set[str]:
        """Resolve and store the batch's links, and resolve again those elsewhere that `keys` may change;
        returns the ids whose backlinks changed."""
        if not link_rows and not keys:
            return {target for targets in old_targets.values() for target in targets}
        dirty = self._reresolve(keys)
        resolver = self.resolver()
        resolved = [
            (src, seq, target, *self._link_columns(resolver, target), count, embeds, line)
            for src, seq, target, count, embeds, line in link_rows
        ]
        self.conn.executemany(
            "INSERT INTO links (src, seq, target, tkey, nkey, resolved, count, embeds, line) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            resolved,
        )
        if self.cold:
            return dirty  # no note of a cold build has a search row to mark (see _mark_backlinks)
        new_targets: dict[int, set[str]] = {}
        for src, _, _, _, _, target, *_ in resolved:
            if target:
                new_targets.setdefault(src, set()).add(target)
        for src in old_targets.keys() | new_targets.keys():
            dirty |= old_targets.get(src, set()) ^ new_targets.get(src, set())
        return dirty

    def _reresolve(self, keys: set[str]) -> set[str]:
        """Resolve again every link whose target could name one of `keys` (`resolution_keys`: a target names
        a note only by one of them, since a target with a folder never falls back to the base name); the
        ids whose backlinks moved."""
        if not keys:
            return set()
        conn = self.conn
        if self._links_unindexed:  # a cold build's links looked up by key: worth an index
            self._index_links(("links_tkey",))
        wanted = sorted(map(link_key, keys))
        rows = set(select_in(conn, "SELECT DISTINCT target, resolved FROM links WHERE tkey IN ({})", wanted))
        if not rows:
            return set()
        resolver = self.resolver()
        moved: set[str] = set()
        updates = []
        for target, old in rows:
            new = self._link_columns(resolver, target)[2]
            if new != old:
                updates.append((new, target))
                moved |= {i for i in (old, new) if i}
        conn.executemany("UPDATE links SET resolved = ? WHERE target = ?", updates)
        return moved

    def _mark_backlinks(self, dirty: set[str]) -> None:
        """Notes whose linking notes changed: their search row's backlinks field is to be rewritten. None
        in a cold build: every note it stores has its search row still to write (or none, unreadable);
        and the statements of its many lists of ids would fill SQLite's statement cache for nothing."""
        if self.cold:
            return
        run_in(
            self.conn, "UPDATE notes SET search = 2 WHERE search = 0 AND problem IS NULL AND id IN ({})", sorted(dirty)
        )

    def search_rows(self) -> int:
        """Write one batch of the search rows marked by the first pass; how many (0 when none is left)."""
        from . import fts

        conn = self.conn
        rows = conn.execute(
            "SELECT rowid, id, title, body_at, search, size FROM notes WHERE search != 0 ORDER BY search, rowid"
            " LIMIT ?",
            (COLD_SEARCH_BATCH if self.cold else BATCH,),
        ).fetchall()
        if not rows:
            if self.cold:
                conn.execute("DROP TABLE IF EXISTS temp.kept_search")
            return 0
        if self.cold:
            rows = _within_bytes(rows, fts.PENDING_BYTES)
        sources = self._linking_ids([row[1] for row in rows])
        kept = self._kept_search([row[0] for row in rows if row[4] == 1])
        inserts: list[tuple[int, str, str, str, str]] = []
        headings: list[tuple[int, str]] = []
        relinks: list[tuple[str, int]] = []
        for rowid, note_id, title, body_at, state, _ in rows:
            links = fts.links_text(sources.get(note_id, ()))
            if state == 2:
                relinks.append((links, rowid))
                continue
            fields = kept.get(rowid) or search_fields(note_id, title, self._body(note_id, body_at))
            inserts.append((rowid, fields[0], fields[1], links, fields[2]))
            headings.append((rowid, fields[3]))
        fts.insert(conn, inserts)
        fts.set_headings(conn, headings)
        fts.set_links(conn, relinks)
        conn.executemany("UPDATE notes SET search = 0 WHERE rowid = ?", [(row[0],) for row in rows])
        return len(rows)

    def _kept_search(self, rowids: list[int]) -> dict[int, tuple[str, str, str, str]]:
        """The search fields the first pass of a cold build kept, by rowid."""
        if not self.cold or not rowids:
            return {}
        query = "SELECT rowid, head, headings, body, keys FROM temp.kept_search WHERE rowid IN ({})"
        return {row[0]: row[1:] for row in select_in(self.conn, query, rowids)}

    def _body(self, note_id: str, body_at: int) -> str:
        path = os.path.join(self.root, note_id)
        try:
            if os.path.islink(path) and not may_read(path, self.real_root):
                return ""
            with open_regular(path) as handle:
                data = handle.read()
        except OSError:
            return ""  # gone since the first pass: the next refresh removes it
        return data[body_at:].decode("utf-8", errors="replace")

    def _linking_ids(self, note_ids: Sequence[str]) -> dict[str, list[str]]:
        """note id → ids of the other notes that link to it, sorted."""
        found: dict[str, list[str]] = {}
        for target, src in select_in(
            self.conn,
            "SELECT DISTINCT l.resolved, n.id FROM links l JOIN notes n ON n.rowid = l.src "
            "WHERE l.resolved IN ({}) ORDER BY n.id",
            list(note_ids),
        ):
            if src != target:
                found.setdefault(target, []).append(src)
        return found


def _within_bytes(rows: list[Any], budget: int) -> list[Any]:
    """The first of `rows` (whose last column is the note's size in bytes) whose sizes sum to at most
    `budget`, and always the first: a cold build's search fields held at once stay near the budget, however
    big the notes."""
    total = 0
    for count, row in enumerate(rows):
        total += row[-1]
        if total > budget and count:
            return rows[:count]
    return rows


def _target_keys(target: str) -> tuple[str, str]:
    """A stored target's `tkey` and `nkey`: its link key, and its last segment's (a Markdown link's
    without the mark, so that the note at its path, appearing or going, finds it)."""
    path = target[len(PATH_MARK) :] if target.startswith(PATH_MARK) else target
    return link_key(path), link_key(path.rsplit("/", 1)[-1])


class IndexResolver(LinkResolver):
    """Answers the resolver's lookups with indexed queries: cheap for a few links, where loading every
    id into memory would cost more than the queries. As LinkResolver's lookups do, each receives
    `link_key` forms and returns every id whose key matches; LinkResolver ranks them."""

    def __init__(self, conn: sqlite3.Connection, extensions: tuple[str, ...]) -> None:
        super().__init__((), extensions)
        self.conn = conn

    def _ids(self, where: str, values: Sequence[str]) -> list[str]:
        sql = f"SELECT id FROM notes WHERE problem IS NULL AND ({where})"
        return [row[0] for row in self.conn.execute(sql, list(values))]

    def find_exact(self, keys: list[str]) -> list[str]:
        return self._ids(f"key IN ({','.join('?' * len(keys))})", keys)

    def find_suffix(self, keys: list[str]) -> list[str]:
        """Ids whose key ends with `/` + one of `keys`."""
        found: list[str] = []
        for key in keys:
            low = ("/" + key)[::-1]
            found += self._ids("rkey >= ? AND rkey < ?", [low, low + "\U0010ffff"])
        return found

    def find_basename(self, keys: list[str]) -> list[str]:
        return self._ids(f"name_key IN ({','.join('?' * len(keys))})", keys)


class CompactResolver(LinkResolver):
    """LinkResolver's lookups answered from memory as LinkResolver's own are, a key's only id held as
    itself rather than in a list of one: a cold build holds every note of the vault in one, about half
    the memory (72 against 143 MiB for 222,000 notes)."""

    def __init__(self, ids: Iterable[str], extensions: tuple[str, ...]) -> None:
        super().__init__((), extensions)
        self._tables: tuple[dict[str, str | list[str]], ...] = ({}, {}, {})
        for note_id in ids:
            self.add(note_id)

    def _entries(self, note_id: str) -> Iterator[tuple[dict[str, str | list[str]], str]]:
        exact, suffix, basename = self._tables
        key = link_key(note_id)
        if key == note_id:
            key = note_id  # the id itself, not a copy of it (most ids are their own key)
        yield exact, key
        parts = key.split("/")
        for start in range(1, len(parts)):
            yield suffix, "/".join(parts[start:])
        yield basename, parts[-1]

    def add(self, note_id: str) -> None:
        for table, key in self._entries(note_id):
            held = table.get(key)
            if held is None:
                table[key] = note_id
            elif isinstance(held, str):
                table[key] = [held, note_id]
            else:
                held.append(note_id)

    def remove(self, note_id: str) -> None:
        for table, key in self._entries(note_id):
            held = table.get(key)
            if held == note_id:
                del table[key]
            elif isinstance(held, list) and note_id in held:
                held.remove(note_id)
                if len(held) == 1:
                    table[key] = held[0]

    def _find(self, table: dict[str, str | list[str]], keys: list[str]) -> list[str]:
        found: list[str] = []
        for key in keys:
            held = table.get(key)
            if isinstance(held, str):
                found.append(held)
            elif held:
                found += held
        return found

    def find_exact(self, keys: list[str]) -> list[str]:
        return self._find(self._tables[0], keys)

    def find_suffix(self, keys: list[str]) -> list[str]:
        return self._find(self._tables[1], keys)

    def find_basename(self, keys: list[str]) -> list[str]:
        return self._find(self._tables[2], keys)
