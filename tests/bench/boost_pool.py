"""The link boost's pool (`rank.BOOSTED`): relevance by pool size, and how often boosting every match would
need a deeper look than the pool.

    python tests/bench/boost_pool.py sweep [--values 10 20 40 80 1000000]
    python tests/bench/boost_pool.py exact VAULT [--limit 10] [QUERIES.jsonl …]

`sweep` runs `relevance.py --rankers amem --json` once per value, in a process of its own with
`rank.BOOSTED` set to it (10⁶: every match is in the pool), and prints MRR@10 per corpus and set.

`exact` counts, for each query (the JSON lines' `query`, or a few genvault queries), whether the ranking
of every match boosted could be had from the pool: with the pool's last base score `last` and the
limit-th boosted score `least`, a note below the pool passes the limit-th only through a linking note
scoring at least (least − last) / GRAPH_BOOST; when that is below `last`, notes below the pool may be such
linking notes too, and the exact top k needs a walk of their links.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENVAULT_QUERIES = ["auth token", "retry with backoff", "deploy the server", "session", "config parser", "token"]
_SWEEP_CHILD = """
import runpy, sys
import amem.search.rank as rank
rank.BOOSTED = int(sys.argv[1])
sys.argv = ["relevance.py", "--rankers", "amem", "--json"]
runpy.run_path({relevance!r}, run_name="__main__")
"""


def sweep(values: list[int]) -> None:
    child = _SWEEP_CHILD.format(relevance=str(HERE / "relevance.py"))
    table: dict[tuple[str, str], dict[int, float]] = {}
    for value in values:
        done = subprocess.run([sys.executable, "-c", child, str(value)], capture_output=True, text=True, check=True)
        for row in json.loads(done.stdout):
            table.setdefault((row["corpus"], row["set"]), {})[value] = row["mrr@10"]
    print("| set | " + " | ".join(str(v) for v in values) + " |")
    print("|---" * (len(values) + 1) + "|")
    for (corpus, name), by in table.items():
        print(f"| {corpus} {name} | " + " | ".join(f"{by[v]:.4f}" for v in values) + " |")


def exact(vault: Path, limit: int, files: list[Path]) -> None:
    from amem.config import load_config
    from amem.index.index import VaultIndex
    from amem.notes.tokenize import Query
    from amem.search import rank
    from amem.search.rank import Filter, Ranker

    queries = [json.loads(line)["query"] for f in files for line in f.open(encoding="utf-8")] or GENVAULT_QUERIES
    index = VaultIndex(load_config(vault=vault))
    index.refresh()
    conn = index.conn
    counts = {"queries": 0, "every match in the pool": 0, "the pool suffices": 0, "needs a deeper look": 0}
    try:
        for text in queries:
            ranker = Ranker(conn, Query(text), Filter())
            if ranker.expression is None:
                continue
            counts["queries"] += 1
            conn.execute("BEGIN")
            try:
                best = ranker._best(rank.BOOSTED)
                if len(best) < max(rank.BOOSTED, limit):
                    counts["every match in the pool"] += 1
                    continue
                final = ranker._with_boosts(dict(best))
                ids = dict(conn.execute("SELECT rowid, id FROM notes"))
                least = rank._ordered(final, ids)[limit - 1][1]
                last = best[-1][1]
                deeper = (least - last) / rank.GRAPH_BOOST <= last
                counts["needs a deeper look" if deeper else "the pool suffices"] += 1
            finally:
                conn.execute("COMMIT")
    finally:
        index.close()
    print(json.dumps({"vault": str(vault), "limit": limit, **counts}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    swept = commands.add_parser("sweep")
    swept.add_argument("--values", type=int, nargs="+", default=[10, 20, 40, 80, 1_000_000])
    checked = commands.add_parser("exact")
    checked.add_argument("vault", type=Path)
    checked.add_argument("--limit", type=int, default=10)
    checked.add_argument("queries", type=Path, nargs="*")
    args = parser.parse_args()
    if args.command == "sweep":
        sweep(args.values)
    else:
        exact(args.vault, args.limit, args.queries)


if __name__ == "__main__":
    main()
