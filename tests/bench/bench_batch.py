"""Whole-process wall time of N `amem read` processes against one `amem batch` of N reads, and the same for
N `amem write --append` (SPEC §17: a batch costs at least 20x less).

Builds a synthetic vault (300 notes by default), warms the index, then runs ROUNDS rounds; each round
runs N/ROUNDS single processes, each timed, then one `amem batch` of N lines, timed from spawn to exit
(start-up included), for reads and then for appends, so that machine noise hits both sides alike. Reads
cycle through 50 notes; appends go to 20 notes new each round, on both sides. Prints the median process,
the median batch and its cost a line, and the ratio: N times the median process over the median batch.
Times the console script beside this interpreter, as `pip install .` leaves it.

    python tests/bench/bench_batch.py [--notes 300] [--lines 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import installed_amem, timed  # noqa: E402
from make_vault import make_vault  # noqa: E402


def timed_batch(amem: str, lines: list[list[str]], env: dict[str, str]) -> float:
    """Wall seconds of one `amem batch` of `lines`; every line must succeed."""
    given = "".join(json.dumps(line) + "\n" for line in lines).encode()
    start = time.perf_counter()
    done = subprocess.run([amem, "batch"], input=given, env=env, capture_output=True, check=True)
    elapsed = time.perf_counter() - start
    results = [json.loads(line) for line in done.stdout.splitlines()]
    failed = [r for r in results if r["exit"] != 0]
    if len(results) != len(lines) or failed:
        raise SystemExit(f"amem batch: {len(results)} results for {len(lines)} lines, failed: {failed[:3]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--lines", type=int, default=1000, help="commands a side (processes, batch lines)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    amem = installed_amem()
    work = Path(tempfile.mkdtemp(prefix="amem-bench-"))
    vault = work / "vault"
    ids = make_vault(vault, args.notes, seed=1)[:50]
    # Bytecode caching on, as in an installed amem (some environments set PYTHONDONTWRITEBYTECODE).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(AMEM_VAULT=str(vault), XDG_CACHE_HOME=str(work / "cache"), HOME=str(work))
    subprocess.run([amem, "index"], env=env, stdout=subprocess.DEVNULL, check=True)
    time.sleep(3.5)  # let the files' mtimes age past the racy window, as in a vault not written this second

    def reads(round_: int, kind: str) -> list[list[str]]:
        return [["read", ids[i % len(ids)]] for i in range(args.lines)]

    def appends(round_: int, kind: str) -> list[list[str]]:
        return [["write", f"bench/{kind}-{round_}-{i % 20}", "--append", f"fact {i}"] for i in range(args.lines)]

    per_round = args.lines // args.rounds
    sides: dict[str, tuple[list[float], list[float]]] = {}
    for name, lines_of in (("read", reads), ("write --append", appends)):
        processes: list[float] = []
        batches: list[float] = []
        for round_ in range(args.rounds):
            for line in lines_of(round_, "process")[:per_round]:
                processes.append(timed([amem, *line], env))
            batches.append(timed_batch(amem, lines_of(round_, "batch"), env))
        sides[name] = (processes, batches)

    print(f"vault: {args.notes} notes; {args.lines} commands a side, {args.rounds} rounds; {sys.executable}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    total = f"x{args.lines} s"
    print(f"{'command':20} {'process ms':>10} {total:>9} {'batch s':>8} {'line ms':>8} {'ratio':>7}")
    for name, (processes, batches) in sides.items():
        process = statistics.median(processes)
        batch = statistics.median(batches)
        ratio = process * args.lines / batch
        print(
            f"{'amem ' + name:20} {process * 1000:10.1f} {process * args.lines:9.1f} {batch:8.2f} "
            f"{batch / args.lines * 1000:8.2f} {ratio:6.1f}x"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
