"""Sweep the keyword ranking's phrase bonus tiers (`amem.search.rank.PHRASE_TIERS`), its exact-title tier
(`EXACT_TITLE`) and its exact-heading tier (`EXACT_HEADING`) over relevance.py's query sets, one built index
per corpus, and print each setting's MRR@10 per set.

    python tests/bench/sweep_phrase_tiers.py [--corpus vue-docs-en vue-docs-zh] [--title 1.05]
                                             [--headings 1] [--exact-title 0.5]
                                             [--exact-heading 0 0.05 0.1 0.25 0.5] [--id-stem] [--sets …] [--misses]

Queries are ranked by `amem.search.rank.Ranker` on one open index, as search() ranks them without its
per-call refresh, so a setting takes seconds. A setting is (title, headings): the share of ΣIDF a note
gains when its id or title holds the query as a phrase, and when only a heading does (the body's share
stays 0.5). `--title 1 --headings 1` is one tier for the id, title and headings, as before the title tier.
`--head-weight` and `--headings-weight` sweep the BM25 field weights (`HEAD_WEIGHT`, `HEADINGS_WEIGHT`) too.
`--exact-title S` sets amem's exact-title tier (the notes whose whole title is the query gain S × ΣIDF; 0
turns it off), `--exact-heading H` its exact-heading tier (the notes with a heading that is the query gain
H × ΣIDF). An experiment, not in amem's ranking, goes through the same step of the Ranker (its notes scored
first, so the top k stays exact): `--id-stem` counts a note whose id's base name (without extension, folded
the same way) is the query as titled so.
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


#: The experiment's setting: whether an id's base name counts as a title.
EXPERIMENT: dict[str, float] = {"stem": 0.0}


def keyword_ranker(vault: Path, scratch: Path) -> relevance.Ranker:
    from amem.index.index import VaultIndex
    from amem.notes.tokenize import Query, id_stem, title_key
    from amem.search.rank import Filter, Ranker

    index = VaultIndex(relevance.amem_config(vault, scratch))
    index.refresh()
    conn = index.conn
    ids = dict(conn.execute("SELECT rowid, id FROM notes"))
    stems: dict[str, set[int]] = {}  # an id's base name without extension, folded: its notes
    for doc, note_id in ids.items():
        stems.setdefault(title_key(id_stem(note_id).rsplit("/", 1)[-1]), set()).add(doc)

    class Swept(Ranker):
        def _exact(self) -> dict[int, tuple[float, float]]:
            shares = super()._exact()
            key = title_key(self.query.text)
            from amem.search import rank

            if EXPERIMENT["stem"] and rank.EXACT_TITLE > 0:
                for doc in stems.get(key, set()):
                    shares[doc] = (rank.EXACT_TITLE, shares.get(doc, (0.0, 0.0))[1])
            return shares

    def rank(query: str) -> list[str]:
        return [ids[doc] for doc, _ in Swept(conn, Query(query), Filter()).rank(relevance.DEPTH)]

    return rank


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
    parser.add_argument("--title", type=float, nargs="*", default=[1.05])
    parser.add_argument("--headings", type=float, nargs="*", default=[1.0])
    parser.add_argument("--sets", nargs="*", default=list(relevance.SETS))
    parser.add_argument("--head-weight", type=float, nargs="*", help="BM25 weights of the id and title")
    parser.add_argument("--headings-weight", type=float, nargs="*", help="BM25 weights of the headings")
    parser.add_argument("--exact-title", type=float, nargs="*", default=[0.5])
    parser.add_argument("--exact-heading", type=float, nargs="*", default=[0.0, 0.05, 0.1, 0.25, 0.5])
    parser.add_argument("--id-stem", action="store_true", help="an id's base name counts as a title too")
    parser.add_argument("--misses", action="store_true", help="list each setting's queries not answered first")
    args = parser.parse_args()
    from amem.search import rank

    head_weights = args.head_weight or [rank.HEAD_WEIGHT]
    headings_weights = args.headings_weight or [rank.HEADINGS_WEIGHT]
    EXPERIMENT["stem"] = 1.0 if args.id_stem else 0.0
    header = "corpus        title  headings  headW  hdgsW  exact  exHdg  "
    print(header + "  ".join(f"{name:>11}" for name in args.sets), flush=True)
    for corpus in args.corpus:
        root = relevance.CORPORA / corpus
        notes = relevance.corpus_notes(root)
        loaded = {name: relevance.load_queries(corpus, name, notes) for name in args.sets}
        with tempfile.TemporaryDirectory(prefix="amem-sweep-") as tmp:
            vault = relevance.make_vault(root, Path(tmp))
            ranker = keyword_ranker(vault, Path(tmp))
            grid = itertools.product(
                args.title, args.headings, head_weights, headings_weights, args.exact_title, args.exact_heading
            )
            for title, headings, head_w, headings_w, exact, exact_heading in grid:
                rank.PHRASE_TIERS = tiers(title, headings)
                rank.HEAD_WEIGHT, rank.HEADINGS_WEIGHT, rank.EXACT_TITLE = head_w, headings_w, exact
                rank.EXACT_HEADING = exact_heading
                found = [relevance.measure(ranker, loaded[name] or [])["mrr@10"] for name in args.sets]
                cells = "  ".join(f"{value:11.4f}" for value in found)
                setting = f"{title:5}  {headings:8}  {head_w:5}  {headings_w:5}  {exact:5}  {exact_heading:5}"
                print(f"{corpus:13} {setting}  {cells}", flush=True)
                if args.misses:
                    print_misses(ranker, loaded)


if __name__ == "__main__":
    main()
