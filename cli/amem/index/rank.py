"""Ranking: which notes match a query and in what order, computed by SQLite's FTS5 over the index.

A note's score is, in this order:

1. BM25 as FTS5 computes it over the note's fields (k1 = 1.2, b = 0.75, length normalised over the
   whole note; IDF = ln((N − df + 0.5)/(df + 0.5)), at least 10⁻⁶), each field's term counts weighted:
   id and title ×5, headings ×4, the ids of the notes linking to it ×1, body ×1.
2. A phrase bonus when the query (two words or more; or its meaningful words alone) occurs as a phrase,
   its last word as a prefix: ΣIDF of its words, IDF = ln(1 + (N − df + 0.5)/(df + 0.5)), × 1.05 when the
   id or the title holds it, × 1 when (only) a heading does, × 0.5 when only the body does.

Headings weigh ×4 because a heading names what its section is about: on real documentation, queries
that are a section's heading find its page first far more often (MRR@10 0.82 → 0.86 in English). The id
and title weigh ×5 rather than ×3 so that a page's own title outranks a page with a heading of the same
words (English title queries 0.966 → 0.975 MRR@10, headings within 0.001). The phrase bonus's id and
title tier (PHRASE_TIERS) is a little larger than the headings' for the same reason, when a page says its
heading's words more often than the titled page does: on the Vue docs, English titles 0.926 → 0.941 and
Chinese titles 0.945 → 0.956, Chinese headings unchanged, English headings 0.853 → 0.850. Larger tiers
win more English titles (0.953 from × 1.5) but cost Chinese headings (0.875); see docs/performance.md.
3. A graph boost: a note linked from other hits gains GRAPH_BOOST × the best score (1 + 2) among them.
   It re-ranks the best CANDIDATES + limit notes by 1 + 2; it adds no note that does not match.

Ties go to the smaller id.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence

from .sql import select_in
from .tokenize import Query

HEAD_WEIGHT = 5.0
HEADINGS_WEIGHT = 4.0
LINKS_WEIGHT = 1.0
BODY_WEIGHT = 1.0
GRAPH_BOOST = 0.15
#: How many notes beyond the limit the graph boost may lift into the results.
CANDIDATES = 30
#: The phrase bonus's tiers: a note gains ΣIDF × the share of the first field group holding the phrase.
PHRASE_TIERS: tuple[tuple[list[str], float], ...] = ((["head"], 1.05), (["headings"], 1.0), (["body"], 0.5))
#: The temporary table (of the connection, gone with it) `Ranker.rank` scores a query's matches into.
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

    Only the best limit + CANDIDATES notes, and the notes linking to them, come back to Python. A query
    with a phrase has every match scored once, inside SQLite (FTS5's BM25 in C), into a temporary table
    of this connection, where the phrase bonus is added to the few notes holding the phrase and where the
    boost's linking notes are looked up and `total` counted. A query of one word, with no bonus, is ranked
    by one sorted pass, and the linking notes outside it by a second that scores only them: cheaper than
    storing every match."""

    def __init__(self, conn: sqlite3.Connection, query: Query, where: Filter) -> None:
        self.conn = conn
        self.query = query
        self.filter = where
        self.expression = query.expression()
        self._scored = False

    def total(self) -> int:
        if self.expression is None:
            return 0
        if self._scored:
            return int(self.conn.execute(f"SELECT count(*) FROM {SCORES}").fetchone()[0])
        clause, params = self.filter.clause("rowid")
        sql = f"SELECT count(*) FROM search_fts WHERE search_fts MATCH ?{clause}"
        return int(self.conn.execute(sql, [self.expression, *params]).fetchone()[0])

    def rank(self, limit: int) -> list[tuple[int, float]]:
        """The best `limit` (rowid, score) pairs, best first."""
        if self.expression is None:
            return []
        if self.query.phrases:
            self._score_all()
            best = self.conn.execute(
                f"SELECT doc, score FROM {SCORES} ORDER BY score DESC, doc LIMIT ?", (limit + CANDIDATES,)
            ).fetchall()
        else:
            sql = f"{self._bm25()} ORDER BY 2 DESC, 1 LIMIT ?"
            best = self.conn.execute(sql, [*self._args(), limit + CANDIDATES]).fetchall()
        final = self._with_boosts(dict(best))
        ids = dict(select_in(self.conn, "SELECT rowid, id FROM notes WHERE rowid IN ({})", list(final)))
        ranked = sorted(final.items(), key=lambda item: (-_rounded(item[1], 9), ids[item[0]]))
        return [(doc, _rounded(score, 6)) for doc, score in ranked[:limit]]

    def _bm25(self) -> str:
        """Every matching note's (rowid, BM25 score), in SQL; its parameters are `_args()`."""
        clause = self.filter.clause("rowid")[0]
        weights = f"{HEAD_WEIGHT}, {HEADINGS_WEIGHT}, {LINKS_WEIGHT}, {BODY_WEIGHT}"
        return f"SELECT rowid, -bm25(search_fts, {weights}) FROM search_fts WHERE search_fts MATCH ?{clause}"

    def _args(self) -> list[object]:
        return [self.expression, *self.filter.clause("rowid")[1]]

    def _score_all(self) -> None:
        """Every matching note's score before the graph boost (1 + 2 above), in the table SCORES."""
        conn = self.conn
        conn.execute(_SCORES_TABLE)
        conn.execute(f"DELETE FROM {SCORES}")
        conn.execute(f"INSERT INTO {SCORES} {self._bm25()}", self._args())
        self._scored = True
        phrases = self.query.phrases
        if phrases:
            # The bonus goes to the notes holding a phrase, looked up by rowid, each in the first field
            # group (PHRASE_TIERS) that holds it: the few it changes, not every match.
            bonus = self._idf_sum()
            either = " OR ".join(phrases)
            match = "SELECT rowid FROM search_fts WHERE search_fts MATCH ?"
            update = f"UPDATE {SCORES} SET score = score + ? WHERE doc IN ({match})"
            before: list[str] = []
            for fields, share in PHRASE_TIERS:
                exclude = f" AND doc NOT IN ({match})" if before else ""
                earlier = [f"{{{' '.join(before)}}} : ({either})"] if before else []
                conn.execute(update + exclude, [bonus * share, f"{{{' '.join(fields)}}} : ({either})", *earlier])
                before += fields

    def _idf_sum(self) -> float:
        """ΣIDF of the query's words, each word's df the notes holding its terms (a prefix: its terms'
        df summed, at most N; a phrase of CJK pairs: its rarest pair)."""
        conn = self.conn
        # All notes less the few unreadable ones: counted in a narrow index and the problems' partial
        # index, not by reading every row of the wide notes table.
        n = conn.execute(
            "SELECT (SELECT count(*) FROM notes) - (SELECT count(*) FROM notes WHERE problem IS NOT NULL)"
        ).fetchone()[0]
        total = 0.0
        for word in self.query.words:
            dfs = []
            for i, term in enumerate(word.terms):
                if word.prefix and i == len(word.terms) - 1:
                    row = conn.execute(
                        "SELECT sum(doc) FROM search_vocab WHERE term >= ? AND term < ?", (term, _prefix_end(term))
                    ).fetchone()
                else:
                    row = conn.execute("SELECT doc FROM search_vocab WHERE term = ?", (term,)).fetchone()
                dfs.append(min(n, row[0] or 0) if row else 0)
            df = min(dfs) if dfs else 0
            total += math.log(1 + (n - df + 0.5) / (df + 0.5))
        return total

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
        sources = sorted({src for srcs in linking.values() for src in srcs} - scores.keys())
        known = dict(scores)
        if self._scored:
            known.update(select_in(self.conn, f"SELECT doc, score FROM {SCORES} WHERE doc IN ({{}})", sources))
        elif sources:  # a query of one word: a pass over its matches scoring only these (+: a filter, no lookups)
            sql = f"{self._bm25()} AND +rowid IN (SELECT value FROM json_each(?))"
            known.update(self.conn.execute(sql, [*self._args(), json.dumps(sources)]))
        final = dict(scores)
        for target, srcs in linking.items():
            found = [known[src] for src in srcs if src in known]
            if found:
                final[target] += GRAPH_BOOST * max(found)
        return final


def _rounded(value: float, digits: int) -> float:
    """`value` to `digits` significant digits: scores are compared and shown without float noise."""
    return float(f"{value:.{digits}g}")


def _prefix_end(word: str) -> str:
    """The smallest string greater than every string starting with `word` (UTF-8 order is code-point order)."""
    last = ord(word[-1]) + 1
    if 0xD800 <= last <= 0xDFFF:
        last = 0xE000
    return word[:-1] + chr(last)
