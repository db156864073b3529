"""The ranking alone, this checkout's beside another commit's (`rank.py` of --against), alternating in one
process on one open index: CPU ms of `Ranker.rank(limit)` and `total()`, medians of --runs, and whether
both give the same hits, scores and total.

    python tests/bench/bench_rank_versions.py VAULT [--against main] [--query "auth token" …] [--runs 15]

VAULT must be indexed already (its cache as XDG_CACHE_HOME says). The load average is printed first.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import time
from pathlib import Path

from amem.config import load_config
from amem.index.index import VaultIndex
from amem.notes.tokenize import Query
from amem.search import rank


def other_rank(commit: str) -> object:
    """`amem.search.rank` as of `commit`, loaded beside this one (its imports resolve in this checkout)."""
    root = Path(__file__).resolve().parents[2]
    source = subprocess.run(
        ["git", "show", f"{commit}:cli/amem/index/rank.py"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    spec = importlib.util.spec_from_loader("amem.index._rank_other", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "amem.index"
    exec(compile(source, f"{commit}:rank.py", "exec"), module.__dict__)  # noqa: S102 (our own file at a commit)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--against", default="main")
    parser.add_argument("--query", nargs="+", default=["auth token", "session", "认证"])
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    other = other_rank(args.against)
    index = VaultIndex(load_config(vault=args.vault))
    conn = index.conn
    for text in args.query:
        query = Query(text)
        times: dict[str, list[float]] = {"this": [], args.against: []}
        answers = {}
        for _ in range(args.runs):
            for name, module in (("this", rank), (args.against, other)):
                start = time.process_time()
                conn.execute("BEGIN")
                ranker = module.Ranker(conn, query, module.Filter())  # type: ignore[attr-defined]
                answers[name] = (ranker.rank(args.limit), ranker.total())
                conn.execute("COMMIT")
                times[name].append((time.process_time() - start) * 1000)
        same = answers["this"] == answers[args.against]
        mine, theirs = statistics.median(times["this"]), statistics.median(times[args.against])
        ratio = theirs / mine
        print(f"{text!r:14} {args.against} {theirs:7.1f} ms   this {mine:7.1f} ms   {ratio:5.2f}×   same: {same}")
    index.close()


if __name__ == "__main__":
    main()
