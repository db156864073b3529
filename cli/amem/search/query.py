"""`amem search`: bring the index up to date, rank (see `rank`), and shape the results.

The pieces, each in its own module: `tokenize` (how text and queries become terms), `index` and `fts`
(keeping the notes and the search rows up to date), `rank` (scores), and this one (filters, hits,
snippets, expiry). Tags and folders narrow a search before `total` is counted.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..index.kept import give_back, take_index
from ..notes.ids import may_read, open_regular
from ..notes.simple_yaml import split_frontmatter
from ..notes.tokenize import Query, fold, title_key
from ..paths import is_inside
from ..report import Reporter
from .rank import Filter, Ranker

if TYPE_CHECKING:
    from pathlib import Path

    from ..config import Config
    from ..index.index import VaultIndex
    from ..results import SearchHit, SearchResult
    from .fused import SearchRanker

SNIPPET_CHARS = 160
SNIPPET_BEFORE = 50
#: A hit's snippet reads this many characters of its note first, and the rest only when they do not settle
#: it: a search that shows a note of 200 MB read and folded all of it, 1.5 s and 415 MB a search.
SNIPPET_READ = 1 << 20


def note_filter(tags: Sequence[str] = (), folder: str | None = None) -> Filter:
    """Notes that have every tag (or one nested under it) and lie under `folder` (an id prefix; a folder
    name without its trailing `/` means that folder)."""
    from ..notes.tags import notes_where

    prefix = folder_prefix(folder) if folder is not None else ""
    if not prefix and not tags:
        return Filter()
    return Filter(*notes_where(prefix, tags))


def folder_prefix(folder: str) -> str:
    """`notes`, `./notes/`, `/notes` → `notes/`; the vault root (`""`, `.`, `/`) → `""`; InvalidId for a
    folder outside the vault (`../`)."""
    from ..notes.ids import normalise_prefix

    prefix = normalise_prefix(folder).rstrip("/")
    if prefix in ("", "."):
        return ""
    return prefix + "/"


def search(
    config: Config,
    query: str | None,
    *,
    limit: int | None = None,
    exact_title: str | None = None,
    tags: Sequence[str] = (),
    folder: str | None = None,
    semantic: bool | None = None,
    explain: bool = False,
    reporter: Reporter | None = None,
) -> SearchResult:
    """Bring the index up to date and answer one search: {hits, total, truncated, fused, semantic}.

    With `exact_title`, every note whose folded title equals it, by id, unranked; `query` then only
    steers the snippets. `semantic` (default: the config's `semantic`) fuses the keyword ranking with the
    semantic one; `exact_title` never does. `explain` adds to each hit where its rank came from and to the
    result the fusion chosen for the query (see `explain`). Notes that could not be indexed are reported
    to `reporter`, once each."""
    from ..errors import UsageError

    if query is None and exact_title is None:
        raise UsageError("search needs a QUERY or --exact-title TITLE")
    limit = config.max_search_results if limit is None else limit
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    reporter = reporter or Reporter()
    index = take_index(config, reporter)
    where = note_filter(tags, folder)
    fuse = (config.semantic if semantic is None else semantic) and exact_title is None and query is not None
    try:
        # Damage the refresh does not touch (it reads only the notes table when nothing changed) shows
        # while ranking: the whole search is repaired and run again, not just the refresh.
        return index.repairing(lambda: _search(index, query, limit, exact_title, where, fuse, reporter, explain))
    finally:
        give_back(index)


def _search(
    index: VaultIndex,
    query: str | None,
    limit: int,
    exact_title: str | None,
    where: Filter,
    fuse: bool,
    reporter: Reporter,
    explain: bool = False,
) -> SearchResult:
    stats = index.refresh()
    for message in stats.warnings:
        reporter.warn(message)
    semantic = _semantic_ranker(index, reporter, query or "", where) if fuse else None
    conn = index.conn
    parsed = Query(query or "")
    changes = conn.total_changes
    conn.execute("BEGIN")  # one snapshot for every read, even if another process refreshes meanwhile
    keyword: list[tuple[int, float | None]] = []
    titled: dict[int, float] = {}
    headed: dict[int, float] = {}
    try:
        if exact_title is not None:
            clause, params = where.clause("rowid")
            rows = conn.execute(
                f"SELECT rowid FROM notes WHERE title_key = ? AND problem IS NULL{clause} ORDER BY id",
                [title_key(exact_title), *params],
            ).fetchall()
            ranked: list[tuple[int, float | None]] = [(row[0], None) for row in rows[:limit]]
            total = len(rows)
        else:
            ranker = Ranker(conn, parsed, where)
            ranked = list(ranker.rank(max(limit, semantic.depth) if semantic and semantic.fused else limit))
            keyword, titled, headed = ranked, ranker.titled, ranker.headed
            if semantic is not None:  # it counts the total with the notes only its ranking found
                ranked, total = semantic.fuse(query or "", ranked, ranker.count, where)
            else:
                total = ranker.total()
            ranked = ranked[:limit]
        hits = _hits(index, ranked, parsed)
        fused, status = (semantic.fused, semantic.status) if semantic else (False, "unavailable")
        result: SearchResult = {
            "hits": hits,
            "total": total,
            "truncated": total > len(hits),
            "fused": fused,
            "semantic": status,
        }
        if semantic is not None and semantic.coverage is not None and semantic.fused:
            result["semanticCoverage"] = semantic.coverage
        if explain:
            from .explain import add_explanations

            docs = [doc for doc, _ in ranked]
            add_explanations(conn, result, docs, keyword, semantic, query, exact_title, titled, headed)
    finally:
        conn.execute("COMMIT")
    if conn.total_changes != changes:  # the ranking's temporary scores only: the vectors' fingerprint stands
        from ..semantic.vectors import temporary_writes_since

        temporary_writes_since(conn, changes)
    return result


def _semantic_ranker(index: VaultIndex, reporter: Reporter, query: str, where: Filter) -> SearchRanker:
    """The semantic ranker, imported only by a search that asks for it."""
    from .fused import for_search

    return for_search(index, reporter, query=query, where=where)


def _hits(index: VaultIndex, ranked: list[tuple[int, float | None]], query: Query) -> list[SearchHit]:
    """The hits of these (rowid, score) pairs, in order: their rows and backlinks looked up together, each
    snippet read from the note's file."""
    import json

    from ..index.sql import select_in

    conn = index.conn
    docs = [doc for doc, _ in ranked]
    rows = {
        row[0]: row[1:]
        for row in select_in(conn, "SELECT rowid, id, title, frontmatter FROM notes WHERE rowid IN ({})", docs)
    }
    ids = [rows[doc][0] for doc in docs]
    linking: dict[str, set[str]] = {note_id: set() for note_id in ids}
    sql = "SELECT l.resolved, n.id FROM links l JOIN notes n ON n.rowid = l.src WHERE l.resolved IN ({})"
    for target, source in select_in(conn, sql, ids):
        if source != target:
            linking[target].add(source)
    readable = _Readable(index.config.vault_root)
    pattern = query.pattern()
    hits: list[SearchHit] = []
    for doc, score in ranked:
        note_id, title, frontmatter = rows[doc]
        expires = json.loads(frontmatter).get("expires") if '"expires"' in frontmatter else None
        hits.append(
            {
                "id": note_id,
                "title": title,
                "score": score,
                "backlinks": sorted(linking[note_id]),
                "expired": is_expired(expires, index.config.tz),
                "snippet": _snippet(readable, note_id, pattern),
            }
        )
    return hits


class _Readable:
    """`may_read` for the notes of one search, the vault's real path and each folder's found once: a note
    that is no symlink itself lies where its folder's real path says."""

    def __init__(self, vault_root: Path | str) -> None:
        self.root = os.path.abspath(vault_root)
        self.real_root = os.path.realpath(self.root)
        self._folders: dict[str, str] = {}

    def path(self, note_id: str) -> str | None:
        """The note's path, when amem may read it; None otherwise."""
        path = os.path.join(self.root, note_id)
        folder, name = os.path.split(path)
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return path if may_read(path, self.real_root) else None
        except OSError:
            return None
        real = self._folders.get(folder)
        if real is None:
            real = self._folders[folder] = os.path.realpath(folder)
        return path if is_inside(os.path.join(real, name), self.real_root) else None


def is_expired(value: Any, tz: Any) -> bool:
    """True when `value` (frontmatter `expires`) is a date or time in the past, in the zone `tz`
    (None: the system's local zone). A date expires after its last day; values that are no date never do."""
    if not isinstance(value, str):
        return False
    from datetime import date, datetime

    from ..timefmt import now

    text = value.strip()
    current = now(tz)
    try:
        if len(text) == 10:
            return date.fromisoformat(text) < current.date()
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=current.tzinfo)
    return moment < current


