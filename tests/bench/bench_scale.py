"""How amem grows with the vault: 10k, 50k and 250k notes of the shared genvault workload, whole processes.

    python tests/bench/bench_scale.py [--notes 10000 50000 250000] [--runs 10] [--work /tmp/scale]
                                      [--genvault /work/shared/bench/genvault.py] [--reuse-build]

Per vault size: the cold build (`amem index` on an empty cache: wall, notes per second, peak RSS; once,
since a 250k build takes minutes), then medians of --runs, interleaved with `amem --version` so that each
side sees the same machine: `amem search auth token`, `amem read NOTE` and `echo x | amem write ID
--append`, without a keeper and with one (`amem index --watch`), and the keeper's resident memory (now and
its peak). Vaults are generated once under --work (`v<N>`) and reused; `--reuse-build` keeps an index built
by an earlier run instead of building it again (the build row then says so). The load average is printed
before and after each size: the machine may be shared, and the ratios taken side by side are what to read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import peak_rss_mib, timed  # noqa: E402

AMEM = str(Path(sys.executable).parent / "amem")


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def proc_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed_input(command: list[str], env: dict[str, str], data: bytes) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, input=data, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command} failed: {done.stderr.decode()}")
    return elapsed


def vault_of(n: int, work: Path, genvault: Path) -> Path:
    vault = work / f"v{n}"
    if not vault.exists():
        print(f"generating {n} notes …", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, str(genvault), str(vault), str(n)], check=True)
    return vault


def build(n: int, env: dict[str, str], cache: Path, reuse: bool) -> str:
    if reuse and cache.exists():
        return "build: reused from an earlier run"
    shutil.rmtree(cache, ignore_errors=True)
    start = time.perf_counter()
    rss = peak_rss_mib([AMEM, "index"], env)
    wall = time.perf_counter() - start
    notes = int(
        subprocess.run([AMEM, "index"], capture_output=True, text=True, env=env, check=True)
        .stdout.split('"notes":')[1]
        .split(",")[0]
    )
    rate = notes / wall
    return f"cold build: {wall:.1f} s wall, {notes:,} notes indexed, {rate:,.0f} notes/s, peak RSS {rss:.0f} MiB"


def interleaved(runs: int, env: dict[str, str], note_id: str) -> dict[str, float]:
    """Medians in ms of search, read, write --append and `amem --version`, one of each per round."""
    times: dict[str, list[float]] = {"search": [], "read": [], "write": [], "version": []}
    for _ in range(runs):
        times["search"].append(1000 * timed([AMEM, "search", "auth", "token"], env))
        times["read"].append(1000 * timed([AMEM, "read", note_id], env))
        times["write"].append(1000 * timed_input([AMEM, "write", "bench/scale-log", "--append"], env, b"x\n"))
        times["version"].append(1000 * timed([AMEM, "--version"], env))
    return {name: statistics.median(values) for name, values in times.items()}


def bench(n: int, runs: int, work: Path, genvault: Path, reuse: bool) -> None:
    vault = vault_of(n, work, genvault)
    cache = work / f"cache-{n}"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    env.pop("AMEM_CONFIG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"\n{n:,} notes (load average before: {load()})", flush=True)
    print(build(n, env, cache, reuse), flush=True)
    note_id = str(sorted(vault.glob("projects/*.md"))[0].relative_to(vault))
    timed([AMEM, "search", "warm", "up"], env)
    alone = interleaved(runs, env, note_id)
    search_rss = peak_rss_mib([AMEM, "search", "auth", "token"], env)
    keeper = subprocess.Popen(
        [AMEM, "index", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    try:
        assert keeper.stdout is not None and keeper.stdout.readline(), "the keeper did not start"
        kept = interleaved(runs, env, note_id)
        kept_rss, kept_peak = proc_mib(keeper.pid, "VmRSS"), proc_mib(keeper.pid, "VmHWM")
    finally:
        keeper.terminate()
        keeper.wait(timeout=60)
    size = sum(p.stat().st_size for p in cache.rglob("index*.sqlite*"))
    print(f"index files {size / 2**20:.0f} MiB; peak RSS of a warm search {search_rss:.0f} MiB")
    print(f"{'median of ' + str(runs):22} {'no keeper':>10} {'keeper':>10}")
    for name, label in (
        ("search", "search auth token"),
        ("read", "read"),
        ("write", "write --append"),
        ("version", "amem --version"),
    ):
        print(f"{label:22} {alone[name]:8.1f} ms {kept[name]:8.1f} ms")
    print(f"keeper RSS {kept_rss:.0f} MiB (peak {kept_peak:.0f} MiB); load average after: {load()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, nargs="+", default=[10_000, 50_000, 250_000])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--work", type=Path, default=Path("/tmp/scale"))
    parser.add_argument("--genvault", type=Path, default=Path("/work/shared/bench/genvault.py"))
    parser.add_argument("--reuse-build", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    for n in args.notes:
        bench(n, args.runs, args.work, args.genvault, args.reuse_build)


if __name__ == "__main__":
    main()
