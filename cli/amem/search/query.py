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
from typing import TYPE_CHECKING, Any, NamedTuple

from ..index.kept import give_back, take_index
from ..notes.ids import may_read, open_regular
from ..notes.simple_yaml import split_frontmatter
from ..notes.tokenize import Query, fold, title_key
from ..paths import is_inside
from ..report import Reporter
from .rank import Filter, Ranker

if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path

    from ..config import Config
    from ..index.index import VaultIndex
    from ..results import SearchHit, SearchResult
    from .fused import SearchRanker

SNIPPET_CHARS = 160
SNIPPET_BEFORE = 50
#: A hit names at most this many of the notes linking to it (the first by id); `backlinkCount` counts them all.
HIT_BACKLINKS = 5
#: The most queries one search takes: QUERY and its `--also` queries (MCP `query` and `queries`).
MAX_QUERIES = 5
#: Each query of several is ranked this deep before their rankings are fused.
QUERIES_DEPTH = 50
#: A hit's snippet reads this many characters of its note first, and the rest only when they do not settle
#: it: a search that shows a note of 200 MB read and folded all of it, 1.5 s and 415 MB a search.
SNIPPET_READ = 1 << 20
_SPACES = re.compile(r"\s*")


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
    also: Sequence[str] = (),
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
    to `reporter`, once each.

    `also`: more queries, as the agent asking words them (keywords, a sentence the answer would hold): each
    is ranked as `query` is, and the rankings are fused by reciprocal rank, the first query weighing double;
    `total` counts the notes any of them matches."""
    from ..errors import UsageError

    queries = [*([query] if query is not None else []), *also]
    if not queries and exact_title is None:
        raise UsageError("search needs a QUERY or --exact-title TITLE")
    if len(queries) > MAX_QUERIES:
        raise UsageError(f"search takes at most {MAX_QUERIES} queries (QUERY and --also), got {len(queries)}")
    if also and exact_title is not None:
        raise UsageError("--exact-title ranks nothing: it takes no --also")
    limit = config.max_search_results if limit is None else limit
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    reporter = reporter or Reporter()
    index = take_index(config, reporter)
    where = note_filter(tags, folder)
    fuse = (config.semantic if semantic is None else semantic) and exact_title is None and bool(queries)
    try:
        # Damage the refresh does not touch (it reads only the notes table when nothing changed) shows
        # while ranking: the whole search is repaired and run again, not just the refresh.
        return index.repairing(lambda: _search(index, queries, limit, exact_title, where, fuse, reporter, explain))
    finally:
        give_back(index)


def _search(
    index: VaultIndex,
    queries: list[str],
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
    rankers = [_semantic_ranker(index, reporter, text, where) for text in queries] if fuse else []
    semantic = rankers[0] if rankers else None
    query = queries[0] if queries else None
    conn = index.conn
    changes = conn.total_changes
    conn.execute("BEGIN")  # one snapshot for every read, even if another process refreshes meanwhile
    try:
        if exact_title is not None:
            ranking = _titled(conn, exact_title, where, limit)
        elif len(queries) > 1:
            ranking = _fused_queries(conn, queries, rankers, where, limit)
        else:
            ranking = _one_query(conn, Query(query or ""), semantic, where, limit)
        ranked = ranking.ranked[:limit]
        hits = _hits(index, ranked, [Query(text) for text in queries] or [Query("")])
        fused, status = (semantic.fused, semantic.status) if semantic else (False, "unavailable")
        result: SearchResult = {
            "hits": hits,
            "total": ranking.total,
            "truncated": ranking.total > len(hits),
            "fused": fused,
            "semantic": status,
        }
        if semantic is not None and semantic.coverage is not None and semantic.fused:
            result["semanticCoverage"] = semantic.coverage
        if explain:
            _explain(conn, result, ranked, ranking, semantic, query, exact_title)
    finally:
        conn.execute("COMMIT")
    if conn.total_changes != changes:  # the ranking's temporary scores only: the vectors' fingerprint stands
        from ..semantic.vectors import temporary_writes_since

        temporary_writes_since(conn, changes)
    return result


class _Ranking(NamedTuple):
    """A search's ranking before the limit cuts it: (rowid, score) best first and the total; and what
    `--explain` reads: the (first) query's keyword ranking, its title and heading tiers' bonuses, and with
    several queries each one's rank of every note its ranking holds."""

    ranked: list[tuple[int, float | None]]
    total: int
    keyword: list[tuple[int, float | None]]
    titled: dict[int, float]
    headed: dict[int, float]
    ranks: list[dict[int, int]]


