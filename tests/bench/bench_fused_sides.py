"""Warm fused search against keyword search through the MCP server (`wiki_search`), two builds side by side:
four `amem mcp` servers (this build's and another's, each with `semantic: true` and without) open at once
and called in turn, call by call, so that the machine's load falls on all four alike.

    python tests/bench/bench_fused_sides.py --other-amem OTHER/.venv/bin/amem [--calls 60] [--work DIR]

--work holds one prepared copy of the vault per build, as tests/bench/bench_fused.py leaves it in its own
--work (`WORK/vault`, indexed and embedded by that build): `--work` for this build, `--other-work` for the
other's. Prints each server's median and each build's fused / keyword ratio, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_fused import AMEM, QUERIES, environment  # noqa: E402


async def _sides(servers: list[tuple[str, str, dict[str, str]]], calls: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name, _, _ in servers}
    with open(os.devnull, "w") as devnull:
        return await _called(servers, calls, times, devnull)


async def _called(
    servers: list[tuple[str, str, dict[str, str]]], calls: int, times: dict[str, list[float]], devnull: Any
) -> dict[str, list[float]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async with AsyncExitStack() as stack:
        sessions = []
        for name, amem, env in servers:
            params = StdioServerParameters(command=amem, args=["mcp"], env=env)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=devnull))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append((name, session))
        for _ in range(3):  # the keepers' first builds checked, the vectors loaded
            for _, session in sessions:
                for query in QUERIES:
                    await session.call_tool("wiki_search", {"query": query})
        for i in range(calls):
            order = sessions if i % 2 == 0 else sessions[::-1]
            for name, session in order:
                start = time.perf_counter()
                result = await session.call_tool("wiki_search", {"query": QUERIES[i % len(QUERIES)]})
                times[name].append((time.perf_counter() - start) * 1000)
                if result.is_error:
                    raise SystemExit(f"{name}: wiki_search failed: {result.content}")
    return times


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other-amem", required=True)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--work", type=Path, default=Path("/tmp/amem-bench-fused"))
    parser.add_argument("--other-work", type=Path, required=True)
    parser.add_argument("--model", default="static")
    args = parser.parse_args()
    servers = []
    for build, amem, work in (("this", AMEM, args.work), ("other", args.other_amem, args.other_work)):
        for semantic in (False, True):
            env = environment(work, work / "vault", args.model, semantic)
            servers.append((f"{build} {'fused' if semantic else 'keyword'}", amem, env))
    print(f"{args.model}; load average {os.getloadavg()}")
    times = anyio.run(_sides, servers, args.calls)
    for build in ("other", "this"):
        k, f = statistics.median(times[f"{build} keyword"]), statistics.median(times[f"{build} fused"])
        print(
            f"  {build}: MCP wiki_search ({args.calls} calls each): keyword {k:.1f} ms, fused {f:.1f} ms ({f / k:.2f}×)"
        )
    print(f"  load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
