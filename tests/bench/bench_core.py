"""Whole-process wall time of `amem read` and `amem write --append` against `python -c pass`.

Builds a synthetic vault (10,000 notes by default), warms the index once, then runs each command
interleaved with the baseline so that machine noise hits all of them alike. Prints medians and ratios.
Times the console script beside this interpreter, as `pip install .` leaves it.

    python tests/bench/bench_core.py [--notes 10000] [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from make_vault import make_vault  # noqa: E402


def timed(cmd: list[str], env: dict[str, str], stdin: bytes | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    amem = str(Path(sys.executable).parent / "amem")
    if not Path(amem).exists():
        sys.exit(f"{amem} does not exist: pip install . first")
    work = Path(tempfile.mkdtemp(prefix="amem-bench-"))
    vault = work / "vault"
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
        f"amem read {note}": ([amem, "read", note], None),
        "echo x | amem write bench/log --append": ([amem, "write", "bench/log", "--append"], b"x\n"),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, (cmd, stdin) in cases.items():
            times[name].append(timed(cmd, env, stdin))

    base = statistics.median(times["python -c pass"])
    print(f"vault: {args.notes} notes, {args.runs} runs each, interpreter {sys.executable}")
    print(f"{'command':48} {'median ms':>10} {'ratio':>7}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:48} {median * 1000:10.1f} {median / base:7.2f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