def _titled(conn: sqlite3.Connection, exact_title: str, where: Filter, limit: int) -> _Ranking:
    """Every note titled `exact_title`, by id, unscored."""
    clause, params = where.clause("rowid")
    rows = conn.execute(
        f"SELECT rowid FROM notes WHERE title_key = ? AND problem IS NULL{clause} ORDER BY id",
        [title_key(exact_title), *params],
    ).fetchall()
    return _Ranking([(row[0], None) for row in rows[:limit]], len(rows), [], {}, {}, [])


def _one_query(
    conn: sqlite3.Connection, query: Query, semantic: SearchRanker | None, where: Filter, limit: int
) -> _Ranking:
    """One query's ranking, fused with `semantic`'s when there is one (whose total then counts the notes
    only its ranking found)."""
    keyword, ranker = _ranked(conn, query, semantic, where, limit)
    if semantic is not None:
        ranked, total = semantic.fuse(query.text, keyword, ranker.count, where)
    else:
        ranked, total = keyword, ranker.total()
    return _Ranking(ranked, total, keyword, ranker.titled, ranker.headed, [])


def _explain(
    conn: sqlite3.Connection,
    result: SearchResult,
    ranked: list[tuple[int, float | None]],
    ranking: _Ranking,
    semantic: SearchRanker | None,
    query: str | None,
    exact_title: str | None,
) -> None:
    """Add `explain` to each hit and `fusion` to `result` (see `explain`), and each hit's rank in every
    query when there were several."""
    from .explain import add_explanations

    docs = [doc for doc, _ in ranked]
    keyword, titled, headed = ranking.keyword, ranking.titled, ranking.headed
    add_explanations(conn, result, docs, keyword, semantic, query, exact_title, titled, headed)
    for hit, doc in zip(result["hits"], docs, strict=True) if ranking.ranks else ():
        hit["explain"]["queryRanks"] = [ranks.get(doc) for ranks in ranking.ranks]


def _ranked(
    conn: sqlite3.Connection, query: Query, semantic: SearchRanker | None, where: Filter, limit: int
) -> tuple[list[tuple[int, float | None]], Ranker]:
    """One query's keyword ranking (as deep as `semantic` fuses it) and its ranker."""
    ranker = Ranker(conn, query, where)
    ranked: list[tuple[int, float | None]] = list(
        ranker.rank(max(limit, semantic.depth) if semantic and semantic.fused else limit)
    )
    return ranked, ranker


def _fused_queries(
    conn: sqlite3.Connection, queries: list[str], rankers: list[SearchRanker], where: Filter, limit: int
) -> _Ranking:
    """The rankings of several queries (each fused with its semantic ranking when `rankers` has them) fused
    by reciprocal rank, the first weighing double; the total counts the notes any query matched. What
    `--explain` reads is the first query's."""
    from ..index.sql import select_in
    from .fusion import RRF_K, rrf

    rankings: list[list[int]] = []
    first: _Ranking | None = None
    for i, text in enumerate(queries):
        one = _one_query(conn, Query(text), rankers[i] if rankers else None, where, max(limit, QUERIES_DEPTH))
        first = first or one
        rankings.append([doc for doc, _ in one.ranked])
    docs = sorted({doc for ranking in rankings for doc in ranking})
    id_of: dict[int, str] = dict(select_in(conn, "SELECT rowid, id FROM notes WHERE rowid IN ({})", docs))
    rowid = {note_id: doc for doc, note_id in id_of.items()}
    weighted = [(2.0 if i == 0 else 1.0, [id_of[doc] for doc in ranking]) for i, ranking in enumerate(rankings)]
    fused: list[tuple[int, float | None]] = [(rowid[note_id], score) for note_id, score in rrf(weighted, RRF_K)]
    ranks = [{doc: rank for rank, doc in enumerate(ranking, start=1)} for ranking in rankings]
    assert first is not None
    total = _matched_by_any(conn, queries, where, docs)
    return first._replace(ranked=fused, total=total, ranks=ranks)


