"""What the index last stored of every note's (mtime, size) and every folder's mtime, kept in three `meta`
rows so that a warm refresh compares a scan with it cheaply and a refresh after k changes writes O(k):

- the base (`snapshot-marshal-V`): marshalled ({id: (mtime_ns, size)}, {folder: mtime_ns}), written again
  only when the delta has grown past a share of it;
- the delta (`snapshot-delta-V`): marshalled ({id: (mtime_ns, size), or None for a note gone}, {folder:
  mtime_ns}), the notes changed since the base and today's folders. Present exactly while base + delta hold
  what the index's rows hold: the first transaction of a refresh that changes rows deletes it, the last
  writes it again, so an interrupted refresh leaves none and the next one compares every row;
- the sum (`snapshot-sum`): a digest of the marshalled (files, folders) of the last thorough scan that
  found the index up to date with the vault. A thorough scan whose own digest is this one has nothing to
  compare: no note or folder changed. Absent when unknown (after a refresh that saw only some folders).

marshal writes the same bytes for equal dicts built the same way in the same order (a scan's), so equal
digests mean equal scans; a scan in another order only misses the shortcut, never a change.
"""

from __future__ import annotations

import marshal
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .scan import VaultScan

Files = dict[str, tuple[int, int]]
Delta = dict[str, "tuple[int, int] | None"]

BASE = f"snapshot-marshal-{marshal.version}"
DELTA = f"snapshot-delta-{marshal.version}"
SUM = "snapshot-sum"
#: The delta is folded into a new base once it holds more than this many notes plus this share of the base.
FOLD_AT = 512
FOLD_SHARE = 32


def scan_sum(scan: VaultScan) -> str:
    """The digest of a scan's notes and folders, taken before anything else holds a reference to them.
    BLAKE2b: CPython's own, without OpenSSL, and some four times as fast as its SHA-1 on 2.4 MB."""
    from _blake2 import blake2b

    return blake2b(marshal.dumps((scan.files, scan.dirs)), digest_size=20).hexdigest()


def stored_sum(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SUM,)).fetchone()
    return str(row[0]) if row else None


class Snapshot:
    """The stored state: every note's (mtime, size) (base with the delta applied), the delta, the folders."""

    def __init__(self, files: Files, delta: Delta, dirs: dict[str, int]) -> None:
        self.files = files
        self.delta = delta
        self.dirs = dirs


def _loads(row: tuple[object, ...] | None) -> object:
    if row is None or not isinstance(row[0], bytes):
        return None
    try:
        return marshal.loads(row[0])
    except (EOFError, ValueError, TypeError):
        return None


def load_delta(conn: sqlite3.Connection) -> tuple[Delta, dict[str, int]] | None:
    """The stored delta and folders; None when there is none (the stored state is not the rows')."""
    delta = _loads(conn.execute("SELECT value FROM meta WHERE key = ?", (DELTA,)).fetchone())
    if not (isinstance(delta, tuple) and len(delta) == 2 and all(isinstance(part, dict) for part in delta)):
        return None
    return delta[0], delta[1]


def load(conn: sqlite3.Connection) -> Snapshot | None:
    """The stored state, or None when there is none to trust (never stored, or a refresh was interrupted)."""
    delta = load_delta(conn)
    if delta is None:
        return None
    base = _loads(conn.execute("SELECT value FROM meta WHERE key = ?", (BASE,)).fetchone())
    # An older amem stores the folders in the base (and keeps no delta): a base of its making, written after
    # this delta, is not the base this delta applies to.
    if not (isinstance(base, tuple) and len(base) == 2 and isinstance(base[0], dict)) or base[1]:
        return None
    files: Files = base[0]
    changes, dirs = delta
    for note_id, seen in changes.items():
        if seen is None:
            files.pop(note_id, None)
        else:
            files[note_id] = seen
    return Snapshot(files, changes, dirs)


