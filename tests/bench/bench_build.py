"""The cold build, side by side: `amem index` on an empty cache, with each given copy of the code in turn.

    python tests/bench/bench_build.py VAULT NAME=CLI_DIR [NAME=CLI_DIR …] [--runs 3] [--work /tmp/bench-build]

Each CLI_DIR is a `cli` folder (the package's parent: this worktree's `cli`, or one unpacked from another
commit with `git archive COMMIT cli | tar -x -C DIR`), run as `python -m amem index` with PYTHONPATH on it,
so that any worker process it starts runs the same code. One build of each per round, the rounds
interleaved so that each copy meets the same machine; per copy, the median of the rounds: wall seconds,
user+sys CPU seconds (the build and every process it waited for, and the build's own share: on two free
cores the wall time cannot fall below the larger of its and its worker's), notes per second (wall), the peak
of the resident memory of the build and its workers summed and of the build alone (sampled every 10 ms
from /proc). The vault
is only read. The load average is printed before and after: the machine may be shared.
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
import time
from pathlib import Path


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


TICK = os.sysconf("SC_CLK_TCK")


def tree_sample(root: int, cpu: dict[int, float]) -> tuple[int, int]:
    """Resident memory (KiB) of `root` and its descendants, summed, and of `root` alone; records each
    one's CPU seconds so far (user+sys) in `cpu`, so that the last sample before a worker ends tells its
    share."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid, ppid = int(entry), int(fields.get("PPid", "0").strip())
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
        times[pid] = (int(stat[11]) + int(stat[12])) / TICK
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        if pid in times:
            cpu[pid] = max(cpu.get(pid, 0.0), times[pid])
        todo += children.get(pid, [])
    return total, rss.get(root, 0)


def build(vault: Path, cli_dir: Path, cache: Path) -> dict[str, float]:
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault), "PYTHONPATH": str(cli_dir)}
    env.pop("AMEM_CONFIG", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "amem", "index"], stdout=subprocess.PIPE, env=env)
    peak = own_peak = 0
    cpu_seen: dict[int, float] = {}
    while proc.poll() is None:
        total, own = tree_sample(proc.pid, cpu_seen)
        peak, own_peak = max(peak, total), max(own_peak, own)
        time.sleep(0.01)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.stdout is not None and proc.returncode == 0, f"{cli_dir}: exit {proc.returncode}"
    notes = json.loads(proc.stdout.read())["notes"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # The build's own CPU (the rest is its workers'): on two free cores the wall time cannot fall below
    # the larger of the two.
    others = sum(seconds for pid, seconds in cpu_seen.items() if pid != proc.pid)
    main_cpu = cpu - others
    return {
        "wall": wall,
        "cpu": cpu,
        "main": main_cpu,
        "rate": notes / wall,
        "rss": peak / 1024,
        "own_rss": own_peak / 1024,
        "notes": notes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path)
    parser.add_argument("trees", nargs="+", help="NAME=CLI_DIR")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-build"))
    args = parser.parse_args()
    trees = [(name, Path(path).resolve()) for name, path in (t.split("=", 1) for t in args.trees)]
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    print(f"{args.vault} (load average before: {load()})", flush=True)
    for round_ in range(args.runs):
        for name, cli_dir in trees:
            found = build(args.vault, cli_dir, args.work / name)
            results[name].append(found)
            print(
                f"  round {round_ + 1} {name}: {found['wall']:.1f} s wall, {found['cpu']:.1f} s CPU"
                f" ({found['main']:.1f} s of it the build's own), peak {found['rss']:.0f} MiB"
                f" ({found['own_rss']:.0f} MiB the build's own)",
                flush=True,
            )
    head = f"{'median of ' + str(args.runs):16} {'wall s':>8} {'CPU s':>8} {'its own':>8} {'notes/s':>8}"
    print(f"{head} {'peak RSS':>9} {'its own':>8}")
    for name, runs in results.items():
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(
            f"{name:16} {median['wall']:8.1f} {median['cpu']:8.1f} {median['main']:8.1f} {median['rate']:8.0f}"
            f" {median['rss']:6.0f} MiB {median['own_rss']:4.0f} MiB"
            f"   ({runs[0]['notes']:.0f} notes)"
        )
    print(f"load average after: {load()}", flush=True)


if __name__ == "__main__":
    main()
