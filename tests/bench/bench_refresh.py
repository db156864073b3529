"""What scales with the vault in a warm command, this amem side by side with another (the code before a
change), interleaved round by round so that both see the same machine state.

    python tests/bench/bench_refresh.py --vault DIR --cache DIR --before AMEM --before-cache DIR [--runs 10]

The vault and its two warm caches (XDG_CACHE_HOME folders, one per amem: they store different snapshots)
are used in place. Per round: `amem --version`, warm `amem search QUERY`, `rg -i -l`, `amem read NOTE` (the
note `bench_core` reads: the middle one of the sorted ids), `amem write bench/log --append`; then 100
notes rewritten (in place, each round its own text) and the search right after, for each amem. Medians,
and the ratios of the medians; the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import RG_OK, rg_command, timed  # noqa: E402

AMEM = str(Path(sys.executable).parent / "amem")


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--before", required=True)
    parser.add_argument("--before-cache", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--query", default="auth token")
    args = parser.parse_args()
    vault = args.vault
    notes = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    note = notes[len(notes) // 2]
    rewritten = [vault / n for n in notes if "archive" not in n and not n.startswith("bench/")][100:200]
    originals = {path: path.read_text(encoding="utf-8") for path in rewritten}
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "AMEM_CONFIG")}
    sides = {
        "after": (AMEM, {**base, "XDG_CACHE_HOME": str(args.cache), "AMEM_VAULT": str(vault)}),
        "before": (args.before, {**base, "XDG_CACHE_HOME": str(args.before_cache), "AMEM_VAULT": str(vault)}),
    }
    for program, env in sides.values():
        timed([program, "search", args.query], env)  # brought up to date, untimed
        timed([program, "read", note], env)
    print(f"{vault}: {len(notes)} notes; read {note} ({load()})", flush=True)
    cases = ["version", "search", "read", "write", "rewritten"]
    times: dict[str, dict[str, list[float]]] = {side: {case: [] for case in cases} for side in sides}
    grep: list[float] = []
    try:
        for i in range(args.runs):
            order = list(sides.items()) if i % 2 == 0 else list(reversed(sides.items()))
            for side, (program, env) in order:
                t = times[side]
                t["version"].append(timed([program, "--version"], env))
                t["search"].append(timed([program, "search", args.query], env))
                t["read"].append(timed([program, "read", note], env))
                t["write"].append(timed([program, "write", "bench/log", "--append", "x"], env))
            grep.append(timed(rg_command(args.query, vault), sides["after"][1], RG_OK))
            for path, text in originals.items():
                path.write_text(f"{text}\nrewrite {i}\n", encoding="utf-8")
            for side, (program, env) in order:
                times[side]["rewritten"].append(timed([program, "search", args.query], env))
    finally:
        for path, text in originals.items():
            path.write_text(text, encoding="utf-8")
    med = {side: {case: statistics.median(x) * 1000 for case, x in t.items()} for side, t in times.items()}
    g = statistics.median(grep) * 1000
    print(f"  rg -i -l: {g:.1f} ms")
    for side, m in med.items():
        print(
            f"  {side:6}: --version {m['version']:.1f}, search {m['search']:.1f} ({m['search'] / g:.2f}× rg), "
            f"after 100 rewrites {m['rewritten']:.1f} ({m['rewritten'] / m['search']:.2f}× warm), "
            f"read {m['read']:.1f} ({m['read'] / m['version']:.2f}× --version), "
            f"write {m['write']:.1f} ({m['write'] / m['version']:.2f}× --version) ms"
        )
    print(f"  ({load()})", flush=True)


if __name__ == "__main__":
    main()
