"""Ranking: which notes match a query and in what order, computed by SQLite's FTS5 over the index.

A note's score is, in this order:

1. BM25 as FTS5 computes it over the note's fields (k1 = 1.2, b = 0.75, length normalised over the
   whole note; IDF = ln((N − df + 0.5)/(df + 0.5)), at least 10⁻⁶), each field's term counts weighted:
   id and title ×5, headings ×4, the ids of the notes linking to it ×1, body ×1.
2. A phrase bonus when the query (two words or more; or its meaningful words alone) occurs as a phrase,
   its last word as a prefix: ΣIDF of its words, IDF = ln(1 + (N − df + 0.5)/(df + 0.5)), × 1.05 when the
   id or the title holds it, × 1 when (only) a heading does, × 0.5 when only the body does.
3. The exact-title tier: a note whose whole title is the query (folded as --exact-title folds it, a
   trailing `{#anchor}` aside), for a query of one word too, gains EXACT_TITLE × ΣIDF (the IDF of 2).
   The exact-heading tier: a note with a heading that is the whole query (folded the same way, its
   `{#anchor}` aside; any level, the note's own `# ` title line too), one word too, gains EXACT_HEADING ×
   ΣIDF, a smaller share than the title's, so that a page titled as the query still outranks a page with
   a heading of those words (and a titled page whose first line is that heading gains both).
4. A graph boost: among the best BOOSTED notes by 1 + 2 + 3, a note linked from other matching notes gains
   GRAPH_BOOST × the best score (1 + 2 + 3) among them, and they are re-ranked so; the notes below keep
   their order. It adds no note that does not match, and it re-ranks the same notes whatever the limit:
   `--limit 1` gives the first hit of `--limit 20`.

Ties go to the smaller id. Why these weights and shares: docs/decisions/0005-ranking-tiers.md.
"""

from __future__ import annotations

import heapq
import json
import math
import operator
import re
import sqlite3
from collections.abc import Collection, Sequence

from ..index.sql import select_in
from ..notes.tokenize import Query, title_key

HEAD_WEIGHT = 5.0
HEADINGS_WEIGHT = 4.0
LINKS_WEIGHT = 1.0
BODY_WEIGHT = 1.0
GRAPH_BOOST = 0.15
#: How many of the best notes by base score the graph boost re-ranks, whatever the limit.
BOOSTED = 40
#: The phrase bonus's tiers: a note gains ΣIDF × the share of the first field group holding the phrase.
PHRASE_TIERS: tuple[tuple[list[str], float], ...] = ((["head"], 1.05), (["headings"], 1.0), (["body"], 0.5))
#: The exact-title tier: a note whose whole title is the query gains this share of ΣIDF on top of the rest.
EXACT_TITLE = 0.5
#: The exact-heading tier: a note with a heading that is the query gains this share of ΣIDF on top of the
#: rest (the exact-title tier's too): less than EXACT_TITLE, so that a page titled as the query outranks a
#: page with a heading of those words.
EXACT_HEADING = 0.25
#: A title's `{#anchor}` at its end, as `title_key` folds it.
_ANCHOR_KEY = re.compile(r" \{#[^}]*\}")
#: The UTF-8 bytes the `ascii` tokenizer reads as the terms are stored (space-separated, folded): a
#: space, a lowercase letter, a digit, and every byte of a character beyond ASCII (a term character).
_TERM_BYTES = b" abcdefghijklmnopqrstuvwxyz0123456789" + bytes(range(0x80, 0x100))
#: The fields `search_heads` holds too (see fts): a phrase looked for in them alone is looked up there, in
#: postings that list the notes with the query's words in those fields, not every note with them anywhere.
SHORT_FIELDS = frozenset({"head", "headings"})
#: The temporary table (of the connection, gone with it) a query of several words scores its matches into
#: when the notes holding no phrase may rank among the best.
SCORES = "temp.amem_scores"
_SCORES_TABLE = "CREATE TEMP TABLE IF NOT EXISTS amem_scores (doc INTEGER PRIMARY KEY, score REAL NOT NULL)"


class Filter:
    """Which notes a search may return: an SQL condition on `notes` and its parameters (empty: all)."""

    def __init__(self, where: str = "", params: Sequence[str] = ()) -> None:
        self.where = where
        self.params = list(params)

    def clause(self, column: str) -> tuple[str, list[str]]:
        if not self.where:
            return "", []
        return f" AND {column} IN (SELECT rowid FROM notes WHERE {self.where})", self.params