def changed_ids(files: Files, known: Files) -> list[str]:
    """The notes whose (mtime, size) differ between a scan and the stored state, new and gone ones too."""
    if files == known:  # the common case, compared in C
        return []
    # A loop of lookups: a quarter of the time of the set of items it replaced (50k notes: 2.7 against
    # 10.5 ms), which hashed every (id, (mtime, size)) of both sides.
    get = known.get
    changed = [note_id for note_id, seen in files.items() if get(note_id) != seen]
    new = sum(1 for note_id in changed if note_id not in known)
    if len(known) > len(files) - new:  # some of the stored notes are not in the scan: gone
        changed += known.keys() - files.keys()
    return sorted(changed)


def forget(conn: sqlite3.Connection) -> None:
    """In a refresh's first transaction: the stored state is not to be trusted until the last one."""
    conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (DELTA, SUM))


class Keeping:
    """The snapshot a refresh stores in its last transaction, prepared before its first deletes the stored
    delta (`forget`). With no snapshot to trust (`fold`), the whole state becomes the base; with the one a
    thorough scan was compared with (`known`), the delta grows by the touched notes that differ from it, or
    is folded into a new base once too big; otherwise the delta read here grows by what the refresh wrote
    of the touched notes (left untrusted when there was none, or it grew too big). `digest` (of a thorough
    scan, with its number of notes) is stored too when the refresh left the scan's notes as it found them."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        scan: VaultScan,
        touched: set[str],
        *,
        known: Snapshot | None = None,
        digest: tuple[str, int] | None = None,
        fold: bool = False,
    ) -> None:
        self.conn = conn
        self.scan = scan
        # Folded, the whole state is stored: the touched notes do not count (a cold build's are all of them).
        self.touched = set() if fold else touched
        self.known = known
        self.digest = digest
        self.fold = fold
        #: how many notes the refresh had found other than the scan (see VaultScan.restated)
        self.restated = scan.restated
        self.stored_delta = None if fold or known is not None else load_delta(conn)

    def store(self, dirs_changed: bool) -> None:
        """In the last transaction, once scan.files holds what the rows hold of every note it names."""
        files = self.scan.files
        if self.fold or self.known is not None:
            delta = self._known_delta()
            if delta is None:
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (BASE, marshal.dumps((files, {}))))
                delta = {}
            _write(self.conn, delta, self.scan.dirs, self._digest())
        elif self.stored_delta is not None:
            grown = {**self.stored_delta[0], **{note_id: files.get(note_id) for note_id in self.touched}}
            if len(grown) > FOLD_AT * 4:  # (no base at hand to fold it into)
                return  # left untrusted: the next thorough refresh compares every row and stores a new base
            dirs = self.scan.dirs if dirs_changed else self.stored_delta[1]
            _write(self.conn, grown, dirs, self._digest())

    def _known_delta(self) -> Delta | None:
        if self.known is None:
            return None
        files = self.scan.files
        delta = dict(self.known.delta)
        before = self.known.files
        for note_id in self.touched:
            now = files.get(note_id)
            if now != before.get(note_id):
                delta[note_id] = now
        return None if len(delta) > FOLD_AT + len(files) // FOLD_SHARE else delta

    def _digest(self) -> str | None:
        if self.digest is None or self.digest[1] != len(self.scan.files):
            return None
        return self.digest[0] if self.scan.restated == self.restated else None


def store_digest(conn: sqlite3.Connection, digest: str) -> None:
    """A thorough scan found nothing changed from a trusted snapshot: its digest is the stored state's."""
    conn.execute(
        "INSERT OR REPLACE INTO meta SELECT ?, ? WHERE EXISTS (SELECT 1 FROM meta WHERE key = ?)", (SUM, digest, DELTA)
    )


def _write(conn: sqlite3.Connection, delta: Delta, dirs: dict[str, int], digest: str | None) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (DELTA, marshal.dumps((delta, dirs))))
    if digest is not None:
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (SUM, digest))


def stored_bytes(conn: sqlite3.Connection) -> bytes | None:
    """The stored state as bytes, for `index_fingerprint`: base and delta (each marshalled stream ends
    itself, so the pair is told apart from any other), or None while it is not the rows' state."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", (BASE, DELTA)))
    base, delta = rows.get(BASE), rows.get(DELTA)
    if not isinstance(base, bytes) or not isinstance(delta, bytes):
        return None
    return base + delta
