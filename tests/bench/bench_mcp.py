"""Benchmark `amem mcp` through a real MCP client: latency of wiki_search, wiki_write (append), wiki_edit
(find and replace in a long note, version-guarded) and wiki_read tool calls, client and server on this
machine, server warm.

    python tests/bench/bench_mcp.py [--notes 1000 10000] [--calls 200] [--work DIR]

For each vault size the installed `amem mcp` is spawned by the SDK's stdio_client, the index is built by
a first call, and then --calls calls of each tool are timed one after another from the client's side
(send to result parsed): p50 and p95 in milliseconds. Searches cycle through words of several
frequencies, reads through random notes (at the default link depth), appends go to one note. Side by side,
the same search and read through the CLI (`amem search`, `amem read`, whole process) for scale.

    python tests/bench/bench_mcp.py --first-answer VAULT [--runs 9] [--old PYTHONPATH]

Spawn to first answer: a copy of VAULT gets its index built, then `amem mcp` is spawned --runs times and
timed from the spawn to the first `wiki_search` result (handshake included), with the CPU time the server
spent until then; with --old, each run of this checkout alternates with one of the amem found on that
PYTHONPATH, side by side.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import percentile  # noqa: E402
from make_vault import VOCABULARY, make_vault  # noqa: E402

QUERIES = ["auth token", "session", "migration", "认证", VOCABULARY[2000]]
AMEM = str(Path(sys.executable).parent / "amem")


def vault_of(n: int, work: Path) -> Path:
    vault = work / f"vault-{n}"
    if not (vault / ".complete").exists():
        shutil.rmtree(vault, ignore_errors=True)
        print(f"generating {n} notes …", file=sys.stderr)
        make_vault(vault, n, seed=0)
        (vault / ".complete").touch()
    return vault


async def through_mcp(env: dict[str, str], ids: list[str], calls: int) -> dict[str, list[float]]:
    params = StdioServerParameters(command=AMEM, args=["mcp"], env=env)
    timings: dict[str, list[float]] = {
        "wiki_search": [],
        "wiki_read": [],
        "wiki_write": [],
        "wiki_edit": [],
        "wiki_read after a write": [],
    }
    rng = random.Random(0)
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def timed(name: str, arguments: dict[str, Any], keep: bool = True, into: str = "") -> None:
                start = time.perf_counter()
                result = await session.call_tool(name, arguments)
                elapsed = time.perf_counter() - start
                if result.is_error:
                    raise SystemExit(f"{name} failed: {result.content}")
                if keep:
                    timings[into or name].append(elapsed * 1000)

            started = time.perf_counter()
            await timed("wiki_search", {"query": "warm up"}, keep=False)
            print(f"  first call (index build or refresh): {time.perf_counter() - started:.2f} s", flush=True)
            for _ in range(5):
                await timed("wiki_search", {"query": "auth"}, keep=False)
                await timed("wiki_read", {"id": ids[0]}, keep=False)
            # Reads and searches of an unchanged vault, then appends, then a read right after each append
            # (the keeper must apply the write before the read may skip the walk).
            for i in range(calls):
                await timed("wiki_search", {"query": QUERIES[i % len(QUERIES)]})
                await timed("wiki_read", {"id": rng.choice(ids)})
            for i in range(calls):
                await timed("wiki_write", {"id": "bench/log", "content": f"entry {i}"})
            # Edits of one fact in a long note (about 20 KB), each guarded by the version the last one returned.
            long_note = "".join(f"## Part {k}\n\n{' '.join(VOCABULARY[k * 7 : k * 7 + 40])}\n\n" for k in range(60))
            created = await session.call_tool(
                "wiki_write",
                {"id": "bench/facts", "content": f"# Facts\n\ncounter 0 end\n\n{long_note}", "mode": "overwrite"},
            )
            version = (created.structured_content or {})["version"]
            for i in range(calls):
                start = time.perf_counter()
                result = await session.call_tool(
                    "wiki_edit",
                    {
                        "id": "bench/facts",
                        "find": f"counter {i} end",
                        "replace": f"counter {i + 1} end",
                        "baseVersion": version,
                    },
                )
                timings["wiki_edit"].append((time.perf_counter() - start) * 1000)
                if result.is_error:
                    raise SystemExit(f"wiki_edit failed: {result.content}")
                version = (result.structured_content or {})["version"]
            for i in range(calls):
                await timed("wiki_write", {"id": "bench/log", "content": f"more {i}"}, keep=False)
                await timed("wiki_read", {"id": rng.choice(ids)}, into="wiki_read after a write")
    return timings


def cli_ms(command: list[str], env: dict[str, str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def bench(n: int, calls: int, work: Path) -> None:
    vault = vault_of(n, work)
    cache = work / f"cache-{n}"
    shutil.rmtree(vault / "bench", ignore_errors=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "XDG_CACHE_HOME": str(cache),
        "AMEM_VAULT": str(vault),
    }
    if "PYTHONPATH" in os.environ:  # another checkout's amem, for a side by side
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    ids = sorted(str(p.relative_to(vault)) for p in vault.rglob("*.md"))
    print(f"\n{n} notes, {calls} calls of each tool")
    timings = anyio.run(through_mcp, env, ids, calls)
    print(f"{'tool':24} {'p50':>8} {'p95':>8} {'max':>8}")
    for name, values in timings.items():
        print(f"{name:24} {percentile(values, 0.5):6.1f}ms {percentile(values, 0.95):6.1f}ms {max(values):6.1f}ms")
    runs = 10
    search = statistics.median(cli_ms([AMEM, "search", q], env, runs) for q in QUERIES)
    read = cli_ms([AMEM, "read", ids[len(ids) // 2]], env, runs)
    version = cli_ms([AMEM, "--version"], env, runs)
    print(f"for scale, whole CLI processes (median of {runs}): amem search {search:.1f} ms, amem read {read:.1f} ms,")
    print(f"  amem --version {version:.1f} ms")
    shutil.rmtree(vault / "bench", ignore_errors=True)


async def first_answer(env: dict[str, str]) -> tuple[float, float]:
    """Milliseconds from spawning `amem mcp` to the result of its first wiki_search, and the CPU time the
    server spent until then (steadier than wall time on a busy machine)."""
    params = StdioServerParameters(command=AMEM, args=["mcp"], env=env)
    with open(os.devnull, "w") as devnull:
        start = time.perf_counter()
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("wiki_search", {"query": "component props"})
            elapsed = (time.perf_counter() - start) * 1000
            cpu = sum(_cpu_ms(pid) for pid in _children())
    if result.is_error or not (result.structured_content or {}).get("hits"):
        raise SystemExit(f"wiki_search failed: {result.content}")
    return elapsed, cpu


def _children() -> list[int]:
    """This process's children (the server), from /proc."""
    tasks = Path(f"/proc/{os.getpid()}/task")
    return [int(pid) for task in tasks.iterdir() for pid in (task / "children").read_text().split()]