class Ranker:
    """Ranks one query over one snapshot of the index (the caller holds a read transaction).

    Only the best max(limit, BOOSTED) notes, and the notes linking to them, come back to Python, and BM25
    (FTS5's, in C) runs only on the notes that may be among them. Every note's BM25 lies below a bound
    known before any is scored (`_Bounds`), so the notes titled as the query (looked up in the index of
    folded titles) and then the notes holding a phrase, in the bonus's tiers, come first: a tier is scored
    (one pass over the matches, BM25 computed for its notes only) while the notes of the tiers below it
    may still reach the best; once the worst of the best beats the next tier's bonus plus that bound, no
    other note can, and none is scored. When the notes holding no phrase may
    rank among the best, every match not scored yet is scored once, in SQLite, into a temporary table of
    this connection (where the boost's linking notes and `total` are looked up); a query of one word ranks
    them by one sorted pass instead. The boost's linking notes outside the best are scored, only those that
    could be a hit's best linking note, by one more FTS5 pass over them. `total` is otherwise a count. A word that is a
    prefix of one stored term only is matched as that term (the same notes, the same BM25): FTS5 then reads
    that term's postings, not a prefix's merged ones."""

    def __init__(self, conn: sqlite3.Connection, query: Query, where: Filter) -> None:
        self.conn = conn
        self.query = query
        self.filter = where
        self.expression = query.expression()
        #: the base score (1 + 2 above) of every note scored so far
        self._scored: dict[int, float] = {}
        #: the phrase tiers not scored: their share of the bonus and the notes they hold (None: not looked up)
        self._rest: list[_Tier] = []
        #: a score no note outside `_scored` reaches (None: every match is scored or ranked below it)
        self._cap: float | None = None
        self._bounds: _Bounds | None = None
        #: every match not in `_scored` is in the table SCORES, and this is their count
        self._stored: int | None = None
        #: the exact-title tier's bonus of each note titled as the query (the filter applied)
        self.titled: dict[int, float] = {}
        #: the exact-heading tier's bonus of each note with a heading that is the query (the filter applied)
        self.headed: dict[int, float] = {}

    def total(self) -> int:
        return self.count()[0]

    def count(self, among: Collection[int] = ()) -> tuple[int, int]:
        """`total`, and how many of the notes `among` (rowids) match, found by the walk that counts the
        total (a fused search counts the notes only its semantic ranking found this way, in no walk of
        its own); after `rank`, so that the matches it scored are looked up instead when it stored them."""
        if self.expression is None:
            return 0, 0
        given = sorted(set(among))
        if self._stored is not None:
            # every match is in `_scored` or in SCORES
            rest = [doc for doc in given if doc not in self._scored]
            found = len(given) - len(rest)
            if rest:
                sql = f"SELECT count(*) FROM {SCORES} WHERE doc IN (SELECT value FROM json_each(?))"
                found += int(self.conn.execute(sql, (json.dumps(rest),)).fetchone()[0])
            return self._stored, found
        clause, params = self.filter.clause("rowid")
        if not given:
            sql = f"SELECT count(*), 0 FROM search_fts WHERE search_fts MATCH ?{clause}"
            args: list[object] = [self.expression, *params]
        else:
            sql = (
                "SELECT count(*), count(CASE WHEN rowid IN (SELECT value FROM json_each(?)) THEN 1 END)"
                f" FROM search_fts WHERE search_fts MATCH ?{clause}"
            )
            args = [json.dumps(given), self.expression, *params]
        total, found = self.conn.execute(sql, args).fetchone()
        return int(total), int(found)

    def rank(self, limit: int) -> list[tuple[int, float]]:
        """The best `limit` (rowid, score) pairs, best first: the best BOOSTED notes by base score in the
        order of their boosted scores, then the next ones by base score; the same order whatever the
        limit, so a smaller limit gives the first of a larger one's hits. Equal base scores go to the
        smaller id there too, so that an index kept up to date (whose rowids are in another order) and one
        built afresh choose the same notes."""
        if self.expression is None or limit < 1:
            return []
        depth = max(limit, BOOSTED)
        best = dict(self._best(depth))
        if len(best) == depth:  # the notes tied with the last: known, to be chosen by id
            edge = min(best.values())
            self._complete(edge)
            best = {doc: score for doc, score in self._scored.items() if score >= edge}
        ids = dict(select_in(self.conn, "SELECT rowid, id FROM notes WHERE rowid IN ({})", list(best)))
        chosen = sorted(best.items(), key=lambda item: (-item[1], ids[item[0]]))[:depth]
        final = self._with_boosts(dict(chosen[:BOOSTED]))
        below = dict(chosen[BOOSTED:])  # every boosted score is at least every base score below the pool
        ordered = [*_ordered(final, ids), *_ordered(below, ids)]
        return [(doc, _rounded(score, 6)) for doc, score in ordered[:limit]]

    def _complete(self, edge: float) -> None:
        """Every match scoring `edge` or more in `_scored`: the notes tied with the last of the best too,
        not only those of smaller rowid that the best took."""
        if self._stored is not None:
            sql = f"SELECT doc, score FROM {SCORES} WHERE score >= ?"
            self._scored.update(self.conn.execute(sql, (edge,)).fetchall())
        elif self._cap is not None and self._cap >= edge:
            # a sorted pass stopped at a note scoring `edge` (a query of one word): its ties, scored again
            sql, args = self._pass(self._rest, self._scored.keys())
            rows = self.conn.execute(f"SELECT rowid, score FROM ({sql}) WHERE score >= ?", [*args, edge]).fetchall()
            self._scored.update(rows)

    def _bm25(self, extra: str = "") -> str:
        """Every matching note's (rowid, BM25 score `extra`), in SQL; its parameters are `_args()`, after
        those of `extra`."""
        clause = self.filter.clause("rowid")[0]
        weights = f"{HEAD_WEIGHT}, {HEADINGS_WEIGHT}, {LINKS_WEIGHT}, {BODY_WEIGHT}"
        score = f"-bm25(search_fts, {weights}){extra} AS score"
        return f"SELECT rowid, {score} FROM search_fts WHERE search_fts MATCH ?{clause}"

    def _args(self) -> list[object]:
        return [self.expression, *self.filter.clause("rowid")[1]]

    def _best(self, depth: int) -> list[tuple[int, float]]:
        """The best `depth` notes by base score (ties: the smaller rowid), exactly those a sort of every
        match would give: the notes titled as the query first, then the phrase tiers, as far as they may
        reach the best, then the others."""
        tiers = self._titled_tiers()
        if self.query.phrases:
            self._bounds = bounds = self._bounds or self._statistics()
            tiers += [_Tier(fields, bounds.bonus * share) for fields, share in PHRASE_TIERS]
        holders: set[int] = set()
        pending: list[_Tier] = []
        while tiers:
            tier = tiers.pop(0)
            tier.notes = (self._holding(tier.fields) if tier.notes is None else tier.notes) - holders
            holders |= tier.notes
            pending.append(tier)
            if sum(len(t.notes or ()) for t in pending) + len(self._scored) < depth:
                if tiers:
                    continue  # too few notes to fill the best: the next tier's are among them too
                return self._rank_others(holders, pending, depth)  # too few holders: all are among the best
            self._score(pending)
            pending = []
            best = _top(self._scored, depth)
            cap = _above(max([0.0, *(t.bonus for t in tiers)]), self._bm25_bound())
            if len(best) == depth and best[-1][1] > cap:
                self._rest, self._cap = tiers, cap
                return best
        return self._rank_others(holders, [], depth)

    def _titled_tiers(self) -> list[_Tier]:
        """The exact-title and exact-heading tiers: the notes of `_exact`, each gaining its shares of ΣIDF
        on top of the bonus of the phrase tier it holds (looked up for these notes alone), as tiers of known
        notes, one per bonus, to be scored first. No other note gains those shares, so the bounds on the
        others stand."""
        shares = self._exact()
        if not shares:
            return []
        self._bounds = bounds = self._bounds or self._statistics()
        phrase = dict.fromkeys(shares, 0.0)
        left = set(shares)
        for fields, share in PHRASE_TIERS if self.query.phrases else ():
            found = self._holding(fields, left, seek=True)
            phrase.update(dict.fromkeys(found, bounds.bonus * share))
            left -= found
            if not left:
                break
        groups: dict[float, set[int]] = {}
        for doc, (title, heading) in shares.items():
            if title:
                self.titled[doc] = bounds.bonus * title
            if heading:
                self.headed[doc] = bounds.bonus * heading
            groups.setdefault(phrase[doc] + bounds.bonus * title + bounds.bonus * heading, set()).add(doc)
        return [_Tier([], bonus, notes) for bonus, notes in sorted(groups.items(), reverse=True)]

    def _exact(self) -> dict[int, tuple[float, float]]:
        """The (filtered) notes whose whole title is the query, found by the index of folded titles (a
        title's `{#anchor}` aside), and those with a heading that is the query, found by the index of
        folded headings (`note_headings`), each with its shares of ΣIDF: (EXACT_TITLE or 0, EXACT_HEADING
        or 0)."""
        key = title_key(self.query.text)
        shares: dict[int, tuple[float, float]] = {}
        if not key:
            return shares
        if EXACT_TITLE > 0:
            clause, params = self.filter.clause("rowid")
            sql = (
                "SELECT rowid, title_key FROM notes WHERE (title_key = ? OR (title_key >= ? AND title_key < ?))"
                f" AND problem IS NULL{clause}"
            )
            for doc, found in self.conn.execute(sql, [key, f"{key} {{#", f"{key} {{$", *params]):
                if found == key or _ANCHOR_KEY.fullmatch(found, len(key)):
                    shares[doc] = (EXACT_TITLE, 0.0)
        if EXACT_HEADING > 0:
            clause, params = self.filter.clause("note")
            sql = f"SELECT note FROM note_headings WHERE key = ?{clause}"
            for (doc,) in self.conn.execute(sql, [key, *params]):
                shares[doc] = (shares.get(doc, (0.0, 0.0))[0], EXACT_HEADING)
        return shares

    def _holding(self, fields: list[str], among: Collection[int] | None = None, seek: bool = False) -> set[int]:
        """The notes holding one of the query's phrases in one of these fields (of the notes `among`, when
        given: found by a pass over the matches, or, `seek`, by looking each up), in `search_heads` when
        it holds these fields (`phrase_table`)."""
        table = phrase_table(fields)
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
        args = [phrase_match(fields, self.query.phrases)]
        if among is not None:
            sql += f" AND {'' if seek else '+'}rowid IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(among)))
        return {row[0] for row in self.conn.execute(sql, args)}

    def _score(self, tiers: list[_Tier]) -> None:
        """The base scores of the (matching, filtered) notes of these tiers: BM25 plus the tier's bonus."""
        bonus = {doc: tier.bonus for tier in tiers for doc in tier.notes or ()}
        if not bonus:
            return
        for doc, score in self._fts5_bm25(bonus).items():
            self._scored[doc] = score + bonus[doc]

    def _rank_others(self, holders: set[int], tiers: list[_Tier], depth: int) -> list[tuple[int, float]]:
        """The best `depth` notes when those holding no phrase may be among them: one sorted pass over the
        matches not scored yet, the notes of `tiers` (not scored yet) with their bonus, merged with the
        scored ones."""
        sql, args = self._pass(tiers, holders.difference(*(t.notes or () for t in tiers)))
        self._rest = tiers
        if not self.query.phrases:
            # One word: a sorted pass, the linking notes outside it scored by another (cheaper than storing
            # every match). A note not scored ranks at most as the worst of those ranked: one past the
            # depth, so that a note tied with the depth-th is known to be there only when it is (`_complete`).
            others = self.conn.execute(f"{sql} ORDER BY 2 DESC, 1 LIMIT ?", [*args, depth + 1]).fetchall()
            self._cap = others[-1][1] if len(others) == depth + 1 else None
        else:
            # Several words: every match scored once into SCORES, where the linking notes and `total` are
            # looked up (the query's phrases have cost a pass over the matches already).
            conn = self.conn
            conn.execute(_SCORES_TABLE)
            conn.execute(f"DELETE FROM {SCORES}")
            conn.execute(f"INSERT INTO {SCORES} {sql}", args)
            self._stored = len(self._scored) + int(conn.execute(f"SELECT count(*) FROM {SCORES}").fetchone()[0])
            best = f"SELECT doc, score FROM {SCORES} ORDER BY score DESC, doc LIMIT ?"
            others = conn.execute(best, (depth,)).fetchall()
        self._scored.update(others)
        return _top(self._scored, depth)

    def _pass(self, tiers: list[_Tier], scored: Collection[int]) -> tuple[str, list[object]]:
        """A pass over the matches but the `scored` ones, each with its base score (`score`): BM25, plus
        the bonus of the one of these tiers (not scored yet) holding it; and its parameters."""
        extra, args = "", []
        if tiers:
            cases = " ".join("WHEN rowid IN (SELECT value FROM json_each(?)) THEN ?" for _ in tiers)
            extra = f" + CASE {cases} ELSE 0.0 END"
            for tier in tiers:
                args += [json.dumps(sorted(tier.notes or ())), tier.bonus]
        sql = self._bm25(extra)
        args += self._args()
        if scored:
            sql += " AND +rowid NOT IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(scored)))
        return sql, args

    def _statistics(self) -> _Bounds:
        """ΣIDF of the query's words for the phrase bonus, each word's df the notes holding its terms (a
        prefix: its terms' df summed, at most N; a phrase of CJK pairs: its rarest pair); and, for the
        bound on BM25, a number of notes each word's FTS5 phrase matches at least (0 when unknown). A word
        that is a prefix of one stored term only becomes that term in the query's expression."""
        conn = self.conn
        # All notes less the few unreadable ones: counted in a narrow index and the problems' partial
        # index, not by reading every row of the wide notes table.
        notes, n = conn.execute(
            "SELECT count(*), count(*) - (SELECT count(*) FROM notes WHERE problem IS NOT NULL) FROM notes"
        ).fetchone()
        total = 0.0
        least: list[int] = []
        phrases: list[str] = []
        for word in self.query.words:
            dfs = []
            largest = 0
            phrase = word.expression()
            for i, term in enumerate(word.terms):
                if word.prefix and i == len(word.terms) - 1:
                    row = conn.execute(
                        "SELECT sum(doc), max(doc), count(*), min(term) FROM search_vocab WHERE term >= ? AND term < ?",
                        (term, _prefix_end(term)),
                    ).fetchone()
                    if len(word.terms) == 1 and row[2] == 1 and '"' not in row[3]:  # a prefix of one term
                        phrase = f'"{row[3]}"'
                else:
                    held = _notes_holding(conn, term)
                    row = (held, held)
                dfs.append(min(n, row[0] or 0) if row else 0)
                largest = (row[1] or 0) if row else 0
            df = min(dfs) if dfs else 0
            total += math.log(1 + (n - df + 0.5) / (df + 0.5))
            least.append(largest if len(word.terms) == 1 else 0)
            phrases.append(phrase)
        # The same notes and BM25 as the query's own expression: FTS5 then reads the term's postings alone,
        # not a prefix's merged from the index.
        self.expression = " OR ".join(phrases) if phrases else self.expression
        return _Bounds(total, notes, least)

    def _bm25_bound(self) -> float:
        """A score above any note's BM25 for this query (see _Bounds)."""
        if self._bounds is None:
            self._bounds = self._statistics()
        return self._bounds.bm25()

    def _with_boosts(self, scores: dict[int, float]) -> dict[int, float]:
        """Scores plus GRAPH_BOOST × the best score among the matching notes that link to each."""
        linking: dict[int, list[int]] = {}
        for target, src in select_in(
            self.conn,
            "SELECT DISTINCT n.rowid, l.src FROM notes n JOIN links l ON l.resolved = n.id WHERE n.rowid IN ({})",
            list(scores),
        ):
            if src != target:
                linking.setdefault(target, []).append(src)
        if not linking:
            return scores
        known = self._scored
        self._score_sources(sorted(self._unknown_sources(linking)))
        final = dict(scores)
        for target, srcs in linking.items():
            found = [known[src] for src in srcs if src in known]
            if found:
                final[target] += GRAPH_BOOST * max(found)
        return final

    def _unknown_sources(self, linking: dict[int, list[int]]) -> set[int]:
        """The linking notes not scored yet that may be a hit's best one: those of a hit whose scored
        linking notes do not reach the cap on every other note's score."""
        cap = self._cap
        if self._stored is not None:
            return {src for srcs in linking.values() for src in srcs if src not in self._scored}
        if cap is None:
            return set()  # every match is scored: a linking note not scored does not match
        unknown: set[int] = set()
        for srcs in linking.values():
            missing = [src for src in srcs if src not in self._scored]
            found = [self._scored[src] for src in srcs if src in self._scored]
            if missing and not (found and max(found) >= cap):
                unknown.update(missing)
        return unknown

    def _score_sources(self, sources: list[int]) -> None:
        """The base scores of these notes (those that match): BM25 (FTS5's pass over them), plus the bonus
        of the phrase tier, not scored yet, each holds."""
        if not sources:
            return
        if self._stored is not None:
            self._scored.update(select_in(self.conn, f"SELECT doc, score FROM {SCORES} WHERE doc IN ({{}})", sources))
            return
        bonus: dict[int, float] = {}
        for tier in self._rest:
            if tier.notes is not None:
                bonus.update((doc, tier.bonus) for doc in sources if doc in tier.notes and doc not in bonus)
                continue
            for doc in self._holding(tier.fields, [s for s in sources if s not in bonus]):
                bonus[doc] = tier.bonus
        for doc, score in self._fts5_bm25(sources).items():
            self._scored[doc] = score + bonus[doc] if doc in bonus else score

    def _fts5_bm25(self, docs: Collection[int]) -> dict[int, float]:
        """The BM25 of those of these notes that match (the filter applied), by FTS5: one pass."""
        if not docs:
            return {}
        sql = f"{self._bm25()} AND +rowid IN (SELECT value FROM json_each(?))"
        return dict(self.conn.execute(sql, [*self._args(), json.dumps(sorted(docs))]))


