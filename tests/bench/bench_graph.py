"""`amem graph` at genvault sizes: whole-process time of the JSON graph and of the HTML page, beside `amem list`
(the same index, every note's row) as the reference, interleaved so that machine noise hits all alike; then the
page's layout time and frame time in headless Chromium (offline), as the page measures them.

    python tests/bench/bench_graph.py [--notes 10000 50000] [--runs 10] [--browser 1000 10000] [--loads 3]
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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tests.browser import Browser, chromium_binary  # noqa: E402

GENVAULT = REPO.parent / "shared" / "bench" / "genvault.py"


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run: on a loaded machine the CPU time is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def vault_of(work: Path, notes: int, amem: str) -> dict[str, str]:
    vault = work / f"v{notes}"
    subprocess.run([sys.executable, str(GENVAULT), str(vault), str(notes)], check=True, stdout=subprocess.DEVNULL)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(AMEM_VAULT=str(vault), XDG_CACHE_HOME=str(work / f"cache{notes}"), HOME=str(work))
    subprocess.run([amem, "index"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    time.sleep(3.5)  # past the racy window, as in a vault not written this second
    subprocess.run([amem, "list", "--limit", "1"], env=env, stdout=subprocess.DEVNULL, check=True)
    return env


def generation(work: Path, notes: int, runs: int, amem: str) -> None:
    env = vault_of(work, notes, amem)
    page = work / f"graph{notes}.html"
    cases = {
        "amem list (reference)": [amem, "list"],
        "amem graph": [amem, "graph"],
        "amem graph --format html": [amem, "graph", "--format", "html", "--output", str(page)],
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, cmd in cases.items():
            times[name].append(timed(cmd, env))
    wall_ref = statistics.median(w for w, _ in times["amem list (reference)"])
    cpu_ref = statistics.median(c for _, c in times["amem list (reference)"])
    print(f"\n{notes} notes, {runs} runs each; page {page.stat().st_size / 1e6:.1f} MB; load {os.getloadavg()[0]:.1f}")
    for name, values in times.items():
        wall, cpu = statistics.median(w for w, _ in values), statistics.median(c for _, c in values)
        print(
            f"  {name:<28} wall median {wall * 1000:7.0f} ms (x{wall / wall_ref:4.2f} of list)   "
            f"CPU median {cpu * 1000:6.0f} ms (x{cpu / cpu_ref:4.2f})"
        )


def browser_layout(work: Path, notes: int, loads: int, amem: str) -> None:
    env = vault_of(work, notes, amem)
    page = work / f"page{notes}.html"
    subprocess.run(
        [amem, "graph", "--format", "html", "--output", str(page)], env=env, check=True, stdout=subprocess.DEVNULL
    )
    layouts, frames, ticks_min, drawn = [], [], [], 0
    for _ in range(loads):
        browser = Browser(1200, 800)
        try:
            browser.open(page)
            state = browser.wait_for("window.amemGraph && window.amemGraph.frameMs !== null && window.amemGraph", 900)
            layouts.append(state["layoutMs"])
            frames.append(state["frameMs"])
            ticks_min.append(state["tickMin"] * state["ticks"])
            drawn = state["drawn"]
            worker = state["worker"]
            ticks = state["ticks"]
        finally:
            browser.close()
    print(
        f"\nbrowser, {notes} notes ({drawn} drawn, {ticks} ticks, layout in the {worker}), {loads} loads: "
        f"layout median {statistics.median(layouts):.0f} ms, frame median {statistics.median(frames):.1f} ms, "
        f"fastest tick x ticks {statistics.median(ticks_min):.0f} ms (the layout's cost on an idle core)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, nargs="*", default=[10_000, 50_000])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--browser", type=int, nargs="*", default=[1_000, 10_000])
    parser.add_argument("--loads", type=int, default=3)
    args = parser.parse_args()
    amem = str(Path(sys.executable).parent / "amem")
    work = Path(tempfile.mkdtemp(prefix="amem-bench-graph-"))
    print(f"load average: {os.getloadavg()}")
    try:
        for notes in args.notes:
            generation(work, notes, args.runs, amem)
        if args.browser and chromium_binary() is None:
            print("no Chromium: browser figures skipped")
        else:
            for notes in args.browser:
                browser_layout(work, notes, args.loads, amem)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
