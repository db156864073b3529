"""The ranking alone, this tree's `amem.search.rank` side by side with another version of that file, in one
process on one open index, the two alternating so that both see the same machine state.

    python tests/bench/bench_rank_vs.py --reference OLD_RANK_PY --vault DIR [--cache DIR] [--runs 15]
                                        [--query "auth token" …] [--limit 20]

OLD_RANK_PY is a copy of `cli/amem/index/rank.py` from another commit (`git show main:cli/amem/index/rank.py
> /tmp/rank_main.py`); it is loaded beside the current one, inside the `amem.index` package, so that it uses
this tree's tokenizer and SQL helpers. Each sample is one `Ranker.rank(limit)` and `total()` in a read
transaction, CPU ms (process time); the figures are medians of --runs, with min and max, and the load
average is printed before and after. --cache is the XDG cache folder holding the vault's index (a copy:
the index is brought up to date first). Both versions' results are compared, and a difference is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def reference_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("amem.index._rank_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="another version of rank.py")
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--cache", type=Path, help="XDG_CACHE_HOME holding the vault's index")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--query", nargs="*", default=["auth token", "session", "认证"])
    args = parser.parse_args()
    if args.cache:
        os.environ["XDG_CACHE_HOME"] = str(args.cache)
    from amem.config import load_config
    from amem.index.index import VaultIndex
    from amem.notes.tokenize import Query
    from amem.search import rank

    old = reference_module(args.reference)
    index = VaultIndex(load_config(vault=args.vault))
    index.refresh()
    conn = index.conn
    print(f"{args.vault}: {load()}", flush=True)
    print(f"{'query':24} {'reference ms (min/median/max)':>30} {'this tree ms':>24}  ratio", flush=True)
    for text in args.query:
        samples: dict[str, list[float]] = {"old": [], "new": []}
        results: dict[str, tuple[list[tuple[int, float]], int]] = {}
        for i in range(args.runs * 2):
            name, module = (("old", old), ("new", rank))[(i + i // 2) % 2]  # old new new old old new …
            conn.execute("BEGIN")
            start = time.process_time()
            ranker = module.Ranker(conn, Query(text), module.Filter())
            found = (ranker.rank(args.limit), ranker.total())
            samples[name].append((time.process_time() - start) * 1000)
            conn.execute("COMMIT")
            results[name] = found
        cells = {name: f"{min(s):.1f} / {statistics.median(s):.1f} / {max(s):.1f}" for name, s in samples.items()}
        ratio = statistics.median(samples["new"]) / statistics.median(samples["old"])
        print(f"{text:24} {cells['old']:>30} {cells['new']:>24}  {ratio:.3f}", flush=True)
        if results["old"] != results["new"]:
            (old_hits, old_total), (new_hits, new_total) = results["old"], results["new"]
            print(f"  the results differ: best {old_hits[:3]} of {old_total} vs {new_hits[:3]} of {new_total}")
    print(load(), flush=True)
    index.close()


if __name__ == "__main__":
    main()
