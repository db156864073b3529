"""Whole-process wall time of `amem check` on a warm index, at 10,000 and 50,000 genvault notes, side by
side with `amem search x` (which also stats every note before it answers, as check does) and `amem
--version` (the cost of starting amem at all).

Builds each vault with /work/shared/bench/genvault.py (or GENVAULT), builds the index, waits past the racy
window, then runs the three commands interleaved RUNS times and prints medians (ms) and the load average.
genvault's vaults hold links into `archive/`, which the default excludeDirs leaves out of the index: those
are broken links, about one in nine, so the report is large and each such note is read for its lines.

    python tests/bench/bench_check.py [--sizes 10000 50000] [--runs 11]
    XDG_CACHE_HOME=... python tests/bench/bench_check.py --sizes 50000 --existing /path/to/vault
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

GENVAULT = os.environ.get("GENVAULT", "/work/shared/bench/genvault.py")


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 11):  # 11: the check found problems, as it should here
        raise SystemExit(f"{cmd} failed: {proc.stderr}")
    return elapsed, proc.stdout


def bench(amem: str, work: Path, notes: int, runs: int, existing: Path | None) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if existing is not None:  # a genvault vault of that size already there, its index in XDG_CACHE_HOME
        vault = existing
    else:
        vault = work / f"vault-{notes}"
        subprocess.run([sys.executable, GENVAULT, str(vault), str(notes)], check=True, stdout=subprocess.DEVNULL)
        env.update(XDG_CACHE_HOME=str(work / "cache"), HOME=str(work))
    env.update(AMEM_VAULT=str(vault))
    subprocess.run([amem, "index"], env=env, stdout=subprocess.DEVNULL, check=True)
    time.sleep(2.5)  # past the racy window, as in a vault not written this second
    took, out = timed([amem, "check"], env)  # warms the OS caches too
    report = json.loads(out)
    print(f"{notes} notes: {report['notes']} checked, counts {report['counts']} (first run {took * 1000:.0f} ms)")
    times: dict[str, list[float]] = {"amem check": [], "amem search x": [], "amem --version": []}
    for _ in range(runs):
        times["amem check"].append(timed([amem, "check"], env)[0])
        times["amem search x"].append(timed([amem, "search", "x"], env)[0])
        times["amem --version"].append(timed([amem, "--version"], env)[0])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--existing", type=Path, help="measure this vault (one size) instead of generating one")
    args = parser.parse_args()
    amem = str(Path(sys.executable).parent / "amem")
    if not Path(amem).exists():
        sys.exit(f"{amem} does not exist: pip install . first")
    work = Path(tempfile.mkdtemp(prefix="amem-bench-check-"))
    try:
        for notes in args.sizes:
            times = bench(amem, work, notes, args.runs, args.existing)
            for name, values in times.items():
                print(
                    f"  {name:16} median {statistics.median(values) * 1000:7.0f} ms"
                    f"  (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f}, {len(values)} runs)"
                )
            print(f"  load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
