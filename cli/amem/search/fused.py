"""A search's semantic side: the semantic ranking of one query, loaded and brought up to date before the
search takes its read snapshot (`for_search`), and fused with the keyword ranking by the weight this query's
evidence gives (`fusion`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from ..semantic.semantic import FUSION_DEPTH, rank

if TYPE_CHECKING:
    from ..index.index import VaultIndex
    from ..report import Reporter
    from ..semantic.semantic import Embedder
    from .fusion import Explained, Plan, Profile
    from .rank import Filter


class SearchRanker:
    """Semantic ranking for one search on today's index (`VaultIndex`): loaded and brought up to date by
    `for_search` before the search takes its read snapshot, then `fuse` turns the keyword ranking (index
    rowids) into the fused one. `fused` and `status` are the search result's `fused` and `semantic`;
    `depth` is how deep the keyword ranking handed to `fuse` should go."""

    #: The keyword ranking is ranked as deep as fusion reads it, whatever the limit: the fused score of a
    #: note the semantic ranking found reads its keyword rank, to FUSION_DEPTH, and so does `--explain`
    #: (tests/test_fused_depth.py); a ranking to depth d is the first d of the deeper one.
    depth = FUSION_DEPTH

    def __init__(
        self,
        index: VaultIndex,
        embedder: Embedder | None,
        status: str,
        reporter: Reporter,
        ranking: list[tuple[str, float]] | None = None,
        coverage: float | None = None,
        profile: Profile | None = None,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.status = status
        self.reporter = reporter
        #: the semantic ranking already made (by the vault's index keeper): fused instead of ranking here
        self.ranking = ranking
        #: the share of the notes whose vectors are up to date (the result's semanticCoverage), when ranking
        self.coverage = coverage
        #: how far the model's ranking may move the keywords' (fusion.PROFILES)
        self.profile = profile
        #: after `fuse`: the fusion chosen for the query, and each fused note's sources by rowid
        self.plan: Plan | None = None
        self.explained: dict[int, Explained] = {}

    @classmethod
    def covering(
        cls,
        index: VaultIndex,
        embedder: Embedder | None,
        reporter: Reporter,
        coverage: float,
        ranking: list[tuple[str, float]] | None = None,
        profile: Profile | None = None,
    ) -> SearchRanker:
        """A ranker over vectors that may cover only part of the vault: "partial" (with a warning) until
        they cover all of it, then "ok"."""
        if coverage < 1:
            reporter.warn(
                f"semantic vectors cover {coverage:.0%} of the notes so far; ranking with those"
                " (`amem index` or a running `amem index --watch` embeds the rest)"
            )
        status = "ok" if coverage >= 1 else "partial"
        return cls(index, embedder, status, reporter, ranking, coverage, profile)

    @property
    def fused(self) -> bool:
        return self.status in ("ok", "partial")

    def fuse(
        self,
        query: str,
        keyword: Sequence[tuple[int, float | None]],
        count: Callable[[Collection[int]], tuple[int, int]],
        where: Filter | None = None,
    ) -> tuple[list[tuple[int, float | None]], int]:
        """(rowid, fused score) best first, and the total: the keyword matches and the notes only the
        semantic ranking found, both within `where` (the search's tag and folder filters), fused with the
        weight this query's evidence gives (`fusion`; the plan and each hit's sources are kept in `plan` and
        `explained`). The keyword ranking as it is when the model failed. `count` is the keyword ranking's
        (`Ranker.count`): its total, and how many of the given notes it matches, in one walk."""
        conn = self.index.conn
        if self.ranking is None and self.embedder is None:
            return list(keyword), count(())[0]
        from ..index.sql import select_in
        from ..search import fusion

        docs = [doc for doc, _ in keyword]
        id_of = dict(select_in(conn, "SELECT rowid, id FROM notes WHERE rowid IN ({})", docs))
        keyword_ids = [(id_of[doc], score) for doc, score in keyword]
        plan = fusion.decide(fusion.evidence(conn, query, keyword_ids), self.profile or fusion.DEFAULT_PROFILE)
        semantic: list[tuple[str, float]] = []
        if plan.weight > 0:  # else the semantic ranking would move nothing: it is not made
            semantic = self.ranking if self.ranking is not None else self._rank(query, where)
            if self.ranking is None and self.embedder is None:
                return list(keyword), count(())[0]  # the model failed at query time
        live = "SELECT id, rowid FROM notes WHERE problem IS NULL AND id IN ({})"
        rowid = dict(select_in(conn, live, [note_id for note_id, _ in semantic]))
        rowid.update((note_id, doc) for doc, note_id in id_of.items())
        semantic = [pair for pair in semantic if pair[0] in rowid]  # vectors of a note just removed
        self.plan = plan
        fused = fusion.fuse(plan, keyword_ids, semantic)
        self.explained = {rowid[i]: explained for i, _, explained in fused}
        if self.plan.weight == 0:
            return [(rowid[i], score) for i, score, _ in fused], count(())[0]
        # the semantic notes below the keyword depth: those the keyword query matches are in its total
        others = set(rowid[note_id] for note_id, _ in semantic) - set(docs)
        total, matched = count(others)
        return [(rowid[i], score) for i, score, _ in fused], total + len(others) - matched

    def _rank(self, query: str, where: Filter | None) -> list[tuple[str, float]]:
        """The semantic ranking in this process, within `where`; [] with the model dropped (status
        "error") when it fails at query time."""
        assert self.embedder is not None
        conn = self.index.conn
        try:
            return rank(conn, self.embedder, query, among=_among(conn, where))
        except sqlite3.DatabaseError:
            raise  # the index's own damage: the search repairs it and runs again
        except Exception as exc:  # a model misbehaving at query time must not cost the keyword answer
            self.reporter.warn(f"semantic ranking failed ({type(exc).__name__}); answering from keywords only")
            self.status, self.embedder = "error", None
            return []


def _among(conn: sqlite3.Connection, where: Filter | None) -> set[str] | None:
    """The ids of the notes within `where`, None for every note."""
    if where is None or not where.where:
        return None
    return {row[0] for row in conn.execute(f"SELECT id FROM notes WHERE {where.where}", where.params)}


def for_search(
    index: VaultIndex,
    reporter: Reporter,
    model: str | None = None,
    query: str | None = None,
    where: Filter | None = None,
) -> SearchRanker:
    """Load the model (once per process) and bring the vectors up to date with the refreshed index. When
    the extra is missing the ranker's status is "unavailable", when the model fails "error"; either way
    with a warning, and the search answers from keywords.

    Given the `query` (and the search's filter `where`), the vault's index keeper is asked first: when it
    answers, its ranking is the one fused, and this process loads no model at all. `model`: the config's
    `semantic.model` unless given."""
    from ..semantic.models import SemanticError, SemanticUnavailable
    from ..semantic.semantic import ALIASES, DEFAULT_MODEL, INLINE_MODELS, installed, is_loaded, ready_embedder
    from ..semantic.vectors import stored_coverage

    model = ALIASES.get(model or index.config.semantic_model, model or index.config.semantic_model)
    if query is not None and not is_loaded(model) and (model != DEFAULT_MODEL or installed()):
        from ..keeperproto.client import semantic_ranking

        ranking = semantic_ranking(index, query, SearchRanker.depth, _among(index.conn, where))
        if ranking is not None:
            # a static model's keeper brought every vector up to date before it ranked
            kept = 1.0 if model in INLINE_MODELS else stored_coverage(index.conn)
            return SearchRanker.covering(index, None, reporter, kept, ranking, _profile(model, None))
    try:
        embedder, share = ready_embedder(index, model, reporter)
    except SemanticUnavailable as exc:
        reporter.warn(str(exc))
        return SearchRanker(index, None, "unavailable", reporter)
    except SemanticError as exc:
        reporter.warn(f"{exc}; answering from keywords only")
        return SearchRanker(index, None, "error", reporter)
    if share is not None:  # embedded in the background: rank what is there, embed only the query
        return SearchRanker.covering(index, embedder, reporter, share, profile=_profile(model, embedder))
    return SearchRanker(index, embedder, "ok", reporter, coverage=1.0, profile=_profile(model, embedder))


def _profile(model: str, embedder: Embedder | None) -> Profile:
    from ..search.fusion import profile_of

    return profile_of(model, embedder)
