"""Sweep the keyword ranking's phrase bonus tiers (`amem.index.rank.PHRASE_TIERS`) over relevance.py's
query sets, one built index per corpus, and print each setting's MRR@10 per set.

    python tests/bench/sweep_phrase_tiers.py [--corpus vue-docs-en vue-docs-zh] [--title 1 1.5 2 3]
                                             [--headings 1] [--sets headings titles paraphrases]

Queries are ranked by `amem.index.rank.Ranker` on one open index, as search() ranks them without its
per-call refresh, so a setting takes seconds. A setting is (title, headings): the share of ΣIDF a note
gains when its id or title holds the query as a phrase, and when only a heading does (the body's share
stays 0.5). `--title 1 --headings 1` is one tier
for the id, title and headings, as before the title tier.
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


def keyword_ranker(vault: Path, scratch: Path) -> relevance.Ranker:
    from amem.index.index import VaultIndex
    from amem.index.rank import Filter, Ranker
    from amem.index.tokenize import Query

    index = VaultIndex(relevance.amem_config(vault, scratch))
    index.refresh()
    conn = index.conn

    def rank(query: str) -> list[str]:
        ranked = Ranker(conn, Query(query), Filter()).rank(relevance.DEPTH)
        ids = dict(conn.execute("SELECT rowid, id FROM notes"))
        return [ids[doc] for doc, _ in ranked]

    return rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="*", default=["vue-docs-en", "vue-docs-zh"])
    parser.add_argument("--title", type=float, nargs="*", default=[1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--headings", type=float, nargs="*", default=[1.0])
    parser.add_argument("--sets", nargs="*", default=list(relevance.SETS))
    args = parser.parse_args()
    from amem.index import rank

    print("corpus        title  headings  " + "  ".join(f"{name:>11}" for name in args.sets), flush=True)
    for corpus in args.corpus:
        root = relevance.CORPORA / corpus
        notes = relevance.corpus_notes(root)
        loaded = {name: relevance.load_queries(corpus, name, notes) for name in args.sets}
        with tempfile.TemporaryDirectory(prefix="amem-sweep-") as tmp:
            vault = relevance.make_vault(root, Path(tmp))
            ranker = keyword_ranker(vault, Path(tmp))
            for title, headings in itertools.product(args.title, args.headings):
                rank.PHRASE_TIERS = tiers(title, headings)
                found = [relevance.measure(ranker, loaded[name] or [])["mrr@10"] for name in args.sets]
                cells = "  ".join(f"{value:11.4f}" for value in found)
                print(f"{corpus:13} {title:5}  {headings:8}  {cells}", flush=True)


if __name__ == "__main__":
    main()
