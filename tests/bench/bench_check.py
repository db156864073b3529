"""Whole-process wall time of `amem check` on a warm index, at 10,000 and 50,000 genvault notes, side by
side with `amem search x` (which also stats every note before it answers, as check does), `amem --version`
(the cost of starting amem at all) and, with --reference, the `amem check` of another version of amem.

Builds each vault with /work/shared/bench/genvault.py (or GENVAULT), builds the index (one per version: their
schemas differ), waits past the racy window, then runs the commands interleaved RUNS times and prints medians
(ms), CPU time, and the load average. genvault's vaults hold links into `archive/`, which the default
excludeDirs leaves out of the index: those are broken links, about one in nine, so the report is large.
With --reference it also says whether both versions report the same problems at the same lines.

    git archive main cli | tar -x -C /tmp/amem-main   # the version to compare with
    python tests/bench/bench_check.py [--sizes 10000 50000] [--runs 11] [--reference /tmp/amem-main/cli]
        [--work DIR]   # keep the vaults and indexes there, to measure again without building them again
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GENVAULT = os.environ.get("GENVAULT", "/work/shared/bench/genvault.py")
AMEM = [sys.executable, "-m", "amem"]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 11):  # 11: the check found problems, as it should here
        raise SystemExit(f"{cmd} failed: {proc.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu, proc.stdout


def environment(vault: Path, cache: Path, work: Path, pythonpath: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env.update(AMEM_VAULT=str(vault), XDG_CACHE_HOME=str(cache), HOME=str(work))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def compare(mine: dict[str, Any], theirs: dict[str, Any]) -> str:
    def keyed(report: dict[str, Any]) -> dict[tuple[str, str, str], Any]:
        return {(p["kind"], p["id"], p.get("target", "")): p["line"] for p in report["problems"]}

    a, b = keyed(mine), keyed(theirs)
    if a.keys() != b.keys():
        return f"different problems: {len(a.keys() - b.keys())} only here, {len(b.keys() - a.keys())} only there"
    moved = sum(1 for key in a if a[key] != b[key])
    return f"the same {len(a)} problems, {moved} at another line"


def bench(work: Path, notes: int, runs: int, reference: str | None) -> dict[str, list[tuple[float, float]]]:
    vault = work / f"vault-{notes}"
    if not vault.exists():
        subprocess.run([sys.executable, GENVAULT, str(vault), str(notes)], check=True, stdout=subprocess.DEVNULL)
    versions = {"amem check": environment(vault, work / f"cache-{notes}", work, None)}
    if reference:
        versions["reference check"] = environment(vault, work / f"cache-{notes}-reference", work, reference)
    for env in versions.values():
        took, cpu, out = timed([*AMEM, "index"], env)
        print(f"{notes} notes: index {took:.1f} s ({cpu:.1f} s CPU), {json.loads(out)['bytes']} bytes")
    time.sleep(2.5)  # past the racy window, as in a vault not written this second
    reports = {}
    for name, env in versions.items():  # the first run warms the OS caches too
        took, _, out = timed([*AMEM, "check"], env)
        reports[name] = json.loads(out)
        print(f"  {name}: {reports[name]['notes']} checked, counts {reports[name]['counts']} (first {took:.1f} s)")
    if reference:
        print(f"  against the reference: {compare(reports['amem check'], reports['reference check'])}")
    mine = versions["amem check"]
    commands = {name: ([*AMEM, "check"], env) for name, env in versions.items()}
    commands["amem search x"] = ([*AMEM, "search", "x"], mine)
    commands["amem --version"] = ([*AMEM, "--version"], mine)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (cmd, env) in commands.items():
            times[name].append(timed(cmd, env)[:2])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--reference", help="PYTHONPATH of the amem to compare with (a folder holding amem/)")
    parser.add_argument("--work", type=Path, help="keep the vaults and indexes in this folder")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="amem-bench-check-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for notes in args.sizes:
            times = bench(work, notes, args.runs, args.reference)
            for name, values in times.items():
                walls = [wall for wall, _ in values]
                cpus = [cpu for _, cpu in values]
                print(
                    f"  {name:16} median {statistics.median(walls) * 1000:7.0f} ms"
                    f"  (min {min(walls) * 1000:.0f}, max {max(walls) * 1000:.0f}, {len(values)} runs)"
                    f"  CPU median {statistics.median(cpus) * 1000:.0f} ms"
                )
            print(f"  load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