def _cpu_ms(pid: int) -> float:
    """User and system CPU time of a process, all its threads, in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def bench_first_answer(source: Path, runs: int, work: Path, old: str | None) -> None:
    vault = work / "first-answer-vault"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(source, vault)
    sides = {"this checkout": os.environ.get("PYTHONPATH")} | ({"old": old} if old else {})
    envs: dict[str, dict[str, str]] = {}
    for side, path in sides.items():
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "XDG_CACHE_HOME": str(work / f"first-answer-cache-{len(envs)}"),
            "AMEM_VAULT": str(vault),
        }
        if path:
            env["PYTHONPATH"] = path
        subprocess.run([AMEM, "index"], stdout=subprocess.DEVNULL, env=env, check=True)  # the index, built
        envs[side] = env
    samples: dict[str, list[tuple[float, float]]] = {side: [] for side in envs}
    for _ in range(runs):
        for side, env in envs.items():
            samples[side].append(anyio.run(first_answer, env))
    print(f"\nspawn to first wiki_search answer, {source.name}, {runs} runs each (ms; median, min, max)")
    for side, pairs in samples.items():
        wall, cpu = [p[0] for p in pairs], [p[1] for p in pairs]
        print(
            f"{side:14} wall {statistics.median(wall):5.0f} {min(wall):5.0f} {max(wall):5.0f}"
            f"   server CPU {statistics.median(cpu):5.0f} {min(cpu):5.0f} {max(cpu):5.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/amem-bench-mcp"))
    parser.add_argument("--first-answer", type=Path, metavar="VAULT", help="time spawn to first answer on VAULT")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--old", metavar="PYTHONPATH", help="with --first-answer: the amem to compare with")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.first_answer:
        bench_first_answer(args.first_answer, args.runs, args.work, args.old)
        return
    for n in args.notes:
        bench(n, args.calls, args.work)


if __name__ == "__main__":
    main()
