"""Benchmark for `amem watch` (not run by pytest): start-up, OS watches, latency, idle CPU, memory, bursts.

A generated tree of 20,000 files in 2,000 folders plus a node_modules of 10,000 folders is watched by the
installed program (`python -m amem watch`, a separate process, so that its CPU and memory are its own),
delivering to the stand-in agentmemory server on 127.0.0.1.

    python tests/bench/bench_watch.py [--idle 60] [--debounce-ms 500] [--keep DIR]

Goals (issue 5): OS watches ≤ non-ignored folders + a small constant; p95 write→delivery ≤ debounce +
250 ms; idle CPU < 1 % of a core; RSS < 80 MiB; 1,000 files changed at once all delivered.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).parent))
from benchlib import percentile  # noqa: E402
from tests.watcher.agentmemory_standin import StandInServer  # noqa: E402

TOP_FOLDERS = 40
SUB_FOLDERS = 49  # 40 + 40 × 49 = 2,000 folders
FILES_PER_FOLDER = 10  # 20,000 files
PACKAGES = 100
PACKAGE_FOLDERS = 99  # node_modules: 100 + 100 × 99 = 10,000 folders


def generate(root: Path) -> int:
    folders = 0
    for top in range(TOP_FOLDERS):
        top_dir = root / f"pkg{top:02d}"
        for sub in range(-1, SUB_FOLDERS):
            folder = top_dir if sub < 0 else top_dir / f"mod{sub:02d}"
            folder.mkdir(parents=True)
            folders += 1
            for n in range(FILES_PER_FOLDER):
                (folder / f"file{n}.ts").write_text(f"export const value{n} = {top * 1000 + sub * 10 + n};\n")
    modules = root / "node_modules"
    for package in range(PACKAGES):
        base = modules / f"dep{package:03d}"
        for sub in range(-1, PACKAGE_FOLDERS):
            folder = base if sub < 0 else base / f"lib{sub:02d}"
            folder.mkdir(parents=True)
            (folder / "index.js").write_text("module.exports = 1;\n")
    return folders


def proc_stat(pid: int) -> tuple[float, int]:
    """CPU seconds used so far (user + system) and resident memory in bytes."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    rss = 0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return cpu, rss


def inotify_watches(pid: int) -> int:
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as handle:
                total += sum(1 for line in handle if line.startswith("inotify"))
        except OSError:
            continue
    return total


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle CPU measurement")
    parser.add_argument("--debounce-ms", type=int, default=500)
    parser.add_argument("--latency-samples", type=int, default=100)
    parser.add_argument("--keep", metavar="DIR", help="generate the tree here and keep it")
    args = parser.parse_args()

    work = Path(args.keep or tempfile.mkdtemp(prefix="amem-bench-watch-"))
    root = work / "repo"
    home = work / "home"
    for sub in (".config", ".cache", ".local/state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local/state"),
        AMEM_VAULT=str(work / "vault"),
    )
    for name in list(env):
        if name.startswith("AGENTMEMORY_"):
            del env[name]

    results: dict[str, Any] = {}
    if not root.exists():
        t0 = time.monotonic()
        folders = generate(root)
        print(
            f"generated {folders} folders, {folders * FILES_PER_FOLDER} files and node_modules "
            f"({PACKAGES * (PACKAGE_FOLDERS + 1)} folders) in {time.monotonic() - t0:.1f} s"
        )
    else:
        folders = TOP_FOLDERS * (SUB_FOLDERS + 1)

    arrivals: dict[str, float] = {}
    arrivals_lock = threading.Lock()

    def on_observe(payload: Any) -> None:
        now = time.monotonic()
        content = payload.get("data", {}).get("content", "")
        with arrivals_lock:
            arrivals.setdefault(content.split("\n\n", 1)[-1], now)

    server = StandInServer(session_cap=10**9).start()
    server.on_observe = on_observe
    err_path = work / "watch.stderr"
    with open(err_path, "wb") as err:
        spawned = time.monotonic()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "amem",
                "watch",
                str(root),
                "--url",
                server.url,
                "--debounce-ms",
                str(args.debounce_ms),
            ],
            stderr=err,
            stdout=subprocess.DEVNULL,
            env=env,
            cwd=work,
        )
        try:
            wait_for(lambda: "observations go to" in err_path.read_text(), 120, "the watcher to start")
            results["start (spawn → watching, incl. interpreter)"] = f"{time.monotonic() - spawned:.2f} s"
            watches = inotify_watches(proc.pid)
            results["OS watches (inotify)"] = f"{watches} (non-ignored folders: {folders + 1} incl. root)"
            _, rss = proc_stat(proc.pid)
            results["RSS after start"] = f"{rss / 2**20:.1f} MiB"

            # Latency: one write at a time to different files, delivery time at the server.
            latencies = []
            for i in range(args.latency_samples):
                marker = f"latency sample {i} {time.time_ns()}\n"
                target = root / f"pkg{i % TOP_FOLDERS:02d}" / f"mod{i % SUB_FOLDERS:02d}" / f"file{i % 10}.ts"
                t_write = time.monotonic()
                target.write_text(marker)
                wait_for(lambda m=marker: m in arrivals, 30, f"latency sample {i}")
                latencies.append(arrivals[marker] - t_write)
            results["write → delivery p50"] = f"{statistics.median(latencies) * 1000:.0f} ms"
            results["write → delivery p95"] = (
                f"{percentile(latencies, 0.95) * 1000:.0f} ms (goal ≤ {args.debounce_ms + 250} ms)"
            )

            # A burst: 1,000 files changed at once.
            burst = [root / f"pkg{i // 25:02d}" / f"mod{i % 25:02d}" / "file9.ts" for i in range(1000)]
            markers = [f"burst {i} {time.time_ns()}\n" for i in range(1000)]
            t_burst = time.monotonic()
            for path, marker in zip(burst, markers, strict=True):
                path.write_text(marker)
            wait_for(lambda: all(m in arrivals for m in markers), 300, "the burst to be delivered")
            results["1,000 files at once → all delivered"] = f"{time.monotonic() - t_burst:.2f} s"
            stored = {o["data"]["content"].split("\n\n", 1)[-1] for o in server.accepted()}
            results["burst delivered (distinct contents)"] = f"{sum(m in stored for m in markers)}/1000"
            _, rss = proc_stat(proc.pid)
            results["RSS after the burst"] = f"{rss / 2**20:.1f} MiB"

            # Idle CPU.
            time.sleep(2.0)
            cpu_before, _ = proc_stat(proc.pid)
            time.sleep(args.idle)
            cpu_after, rss = proc_stat(proc.pid)
            results[f"idle CPU over {args.idle:g} s"] = f"{(cpu_after - cpu_before) / args.idle * 100:.3f} % of a core"
            results["RSS at the end"] = f"{rss / 2**20:.1f} MiB"
        finally:
            proc.terminate()
            code = proc.wait(timeout=30)
            server.stop()
    results["exit code after SIGTERM"] = str(code)
    summary = [line for line in err_path.read_text().splitlines() if "watch stopped" in line]
    results["summary line"] = summary[-1] if summary else "(none)"

    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