def phrase_match(fields: Sequence[str], phrases: Sequence[str]) -> str:
    """The FTS5 query for any of these phrases in one of these fields."""
    return f"{{{' '.join(fields)}}} : ({' OR '.join(phrases)})"


def phrase_table(fields: Collection[str]) -> str:
    """The FTS5 table to look for a phrase in these fields in."""
    return "search_heads" if fields and SHORT_FIELDS.issuperset(fields) else "search_fts"


def _notes_holding(conn: sqlite3.Connection, term: str) -> int:
    """How many notes hold this stored term: FTS5's count of its matches, which reads its postings but not
    their positions (`search_vocab` reads those too, to count its instances); by the vocabulary for a term
    that the `ascii` tokenizer would read otherwise than as itself."""
    if term and not term.encode("utf-8", "replace").translate(None, _TERM_BYTES[1:]):
        sql = "SELECT count(*) FROM search_fts WHERE search_fts MATCH ?"
        return int(conn.execute(sql, (f'"{term}"',)).fetchone()[0])
    row = conn.execute("SELECT doc FROM search_vocab WHERE term = ?", (term,)).fetchone()
    return int(row[0]) if row else 0


class _Tier:
    """A tier of the bonus: the fields, the bonus its notes gain, and the notes it holds (a phrase tier's
    looked up when it is reached; the exact-title tier's known from the start, its fields none)."""

    def __init__(self, fields: list[str], bonus: float, notes: set[int] | None = None) -> None:
        self.fields = fields
        self.bonus = bonus
        self.notes = notes


