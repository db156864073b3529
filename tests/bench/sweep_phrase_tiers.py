"""Sweep the keyword ranking's phrase bonus tiers (`amem.index.rank.PHRASE_TIERS`) over relevance.py's
query sets, one built index per corpus, and print each setting's MRR@10 per set.

    python tests/bench/sweep_phrase_tiers.py [--corpus vue-docs-en vue-docs-zh] [--title 1 1.5 2 3]
                                             [--headings 1] [--sets headings titles paraphrases]

Queries are ranked by `amem.index.rank.Ranker` on one open index, as search() ranks them without its
per-call refresh, so a setting takes seconds. A setting is (title, headings): the share of ΣIDF a note
gains when its id or title holds the query as a phrase, and when only a heading does (the body's share
stays 0.5). `--title 1 --headings 1` is one tier
for the id, title and headings, as before the title tier. `--head-weight` and `--headings-weight` sweep the
BM25 field weights (`HEAD_WEIGHT`, `HEADINGS_WEIGHT`) too, and `--exact-title S` (an experiment, not in
amem's ranking) adds S × ΣIDF to the notes whose whole title is the query (`title_key`, as `--exact-title`
compares), one-word queries included: what a tier of its own for an exact title would give.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import relevance  # noqa: E402


def tiers(title: float, headings: float) -> tuple[tuple[list[str], float], ...]:
    if title == headings:
        return ((["head", "headings"], title), (["body"], 0.5))
    return ((["head"], title), (["headings"], headings), (["body"], 0.5))


#: The exact-title experiment's share of ΣIDF (0: off, amem's ranking as it is).
EXACT_TITLE = {"share": 0.0}


def keyword_ranker(vault: Path, scratch: Path) -> relevance.Ranker:
    from amem.index.index import VaultIndex
    from amem.index.rank import Filter, Ranker
    from amem.index.tokenize import Query, title_key

    index = VaultIndex(relevance.amem_config(vault, scratch))
    index.refresh()
    conn = index.conn
    ids = dict(conn.execute("SELECT rowid, id FROM notes"))
    titled: dict[str, list[int]] = {}  # a title without its `{#anchor}`, folded: the notes so titled
    for doc, title in conn.execute("SELECT rowid, title FROM notes"):
        titled.setdefault(title_key(relevance.clean_heading(title)), []).append(doc)

    def rank(query: str) -> list[str]:
        ranker = Ranker(conn, Query(query), Filter())
        ranked = ranker.rank(relevance.DEPTH if not EXACT_TITLE["share"] else 50)
        if EXACT_TITLE["share"]:
            ranked = exact_title(conn, ranker, titled.get(title_key(query), []), dict(ranked))
        return [ids[doc] for doc, _ in ranked][: relevance.DEPTH]

    return rank


def exact_title(conn: object, ranker: object, titled: list[int], scores: dict[int, float]) -> list[tuple[int, float]]:
    """`scores` with EXACT_TITLE's share of ΣIDF added to each note of `titled` (titled exactly as the
    query; its BM25 and phrase bonus looked up when it ranked below the ones given)."""
    from amem.index import rank

    if titled:
        bonus = ranker._idf_sum()  # type: ignore[attr-defined]
        for doc in titled:
            if doc not in scores:
                sql = f"{ranker._bm25()} AND rowid = ?"  # type: ignore[attr-defined]
                row = conn.execute(sql, [*ranker._args(), doc]).fetchone()  # type: ignore[attr-defined]
                if row is None:
                    continue
                phrase = rank.PHRASE_TIERS[0][1] if ranker.query.phrases else 0.0  # type: ignore[attr-defined]
                scores[doc] = row[1] + bonus * phrase
            scores[doc] += bonus * EXACT_TITLE["share"]
    return sorted(scores.items(), key=lambda item: -item[1])


def print_misses(ranker: relevance.Ranker, loaded: dict[str, list[dict[str, object]] | None]) -> None:
    """Each query whose page is not first: the page, its rank (None: below DEPTH) and what came first."""
    for name, queries in loaded.items():
        for query in queries or []:
            ranked = ranker(str(query["query"]))
            wanted = set(query["relevant"])  # type: ignore[call-overload]
            if not ranked or ranked[0] not in wanted:
                at = next((i + 1 for i, note_id in enumerate(ranked) if note_id in wanted), None)
                first = ranked[0] if ranked else None
                print(f"  miss {name}: {query['query']!r} wants {sorted(wanted)} at {at}, first {first}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="*", default=["vue-docs-en", "vue-docs-zh"])
    parser.add_argument("--title", type=float, nargs="*", default=[1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--headings", type=float, nargs="*", default=[1.0])
    parser.add_argument("--sets", nargs="*", default=list(relevance.SETS))
    parser.add_argument("--head-weight", type=float, nargs="*", help="BM25 weights of the id and title")
    parser.add_argument("--headings-weight", type=float, nargs="*", help="BM25 weights of the headings")
    parser.add_argument("--exact-title", type=float, nargs="*", default=[0.0], help="the experiment's shares")
    parser.add_argument("--misses", action="store_true", help="list each setting's queries not answered first")
    args = parser.parse_args()
    from amem.index import rank

    head_weights = args.head_weight or [rank.HEAD_WEIGHT]
    headings_weights = args.headings_weight or [rank.HEADINGS_WEIGHT]
    header = "corpus        title  headings  headW  hdgsW  exact  "
    print(header + "  ".join(f"{name:>11}" for name in args.sets), flush=True)
    for corpus in args.corpus:
        root = relevance.CORPORA / corpus
        notes = relevance.corpus_notes(root)
        loaded = {name: relevance.load_queries(corpus, name, notes) for name in args.sets}
        with tempfile.TemporaryDirectory(prefix="amem-sweep-") as tmp:
            vault = relevance.make_vault(root, Path(tmp))
            ranker = keyword_ranker(vault, Path(tmp))
            grid = itertools.product(args.title, args.headings, head_weights, headings_weights, args.exact_title)
            for title, headings, head_w, headings_w, exact in grid:
                rank.PHRASE_TIERS = tiers(title, headings)
                rank.HEAD_WEIGHT, rank.HEADINGS_WEIGHT, EXACT_TITLE["share"] = head_w, headings_w, exact
                found = [relevance.measure(ranker, loaded[name] or [])["mrr@10"] for name in args.sets]
                cells = "  ".join(f"{value:11.4f}" for value in found)
                setting = f"{title:5}  {headings:8}  {head_w:5}  {headings_w:5}  {exact:5}"
                print(f"{corpus:13} {setting}  {cells}", flush=True)
                if args.misses:
                    print_misses(ranker, loaded)


if __name__ == "__main__":
    main()
