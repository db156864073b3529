"""How much the semantic ranking may move the keyword ranking, decided per query from what the query itself
shows, and the weighted reciprocal-rank fusion that applies it.

A constant weight cannot serve both kinds of query: a weight that lifts paraphrased questions (whose words
are not the page's) pushes down exact title and heading matches, and a model that reads only Latin script
makes every Chinese query worse. So each query gets its own semantic weight, from its evidence, in this order:

1. `script`: the query is mostly Chinese, Japanese or Korean and the model does not read that script: the
   semantic ranking is left out (weight 0), the keyword ranking stands.
2. `phrase`: the keyword ranking's top hit is titled or headed with the query, or holds the whole query as
   a phrase in its id, title or a heading (the phrase bonus fired for it): the user named the page, the
   semantic ranking barely moves it.
3. `question`: the query is a question (a question word first, a `?`) or a sentence of LONG_WORDS words or
   more: it describes what it wants rather than names it, and the semantic ranking weighs most, however
   sure the keywords are (a sentence in other words than the page's is where they are confidently wrong).
4. `margin`: the top keyword score is at least MARGIN times the second's: keywords are sure of their answer.
5. otherwise `words`: a few keywords without an exact hit, a small weight (none for minilm).

Each model has its own weights, and for each script it reads a cap on them (`PROFILES`): a stronger model
earns more weight, and a model weak in a script gets little there.

The weights were chosen on tests/bench/relevance.py's headings, titles and paraphrases sets of the Vue
documentation (English and Chinese), never its held-out sets: minilm's by 5-fold cross-validation over those
sets (`tests/bench/fusion_sweep.py --choose`: per kind of evidence, the median of the folds' choices, each
the smallest weight within 0.002 macro MRR@10 of the best), wordllama's by the sweep before it;
docs/decisions/0004-fusion-per-query.md has the method and the held-out figures.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from ..notes.tokenize import Query, fold, is_cjk, title_key, word_runs
from .rank import phrase_match, phrase_table

#: Reciprocal-rank fusion: a note at rank r of a ranking adds weight / (RRF_K + r); keywords weigh 1.
RRF_K = 5
#: Top keyword score / second keyword score from which keywords are sure of their answer.
MARGIN = 1.6
#: A query of this many words or more reads as a sentence (a Chinese word is taken as two characters).
LONG_WORDS = 5
#: Words that open a question (English; a Chinese question is known by its question words or `？`).
_QUESTION = "how what why when where which who whom whose can could should would is are does do did will may might"
QUESTION_WORDS = frozenset(_QUESTION.split())
CJK_QUESTION = ("怎么", "怎样", "如何", "什么", "为什么", "哪", "吗", "能不能", "是否", "有没有", "？", "?")
#: A script a model reads fully: no cap on its weight.
FULLY = float("inf")


class Profile(NamedTuple):
    """How far one model's ranking may move the keyword ranking: the semantic weight for each kind of
    evidence, and the scripts the model reads, each with the most weight it may have for a query in that
    script (a script it does not read is left out: such a query stays keyword-only)."""

    weights: dict[str, float]
    scripts: dict[str, float]


#: Per model, as chosen (docs/decisions/0004-fusion-per-query.md): wordllama's static vectors (`static`)
#: read Chinese a little, all-MiniLM-L6-v2 Latin script only, and minilm weighs in on questions and
#: sentences alone.
PROFILES: dict[str, Profile] = {
    "wordllama": Profile(
        {"script": 0.0, "phrase": 0.2, "margin": 0.1, "question": 0.75, "words": 0.2}, {"latin": FULLY, "cjk": 0.2}
    ),
    "minilm": Profile({"script": 0.0, "phrase": 0.0, "margin": 0.0, "question": 1.0, "words": 0.0}, {"latin": FULLY}),
}
#: A model amem does not know (a folder of the user's): a sentence model's weights, Latin only unless the
#: model declares the scripts it reads (an embedder's `scripts`, e.g. ("latin", "cjk")).
DEFAULT_PROFILE = PROFILES["minilm"]


class Evidence(NamedTuple):
    """What one query shows of itself and of its keyword answer."""

    #: "cjk" when most of the query's letters are Chinese, Japanese or Korean, else "latin"
    script: str
    #: where the top keyword hit holds the whole query as a phrase: "head" (id, title, heading), "body", None
    phrase: str | None
    #: the top keyword score over the second's (None with fewer than two scored hits)
    margin: float | None
    #: a question word first, or a question mark
    question: bool
    #: how many words (a Chinese word taken as two characters)
    words: int


class Plan(NamedTuple):
    """The fusion chosen for one query: the semantic ranking's weight (keywords weigh 1) and why."""

    weight: float
    k: int
    why: str
    evidence: Evidence


class Explained(NamedTuple):
    """Where one fused hit came from."""

    keyword_score: float | None
    keyword_rank: int | None
    similarity: float | None
    semantic_rank: int | None


def _counts(text: str) -> tuple[int, int]:
    """(Latin words, CJK words) of `text`, a CJK word taken as two characters."""
    latin = cjk = 0
    for run in word_runs(fold(text)):
        chars = sum(1 for char in run if is_cjk(char))
        cjk += chars
        latin += 1 if chars < len(run) else 0
    return latin, (cjk + 1) // 2


def script_of(text: str) -> str:
    """ "cjk" when the query holds at least as many Chinese, Japanese or Korean words as others."""
    latin, cjk = _counts(text)
    return "cjk" if cjk and cjk >= latin else "latin"