class _Bounds:
    """What bounds the query's scores: ΣIDF (the phrase bonus) and, per FTS5 phrase of the query, a number
    of notes it matches at least, with the number of notes, at least FTS5's row count.

    FTS5's BM25 is Σ IDF × f·(k1 + 1) / (f + k1·(1 − b + b·D/avgD)) over the phrases, with k1 = 1.2,
    b = 0.75 and IDF = ln((N − hits + 0.5)/(hits + 0.5)), at least 10⁻⁶: each term is below IDF × 2.2,
    and IDF grows with N and falls with hits, so N and the least hits bound it from above."""

    def __init__(self, bonus: float, notes: int, least: list[int]) -> None:
        self.bonus = bonus
        self.notes = notes
        self.least = least

    def bm25(self) -> float:
        idfs = (max(1e-6, math.log((self.notes - hits + 0.5) / (hits + 0.5))) for hits in self.least)
        return 2.2 * sum(idfs)


def _ordered(scores: dict[int, float], ids: dict[int, str]) -> list[tuple[int, float]]:
    """These (rowid, score) pairs, best first, ties (to 9 digits) to the smaller id."""
    return sorted(scores.items(), key=lambda item: (-_rounded(item[1], 9), ids[item[0]]))


def _top(scores: dict[int, float], depth: int) -> list[tuple[int, float]]:
    """The best `depth` (rowid, score) pairs, ties to the smaller rowid: a sort's first `depth`, found by
    comparing (−score, rowid) tuples in C (thousands of scored notes, no key function called for each)."""
    best = heapq.nsmallest(depth, zip(map(operator.neg, scores.values()), scores.keys(), strict=True))
    return [(doc, -negative) for negative, doc in best]


def _above(bonus: float, bound: float) -> float:
    """A score no note of a tier of this bonus reaches, BM25 below `bound`: with room for rounding."""
    return (bonus + bound) * (1 + 1e-9) + 1e-12


def _rounded(value: float, digits: int) -> float:
    """`value` to `digits` significant digits: scores are compared and shown without float noise."""
    return float(f"{value:.{digits}g}")


def _prefix_end(word: str) -> str:
    """The smallest string greater than every string starting with `word` (UTF-8 order is code-point order)."""
    last = ord(word[-1]) + 1
    if 0xD800 <= last <= 0xDFFF:
        last = 0xE000
    return word[:-1] + chr(last)
