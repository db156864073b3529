"""Whole-process wall and CPU time of `amem read` and `amem write --append` against `python -c pass` and
`amem --version` (start-up alone).

Builds a synthetic vault (10,000 notes by default) or copies the one given with --vault (such as one made
by genvault.py), warms the index once, then runs each command interleaved with the references so that
machine noise hits all of them alike. Prints medians (wall, and CPU: user + system of the process and
its children) and their ratios to `amem --version`, pair by pair. Times the console script beside this
interpreter, as `pip install .` leaves it.

    python tests/bench/bench_core.py [--notes 10000] [--runs 15] [--vault DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
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


def timed(cmd: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--vault", type=Path, help="copy this vault instead of building one")
    parser.add_argument("--before", metavar="AMEM", help="also time this amem executable (the code before a change)")
    args = parser.parse_args()

    amem = installed_amem()
    work = Path(tempfile.mkdtemp(prefix="amem-bench-"))
    vault = work / "vault"
    if args.vault:
        shutil.copytree(args.vault, vault, symlinks=True)
        args.notes = sum(1 for _ in vault.rglob("*.md"))
    else:
        make_vault(vault, args.notes, seed=1)
    # Bytecode caching on, as in an installed amem (some environments set PYTHONDONTWRITEBYTECODE).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(AMEM_VAULT=str(vault), XDG_CACHE_HOME=str(work / "cache"), HOME=str(work))
    note = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))[args.notes // 2]
    subprocess.run([amem, "read", note], env=env, stdout=subprocess.DEVNULL, check=True)  # build the index
    time.sleep(3.5)  # let the files' mtimes age past the racy window, as in a vault not written this second
    subprocess.run([amem, "read", note], env=env, stdout=subprocess.DEVNULL, check=True)

    cases = {
        "python -c pass": ([sys.executable, "-c", "pass"], None),
        "amem --version": ([amem, "--version"], None),
        f"amem read {note}": ([amem, "read", note], None),
        "echo x | amem write bench/log --append": ([amem, "write", "bench/log", "--append"], b"x\n"),
    }
    if args.before:
        for name, (cmd, stdin) in list(cases.items())[1:]:
            cases[f"before: {name}"] = ([args.before, *cmd[1:]], stdin)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, (cmd, stdin) in cases.items():
            times[name].append(timed(cmd, env, stdin))

    print(f"vault: {args.notes} notes, {args.runs} runs each, interpreter {sys.executable}")
    print(f"load average before the runs' end: {os.getloadavg()[0]:.2f}")
    print(f"{'command':56} {'wall ms':>8} {'cpu ms':>8} {'wall/ver':>9} {'cpu/ver':>8}")
    for name, values in times.items():
        reference = times["before: amem --version" if name.startswith("before: ") else "amem --version"]
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        # ratios pair by pair: each run against the `amem --version` of the same round
        wall_ratio = statistics.median(v[0] / r[0] for v, r in zip(values, reference, strict=True))
        cpu_ratio = statistics.median(v[1] / r[1] for v, r in zip(values, reference, strict=True) if r[1] > 0)
        print(f"{name:56} {wall * 1000:8.1f} {cpu * 1000:8.1f} {wall_ratio:8.2f}x {cpu_ratio:7.2f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