def _matched_by_any(conn: sqlite3.Connection, queries: list[str], where: Filter, ranked: list[int]) -> int:
    """How many notes (within `where`) the words of any of `queries` match, or their rankings hold (`ranked`:
    a semantic ranking holds notes no word matches)."""
    import json

    expressions = [e for e in (Query(text).expression() for text in queries) if e is not None]
    if not expressions:
        return len(ranked)
    clause, params = where.clause("rowid")
    sql = (
        "SELECT count(*), count(CASE WHEN rowid IN (SELECT value FROM json_each(?)) THEN 1 END)"
        f" FROM search_fts WHERE search_fts MATCH ?{clause}"
    )
    matched, among = conn.execute(sql, [json.dumps(ranked), " OR ".join(expressions), *params]).fetchone()
    return int(matched) + len(ranked) - int(among)


def _semantic_ranker(index: VaultIndex, reporter: Reporter, query: str, where: Filter) -> SearchRanker:
    """The semantic ranker, imported only by a search that asks for it."""
    from .fused import for_search

    return for_search(index, reporter, query=query, where=where)


def _hits(index: VaultIndex, ranked: list[tuple[int, float | None]], queries: list[Query]) -> list[SearchHit]:
    """The hits of these (rowid, score) pairs, in order: their rows and backlinks looked up together, each
    snippet read from the note's file, around the first query's words when it holds them, else the next's."""
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
    patterns = [pattern for pattern in (query.pattern() for query in queries) if pattern is not None]
    hits: list[SearchHit] = []
    for doc, score in ranked:
        note_id, title, frontmatter = rows[doc]
        expires = json.loads(frontmatter).get("expires") if '"expires"' in frontmatter else None
        linked = sorted(linking[note_id])
        snippet, line = _snippet(readable, note_id, patterns)
        hits.append(
            {
                "id": note_id,
                "title": title,
                "score": score,
                "backlinks": linked[:HIT_BACKLINKS],
                "backlinkCount": len(linked),
                "expired": is_expired(expires, index.config.tz),
                "snippet": snippet,
                "line": line,
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


def _snippet(readable: _Readable, note_id: str, patterns: list[re.Pattern[str]]) -> tuple[str, int | None]:
    """A short excerpt of the body around the first place a query word matches (the first pattern that
    matches), else its opening, and the file's line (1-based, frontmatter included) that place is on: from
    the note's first SNIPPET_READ characters when they settle it, else from the whole note. ("", None)
    when the note cannot be read."""
    path = readable.path(note_id)
    if path is None:
        return "", None
    try:
        with io.TextIOWrapper(open_regular(path), encoding="utf-8") as handle:
            text = handle.read(SNIPPET_READ)
            rest = handle.read(1)
            if rest:
                found = _settled(text[: text.rfind("\n") + 1], patterns[0] if patterns else None)
                if found is not None:
                    return found
                text += rest + handle.read()
    except (OSError, UnicodeDecodeError):
        return "", None  # gone or changed since the refresh: the hit stands, the excerpt cannot be shown
    body = split_frontmatter(text)[1]
    above = text.count("\n", 0, len(text) - len(body))
    for pattern in patterns:
        for searched in (body, fold(body)):  # folding keeps every line break: the line is the body's
            match = pattern.search(searched)
            if match:
                return _excerpt(searched, match.start()), above + _line_of(searched, match.start())
    return _excerpt(body, 0), above + _line_of(body, 0)


def _line_of(text: str, pos: int) -> int:
    """The line (1-based) of the first character at or after `pos` that is no space; 1 when there is none."""
    start = _SPACES.match(text, pos)
    end = start.end() if start else pos
    return text.count("\n", 0, end) + 1 if end < len(text) else 1


def _settled(start: str, pattern: re.Pattern[str] | None) -> tuple[str, int] | None:
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
    above = start.count("\n", 0, len(start) - len(body))
    return _excerpt(body, match.start()), above + _line_of(body, match.start())


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
