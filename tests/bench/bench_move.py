"""Whole-process wall time of `amem move` of a note with 100 backlinks in a 10,000-note vault, against
`amem --version` (the cost of starting amem at all).

Builds the synthetic vault, gives one note BACKLINKS linking notes (path links, so that every one of
them must be rewritten), builds the index, then moves the note back and forth between two places,
interleaved with `amem --version`. Each move renames the note, rewrites every backlink through the
locked write path and refreshes the index first (so it also re-indexes the notes the previous move
rewrote). Prints medians and the ratio.

    python tests/bench/bench_move.py [--notes 10000] [--backlinks 100] [--runs 11]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import installed_amem  # noqa: E402
from make_vault import make_vault  # noqa: E402


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=120)
    return time.perf_counter() - start, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--backlinks", type=int, default=100)
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()

    amem = installed_amem()
    work = Path(tempfile.mkdtemp(prefix="amem-bench-move-"))
    try:
        vault = work / "vault"
        ids = make_vault(vault, args.notes, seed=3)
        rng = random.Random(3)
        places = ["projects/moved/target-note.md", "research/res1/renamed-target.md"]
        (vault / places[0]).parent.mkdir(parents=True, exist_ok=True)
        (vault / places[0]).write_text("---\ntitle: Target\n---\n# Target\n\nThe note that moves.\n")
        for note_id in rng.sample(ids, args.backlinks):
            with open(vault / note_id, "a", encoding="utf-8") as handle:
                handle.write(f"\nSee [[{places[0][:-3]}|the target]].\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(AMEM_VAULT=str(vault), XDG_CACHE_HOME=str(work / "cache"), HOME=str(work))
        subprocess.run([amem, "search", "target"], env=env, stdout=subprocess.DEVNULL, check=True)  # the index
        time.sleep(2.5)  # past the racy window, as in a vault not written this second

        search = "amem search (re-indexes the rewrites)"
        times: dict[str, list[float]] = {"amem move": [], search: [], "amem --version": []}
        rewritten: set[int] = set()
        for run in range(args.runs):
            old, new = places[run % 2], places[(run + 1) % 2]
            took, out = timed([amem, "move", old, new], env)
            times["amem move"].append(took)
            rewritten.add(sum(entry["links"] for entry in json.loads(out)["rewritten"]))
            # The next command re-indexes the notes the move rewrote; timed apart, so that each move
            # starts from an index that is up to date, as after any other command.
            times[search].append(timed([amem, "search", "target"], env)[0])
            times["amem --version"].append(timed([amem, "--version"], env)[0])
        print(f"{args.notes} notes, {args.backlinks} backlinks, {args.runs} runs, links rewritten: {rewritten}")
        base = statistics.median(times["amem --version"])
        for name, values in times.items():
            median = statistics.median(values)
            print(
                f"{name:40} median {median * 1000:7.1f} ms  (min {min(values) * 1000:.1f}, "
                f"max {max(values) * 1000:.1f})  {median / base:5.2f}x --version"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