def word_count(text: str) -> int:
    return sum(_counts(text))


def is_question(text: str) -> bool:
    """A question word first, or a question mark; in CJK, a question word anywhere."""
    runs = word_runs(fold(text))
    if text.rstrip().endswith(("?", "？")):
        return True
    if runs and runs[0] in QUESTION_WORDS:
        return True
    return script_of(text) == "cjk" and any(marker in text for marker in CJK_QUESTION)


def phrase_at(conn: sqlite3.Connection, query: Query, note_id: str) -> str | None:
    """Where note `note_id` holds the query: "head" when its title or a heading is the query (the exact
    tiers' test) or its id, title or a heading holds it as a phrase (the phrase bonus's), "body" when only
    its body holds the phrase, else None."""
    key = title_key(query.text)
    if key:
        sql = (
            "SELECT 1 FROM notes WHERE id = ? AND (title_key = ? OR rowid IN"
            " (SELECT note FROM note_headings WHERE key = ?))"
        )
        if conn.execute(sql, (note_id, key, key)).fetchone():
            return "head"
    if not query.phrases:
        return None
    for fields, name in ((["head", "headings"], "head"), (["body"], "body")):
        table = phrase_table(fields)
        sql = f"SELECT 1 FROM {table} WHERE {table} MATCH ? AND rowid = (SELECT rowid FROM notes WHERE id = ?)"
        if conn.execute(sql, (phrase_match(fields, query.phrases), note_id)).fetchone():
            return name
    return None


def evidence(conn: sqlite3.Connection, text: str, keyword: Sequence[tuple[str, float | None]]) -> Evidence:
    """The evidence of query `text` given its keyword ranking (note id, score), best first."""
    phrase = phrase_at(conn, Query(text), keyword[0][0]) if keyword else None
    scores = [score for _, score in keyword[:2] if score is not None]
    margin = round(scores[0] / scores[1], 3) if len(scores) == 2 and scores[1] > 0 else None
    return Evidence(script_of(text), phrase, margin, is_question(text), word_count(text))


def decide(
    found: Evidence,
    profile: Profile,
    weights: dict[str, float] | None = None,
    margin: float | None = None,
    k: int | None = None,
    long_words: int | None = None,
) -> Plan:
    """The plan for a query with evidence `found`, for a model of `profile` (its weights, or `weights`, and
    the constants may be given, for a sweep)."""
    weights = profile.weights if weights is None else weights
    margin = MARGIN if margin is None else margin
    if found.script not in profile.scripts:
        why = "script"
    elif found.phrase == "head":
        why = "phrase"
    elif found.question or found.words >= (LONG_WORDS if long_words is None else long_words):
        why = "question"
    elif found.margin is not None and found.margin >= margin:
        why = "margin"
    else:
        why = "words"
    weight = min(weights[why], profile.scripts.get(found.script, 0.0))
    return Plan(weight, RRF_K if k is None else k, why, found)


def fuse(
    plan: Plan, keyword: Sequence[tuple[str, float | None]], semantic: Sequence[tuple[str, float]]
) -> list[tuple[str, float, Explained]]:
    """The fused ranking (note id, score, where it came from), best first, ties by id: keywords at weight 1,
    the semantic ranking at the plan's weight (at 0 it adds no note and moves none)."""
    keyword_at = {note_id: (rank, score) for rank, (note_id, score) in enumerate(keyword, start=1)}
    semantic_at = {note_id: (rank, similarity) for rank, (note_id, similarity) in enumerate(semantic, start=1)}
    if plan.weight <= 0:
        semantic_at = {}
    rankings = [(1.0, list(keyword_at)), (plan.weight, list(semantic_at))]
    out = []
    for note_id, score in rrf(rankings, plan.k):
        k_rank, k_score = keyword_at.get(note_id, (None, None))
        s_rank, similarity = semantic_at.get(note_id, (None, None))
        out.append((note_id, score, Explained(k_score, k_rank, similarity, s_rank)))
    return out


def rrf(rankings: Sequence[tuple[float, Sequence[str]]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Weighted reciprocal-rank fusion: each (weight, note ids best first) ranking adds weight / (k + rank)
    to the score of each note it holds (a weight of 0 adds no note); (note id, score) best first, ties by id."""
    scores: dict[str, float] = {}
    for weight, ranking in rankings:
        if weight <= 0:
            continue
        for rank, note_id in enumerate(ranking, start=1):
            scores[note_id] = scores.get(note_id, 0.0) + weight / (k + rank)
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [(note_id, round(score, 6)) for note_id, score in ordered]


def profile_of(model: str, embedder: object | None) -> Profile:
    """The profile of `model` (a name of PROFILES, else DEFAULT_PROFILE), with the scripts the model
    declares it reads, read fully: the embedder's `scripts`, or without the embedder (a keeper ranked) those
    its folder declares (`models.declared_scripts`; an unreadable declaration: Latin only, as the model that
    fails to load with it has no ranking to fuse)."""
    profile = PROFILES.get(model, DEFAULT_PROFILE)
    declared = getattr(embedder, "scripts", None)
    if declared is None and embedder is None and os.path.isabs(model):  # a model folder's path
        from ..semantic.models import SemanticError, declared_scripts

        try:
            declared = declared_scripts(model)
        except SemanticError:
            declared = None
    if declared:
        return profile._replace(scripts=dict.fromkeys(declared, FULLY))
    return profile
