"""`amem graph` at genvault sizes: whole-process time of the JSON graph and of the HTML page, beside `amem list`
(the same index, every note's row) as the reference, interleaved so that machine noise hits all alike; then the
page's layout time and frame time in headless Chromium (offline), as the page measures them.

    python tests/bench/bench_graph.py [--notes 10000 50000] [--runs 10] [--browser 10000 50000] [--loads 10]
        [--reference main] [--reference-loads 3]
"""

from __future__ import annotations

import argparse
import os
import re
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
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(AMEM_VAULT=str(vault), XDG_CACHE_HOME=str(work / f"cache{notes}"), HOME=str(work))
    if vault.exists():  # made and indexed for the figures before these
        return env
    subprocess.run([sys.executable, str(GENVAULT), str(vault), str(notes)], check=True, stdout=subprocess.DEVNULL)
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


#: A pan and a zoom as a hand makes them, one event an animation frame; the median gap between frames.
MOVING = """(async () => {
  const view = document.getElementById("view"), frame = () => new Promise((r) => requestAnimationFrame(r));
  const stamps = [], at = (i) => ({clientX: 600 + 6 * i, clientY: 400 + 3 * i, pointerId: 1, bubbles: true});
  view.dispatchEvent(new PointerEvent("pointerdown", at(0)));
  for (let i = 1; i <= 30; i++) {
    view.dispatchEvent(new PointerEvent("pointermove", at(i)));
    await frame(); stamps.push(performance.now());
  }
  view.dispatchEvent(new PointerEvent("pointerup", at(30)));
  for (let i = 1; i <= 30; i++) {
    const wheel = {deltaY: i < 15 ? -40 : 40, clientX: 600, clientY: 400, bubbles: true, cancelable: true};
    view.dispatchEvent(new WheelEvent("wheel", wheel));
    await frame(); stamps.push(performance.now());
  }
  const gaps = stamps.slice(1).map((t, i) => t - stamps[i]).filter((g, i) => i !== 29).sort((a, b) => a - b);
  return gaps[gaps.length >> 1];
})()"""
READY = "window.amemGraph && window.amemGraph.frameMs !== null && window.amemGraph"
FIELDS = ["firstDrawMs", "firstLayoutMs", "layoutMs", "ticks", "tickMedian", "tickMin", "frameMs", "moveMs"]


def reference_page(page: Path, rev: str, out: Path) -> None:
    """The same graph in the page of git revision `rev` (its page.html, the same data and vendored code)."""
    template = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:cli/amem/graphview/page.html"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    html = page.read_text(encoding="utf-8")
    blocks = {
        name: re.search(rf'<script type="application/json" id="amem-{name}">(.*?)</script>', html, re.S).group(1)  # type: ignore[union-attr]
        for name in ("data", "vendor")
    }
    values = {"GRAPH_DATA": blocks["data"], "VENDOR": blocks["vendor"]}
    out.write_text(re.sub(r"/\*AMEM_([A-Z_]+)\*/", lambda m: values[m.group(1)], template), encoding="utf-8")


def load(page: Path, timeout: float) -> dict[str, float]:
    """One load of `page` in a fresh headless Chromium: what the page measured of itself, and the frames of a pan
    and a zoom. A page that does not say when it drew first (main's) gives None for it."""
    browser = Browser(1200, 800)
    try:
        browser.open(page)
        state = browser.wait_for(READY, timeout)
        state["moveMs"] = browser.evaluate(MOVING, wait=True, timeout=900)
        if state.get("firstDrawMs") is None:  # main's page: its layoutMs runs from its script's start
            state["firstLayoutMs"] = None
    finally:
        browser.close()
    return {name: state.get(name) for name in (*FIELDS, "drawn", "nodes", "edges", "worker")}


def browser_layout(work: Path, notes: int, loads: int, amem: str, reference: str | None, reference_loads: int) -> None:
    env = vault_of(work, notes, amem)
    pages = {"this": work / f"page{notes}.html"}
    subprocess.run(
        [amem, "graph", "--format", "html", "--output", str(pages["this"])],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    if reference:
        pages[reference] = work / f"page{notes}-{reference}.html"
        reference_page(pages["this"], reference, pages[reference])
    results: dict[str, list[dict[str, float]]] = {name: [] for name in pages}
    for number in range(loads):  # interleaved, so that the machine's load falls on both alike
        for name, page in pages.items():
            if name == "this" or number < reference_loads:
                results[name].append(load(page, 1800))
                print(f"  ({name}, load {number + 1}: {results[name][-1]})", file=sys.stderr, flush=True)
    one = results["this"][0]
    print(f"\nbrowser, {notes} notes ({one['nodes']} nodes, {one['edges']} edges), load {os.getloadavg()[0]:.1f}")
    for name, runs in results.items():
        medians = {}
        for field in FIELDS:
            values = [r[field] for r in runs if r.get(field) is not None]
            medians[field] = statistics.median(values) if values else float("nan")
        print(
            f"  {name:<6} {len(runs):2} loads, drawn {runs[0]['drawn']}, {medians['ticks']:.0f} steps in the "
            f"{runs[0]['worker']}: first drawing {medians['firstDrawMs'] / 1000:6.2f} s, first layout drawn "
            f"{medians['firstLayoutMs'] / 1000:6.2f} s, layout done {medians['layoutMs'] / 1000:7.2f} s; a step "
            f"median {medians['tickMedian']:6.1f} ms, fastest {medians['tickMin']:6.1f} ms (x steps "
            f"{medians['tickMin'] * medians['ticks'] / 1000:5.1f} s); frame at rest {medians['frameMs']:5.1f} ms, "
            f"while moving {medians['moveMs']:5.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, nargs="*", default=[10_000, 50_000])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--browser", type=int, nargs="*", default=[10_000, 50_000])
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--reference", help="a git revision whose page loads beside this one (e.g. main)")
    parser.add_argument("--reference-loads", type=int, default=3, help="loads of the reference page (slow)")
    parser.add_argument("--work", type=Path, help="a folder to keep the vaults in (v10000, cache10000...) and reuse")
    args = parser.parse_args()
    amem = str(Path(sys.executable).parent / "amem")
    work = args.work or Path(tempfile.mkdtemp(prefix="amem-bench-graph-"))
    print(f"load average: {os.getloadavg()}")
    try:
        for notes in args.notes:
            generation(work, notes, args.runs, amem)
        if args.browser and chromium_binary() is None:
            print("no Chromium: browser figures skipped")
        else:
            for notes in args.browser:
                browser_layout(work, notes, args.loads, amem, args.reference, args.reference_loads)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