def _snippet(readable: _Readable, note_id: str, pattern: re.Pattern[str] | None) -> str:
    """A short excerpt of the body around the first place a query word matches, else its opening: from
    the note's first SNIPPET_READ characters when they settle it, else from the whole note."""
    path = readable.path(note_id)
    if path is None:
        return ""
    try:
        with io.TextIOWrapper(open_regular(path), encoding="utf-8") as handle:
            text = handle.read(SNIPPET_READ)
            rest = handle.read(1)
            if rest:
                found = _settled(text[: text.rfind("\n") + 1], pattern)
                if found is not None:
                    return found
                text += rest + handle.read()
    except (OSError, UnicodeDecodeError):
        return ""  # gone or changed since the refresh: the hit stands, the excerpt cannot be shown
    body = split_frontmatter(text)[1]
    if pattern is not None:
        for text in (body, fold(body)):
            match = pattern.search(text)
            if match:
                return _excerpt(text, match.start())
    return _excerpt(body, 0)


def _settled(start: str, pattern: re.Pattern[str] | None) -> str | None:
    """The snippet of a note from `start`, its first whole lines, when they settle it: its frontmatter
    closed there, and a match of the body there far enough from their end for the excerpt to lie within
    them. None otherwise: the whole note decides."""
    frontmatter, body = split_frontmatter(start)
    if pattern is None or (frontmatter is None and split_frontmatter(start + "---\n")[0] is not None):
        return None  # no match to find, or a frontmatter that may close further on
    match = pattern.search(body)
    # Far enough from the end that no earlier match runs past it (none is longer than the pattern).
    if match is None or match.start() + SNIPPET_CHARS + len(pattern.pattern) >= len(body):
        return None
    return _excerpt(body, match.start())


def _excerpt(text: str, pos: int) -> str:
    start = max(0, pos - SNIPPET_BEFORE)
    if start:
        space = text.find(" ", start, pos)
        start = space + 1 if space >= 0 else start  # start at a word unless the text has no spaces (CJK)
    end = min(len(text), start + SNIPPET_CHARS)
    if end < len(text):
        space = text.rfind(" ", pos + 1, end)
        end = space if space > 0 else end
    piece = " ".join(text[start:end].split())
    return ("…" if start else "") + piece + ("…" if end < len(text) and piece else "")
