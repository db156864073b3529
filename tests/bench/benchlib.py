"""What the benchmark scripts share: timing a whole command, its peak memory, percentiles, and the `rg`
command amem's search is measured against."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Collection
from pathlib import Path


def installed_amem() -> str:
    """The console script beside this interpreter, as `pip install .` leaves it; the benchmark stops when
    there is none."""
    amem = Path(sys.executable).parent / "amem"
    if not amem.exists():
        raise SystemExit(f"{amem} does not exist: pip install . first")
    return str(amem)


def timed(command: list[str], env: dict[str, str], ok: Collection[int] = (0,)) -> float:
    """Wall seconds of one run of `command`; an exit code outside `ok` stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in ok:
        raise SystemExit(f"{command} failed: {done.stderr.decode()}")
    return elapsed


def peak_rss_mib(command: list[str], env: dict[str, str]) -> float:
    """Peak resident memory of one run, measured in a fresh parent so that no other child counts."""
    probe = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env)
    return int(out.stdout.strip()) / 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


#: rg's exit codes for a search that ran: 0 found, 1 found nothing.
RG_OK = (0, 1)


def rg_command(query: str, vault: Path) -> list[str]:
    """`rg -i -l -e WORD …` over the vault: the files holding any query word, as amem's OR search finds."""
    patterns = [arg for word in query.split() for arg in ("-e", word)]
    return ["rg", "-i", "-l", *patterns, str(vault)]
