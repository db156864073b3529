"""`amem search --explain`: where each hit's rank came from, and the fusion chosen for the query.

Each hit gains `explain`: its keyword score and rank (the BM25 ranking with its boosts), the part of that
score the exact-title tier gave (`titleBonus`, only on a hit whose title is the query) and the part the
exact-heading tier gave (`headingBonus`, only on a hit with a heading that is the query), its semantic
similarity and rank (None when that ranking did not hold it, or there was none), so that a hit's fused score
(`score`) can be traced to its two sources. The result gains `fusion`: the semantic ranking's weight for this
query (keywords weigh 1; 0 means keywords alone) and the evidence that chose it (see `fusion`). Everything in
it comes from the index and the query, so the same search on the same index explains itself the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .fusion import RRF_K, Evidence, Explained, Plan, evidence

if TYPE_CHECKING:
    from ..results import Fusion, SearchResult
    from .fused import SearchRanker


def add_explanations(
    conn: sqlite3.Connection,
    result: SearchResult,
    docs: Sequence[int],
    keyword: Sequence[tuple[int, float | None]],
    semantic: SearchRanker | None,
    query: str | None,
    exact_title: str | None,
    titled: Mapping[int, float] | None = None,
    headed: Mapping[int, float] | None = None,
) -> None:
    """Add `explain` to each of `result`'s hits (rowids `docs`, in order) and `fusion` to `result`, given the
    keyword ranking (rowid, score), the exact-title and exact-heading tiers' bonus of the notes that gained
    it (`titled`, `headed`) and the semantic ranker the search used."""
    titled = titled or {}
    headed = headed or {}
    plan = semantic.plan if semantic is not None else None
    explained = semantic.explained if plan is not None and semantic is not None else {}
    keyword_at = {doc: (rank, score) for rank, (doc, score) in enumerate(keyword, start=1)}
    for hit, doc in zip(result["hits"], docs, strict=True):
        sources = explained.get(doc)
        if sources is None:
            rank, score = keyword_at.get(doc, (None, None))
            sources = Explained(score, rank, None, None)
        hit["explain"] = {
            "keywordScore": sources.keyword_score,
            "keywordRank": sources.keyword_rank,
            "similarity": sources.similarity,
            "semanticRank": sources.semantic_rank,
        }
        if doc in titled and sources.keyword_score is not None:
            hit["explain"]["titleBonus"] = _rounded(titled[doc])
        if doc in headed and sources.keyword_score is not None:
            hit["explain"]["headingBonus"] = _rounded(headed[doc])
    if plan is None:
        plan = _unfused(conn, keyword, semantic, query, exact_title)
    result["fusion"] = shape(plan)


def _unfused(
    conn: sqlite3.Connection,
    keyword: Sequence[tuple[int, float | None]],
    semantic: SearchRanker | None,
    query: str | None,
    exact_title: str | None,
) -> Plan:
    """The plan of a search that fused nothing: why (`exactTitle`, `off`: not asked, or the semantic
    status: `unavailable`, `error`), with the query's evidence all the same."""
    if exact_title is not None or query is None:
        return Plan(0.0, RRF_K, "exactTitle", Evidence("latin", None, None, False, 0))
    top = conn.execute("SELECT id FROM notes WHERE rowid = ?", (keyword[0][0],)).fetchone() if keyword else None
    scored = [(top[0], keyword[0][1]), *[("", score) for _, score in keyword[1:2]]] if top else []
    why = "off" if semantic is None else semantic.status
    return Plan(0.0, RRF_K, why, evidence(conn, query, scored))


def _rounded(value: float) -> float:
    """As the ranking rounds its scores: six significant digits."""
    return float(f"{value:.6g}")


def shape(plan: Plan) -> Fusion:
    found = plan.evidence
    return {
        "weight": plan.weight,
        "k": plan.k,
        "why": plan.why,
        "script": found.script,
        "phrase": found.phrase,
        "margin": found.margin,
        "question": found.question,
    }
