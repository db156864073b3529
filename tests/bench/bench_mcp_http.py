"""Load on `amem mcp --http`: many clients at once against one server on 127.0.0.1, beside the same calls over
stdio.

    python tests/bench/bench_mcp_http.py [--notes 1000] [--clients 20] [--calls 50] [--work DIR]

A vault of --notes generated notes gets one server (`amem mcp --http 127.0.0.1:0 --commit` off, a token
made for the run). --clients SDK streamable-HTTP clients, each its own session, run at once in one process;
each makes --calls calls in turn: a search, a read of a random note, and an append to one of four shared
notes carrying a marker unique to the call. Afterwards every marker must be in the shared notes exactly
once, and no call may have failed. The same sequence of calls then runs over stdio (one `amem mcp`, one
client, one call after another), and over HTTP with one client, for scale. Prints p50/p95 per tool in
milliseconds, from the client's side (sent to result parsed), and the wall time of each run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import percentile  # noqa: E402
from make_vault import make_vault  # noqa: E402

QUERIES = ["auth token", "session", "migration", "认证", "deploy"]
SHARED = [f"shared/log-{i}" for i in range(4)]
AMEM = str(Path(sys.executable).parent / "amem")

Plan = list[tuple[str, dict[str, Any]]]


def plan(client: int, calls: int, ids: list[str], seed: int) -> Plan:
    """The calls one client makes: searches, reads and appends to the shared notes, in turn."""
    rng = random.Random(seed * 1000 + client)
    steps: Plan = []
    for i in range(calls):
        kind = i % 3
        if kind == 0:
            steps.append(("wiki_search", {"query": rng.choice(QUERIES)}))
        elif kind == 1:
            steps.append(("wiki_read", {"id": rng.choice(ids), "depth": 0}))
        else:
            note = SHARED[rng.randrange(len(SHARED))]
            steps.append(("wiki_write", {"id": note, "content": f"marker c{client}-{i}"}))
    return steps


async def run_plan(session: ClientSession, steps: Plan, timings: dict[str, list[float]], errors: list[str]) -> None:
    for name, arguments in steps:
        started = time.perf_counter()
        result = await session.call_tool(name, arguments)
        timings.setdefault(name, []).append((time.perf_counter() - started) * 1000)
        if result.is_error:
            errors.append(f"{name}: {result.content[0].text if result.content else '?'}")  # type: ignore[union-attr]


async def http_client(url: str, token: str, steps: Plan, timings: dict[str, list[float]], errors: list[str]) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await run_plan(session, steps, timings, errors)
    except Exception as exc:  # a client that fails counts as an error, not a crash of the bench
        errors.append(f"client failed: {type(exc).__name__}: {exc}")


async def over_http(url: str, token: str, plans: list[Plan]) -> tuple[dict[str, list[float]], list[str], float]:
    timings: dict[str, list[float]] = {}
    errors: list[str] = []
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for steps in plans:
            group.start_soon(http_client, url, token, steps, timings, errors)
    return timings, errors, time.perf_counter() - started


async def over_stdio(env: dict[str, str], plans: list[Plan]) -> tuple[dict[str, list[float]], list[str], float]:
    timings: dict[str, list[float]] = {}
    errors: list[str] = []
    params = StdioServerParameters(command=AMEM, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("wiki_search", {"query": "warm"})
        started = time.perf_counter()
        for steps in plans:
            await run_plan(session, steps, timings, errors)
        return timings, errors, time.perf_counter() - started


def shared_markers(vault: Path) -> list[str]:
    markers: list[str] = []
    for note in SHARED:
        path = vault / f"{note}.md"
        if path.exists():
            markers += [
                line.split("marker ", 1)[1].strip() for line in path.read_text().splitlines() if "marker " in line
            ]
    return markers


def check_appends(vault: Path, plans: list[Plan]) -> str:
    expected = sorted(a["content"].split(" ", 1)[1] for steps in plans for name, a in steps if name == "wiki_write")
    found = sorted(shared_markers(vault))
    if found == expected:
        return f"{len(found)} appends, each present once"
    missing = set(expected) - set(found)
    doubled = len(found) - len(set(found))
    return f"APPENDS WRONG: {len(missing)} missing, {doubled} doubled"


def report(title: str, timings: dict[str, list[float]], errors: list[str], wall: float) -> None:
    calls = sum(len(v) for v in timings.values())
    print(f"\n{title}: {calls} calls in {wall:.1f} s ({calls / wall:.0f} calls/s), {len(errors)} errors")
    for error in errors[:5]:
        print(f"  error: {error}")
    print(f"  {'tool':<12} {'calls':>6} {'p50 ms':>8} {'p95 ms':>8}")
    for name, values in sorted(timings.items()):
        print(f"  {name:<12} {len(values):>6} {percentile(values, 0.5):>8.1f} {percentile(values, 0.95):>8.1f}")


def fresh_vault(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([AMEM, "mcp", "--http", "127.0.0.1:0"], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())["url"]


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def timed_http_run(
    env: dict[str, str], token: str, plans: list[Plan], warm: Callable[[str], None]
) -> tuple[dict[str, list[float]], list[str], float]:
    proc, url = start_server(env)
    try:
        warm(url)
        return anyio.run(over_http, url, token, plans)
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="amem-bench-http-"))
    source = work / "source"
    if not (source / ".complete").exists():
        shutil.rmtree(source, ignore_errors=True)
        ids = make_vault(source, args.notes, seed=0)
        (source / "ids.json").write_text(json.dumps(ids))
        (source / ".complete").touch()
    ids = json.loads((source / "ids.json").read_text())
    vault = work / "vault"
    state = Path(tempfile.mkdtemp(prefix="abs"))  # short: the keeper's socket path must fit
    env = {**os.environ, "AMEM_VAULT": str(vault), "XDG_STATE_HOME": str(state), "XDG_CACHE_HOME": str(state)}
    token = json.loads(subprocess.run([AMEM, "token", "add", "bench"], env=env, capture_output=True, text=True).stdout)[
        "token"
    ]
    plans = [plan(c, args.calls, ids, seed=1) for c in range(args.clients)]

    def warm(url: str) -> None:  # the index built, as on stdio (over_stdio's first call)
        anyio.run(over_http, url, token, [[("wiki_search", {"query": "warm"})]])

    fresh_vault(source, vault)
    timings, errors, wall = timed_http_run(env, token, plans, warm)
    report(f"HTTP, {args.clients} clients at once", timings, errors, wall)
    print(f"  {check_appends(vault, plans)}")

    fresh_vault(source, vault)
    timings, errors, wall = timed_http_run(env, token, [[step for p in plans for step in p]], warm)
    report("HTTP, one client, the same calls in turn", timings, errors, wall)
    print(f"  {check_appends(vault, plans)}")

    fresh_vault(source, vault)
    timings, errors, wall = anyio.run(over_stdio, env, plans)
    report("stdio, one client, the same calls in turn", timings, errors, wall)
    print(f"  {check_appends(vault, plans)}")
    shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
