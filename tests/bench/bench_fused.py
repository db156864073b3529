"""Warm fused search against keyword search, where a search is warm: through an index keeper (`amem index
--watch`: whole `amem search` processes it answers) and through the MCP server (`wiki_search` calls).

    python tests/bench/bench_fused.py VAULT [--model static|minilm] [--runs 10] [--calls 40] [--work DIR]
                                      [--fill-tokens 16] [--queries Q …] [--mcp-only]

VAULT is a genvault vault (`python /work/shared/bench/genvault.py DIR 10000`), copied once under --work.
Before timing, every note is embedded: `static` by a first fused search; `minilm` in this process through
amem.semantic.embedding (as `amem index` does) with each text cut to --fill-tokens tokens, so that the
vectors are made in minutes rather than the hour a full embedding takes on a loaded 2-core machine: a
ranking's cost depends on how many vectors it scores and their dimension, which stay those of a full
embedding (the same chunks, 384 dimensions), not on their values. Say so when quoting the figures; 0 embeds
in full.

Keeper: with a keeper of the model running, `amem search Q` and `amem search --semantic Q` alternate, the
queries cycling, --runs rounds: medians and their ratio. MCP: two `amem mcp` servers on the same vault
and index, one with `semantic: true`, one without, both open at once and called in turn, call by call
(`wiki_search`, the one that goes first alternating), --calls each:
medians and their ratio, of every call and of each query's, with the fusion weight it gets (a query of
weight 0 ranks no vectors). The load average is printed: compare the ratios, taken side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

AMEM = str(Path(sys.executable).parent / "amem")
QUERIES = ["auth token", "how long do sessions stay valid", "retry with backoff", "认证", "deploy the server"]


def environment(work: Path, vault: Path, model: str, semantic: bool) -> dict[str, str]:
    config = work / f"config-{model}-{'fused' if semantic else 'keyword'}.yaml"
    config.write_text(f"semantic: {{enabled: {'true' if semantic else 'false'}, model: {model}}}\n")
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "XDG_CACHE_HOME": str(work / f"cache-{model}"),
        "AMEM_VAULT": str(vault),
        "AMEM_CONFIG": str(config),
    }


def prepare(work: Path, vault: Path, model: str, fill_tokens: int) -> None:
    """Index the vault and embed every note (see the docstring)."""
    env = environment(work, vault, model, True)
    if model == "static":
        subprocess.run([AMEM, "search", "--semantic", "warm up"], env=env, check=True, capture_output=True)
        return
    code = (
        "import os, sys\n"
        "from amem.index import models, embedding\n"
        "from amem.config import load_config\n"
        "from amem.index.index import VaultIndex\n"
        "from amem.report import Reporter\n"
        "tokens, made = models.MINILM_TOKENS, models.minilm\n"
        "def minilm():  # cut short, stored as the model a keeper loads\n"
        "    embedder = made()\n"
        "    embedder.name = embedder.name.replace(f'-{models.MINILM_TOKENS}', f'-{tokens}')\n"
        "    return embedder\n"
        "if int(sys.argv[1]):\n"
        "    models.MAX_TOKENS = models.MINILM_TOKENS = int(sys.argv[1])\n"
        "    models.minilm = minilm\n"
        "index = VaultIndex(load_config())\n"
        "index.refresh()\n"
        "print(embedding.index_now(index, Reporter()))\n"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(fill_tokens)], env={**os.environ, **env}, check=True)
    print(f"  embedded ({fill_tokens or 'all'} tokens per text) in {time.perf_counter() - start:.0f} s", done.stdout)


def one(env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    done = subprocess.run([AMEM, "search", *args], env=env, capture_output=True, text=True, check=True)
    return (time.perf_counter() - start) * 1000, json.loads(done.stdout)


def through_keeper(work: Path, vault: Path, model: str, runs: int) -> None:
    env = environment(work, vault, model, False)
    keeper = subprocess.Popen([AMEM, "index", "--watch"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert keeper.stdout is not None
        keeper.stdout.readline()
        for _ in range(3):  # the keeper loads the model and the vectors on its first semantic request
            for query in QUERIES:
                one(env, "--semantic", query)
                one(env, query)
        keyword, fused, status = [], [], set()
        for _ in range(runs):
            for query in QUERIES:
                keyword.append(one(env, query)[0])
                elapsed, result = one(env, "--semantic", query)
                fused.append(elapsed)
                status.add((result["semantic"], result.get("semanticCoverage")))
    finally:
        keeper.terminate()
        keeper.wait(timeout=60)
    k, f = statistics.median(keyword), statistics.median(fused)
    print(f"  keeper, whole `amem search` ({runs} rounds × {len(QUERIES)} queries): keyword {k:.1f} ms,")
    print(f"    fused {f:.1f} ms ({f / k:.2f}×); semantic status {sorted(status)}")


async def _calls(
    envs: tuple[dict[str, str], dict[str, str]],
    calls: int,
    into: tuple[list[tuple[str, float]], list[tuple[str, float]]],
    weights: dict[str, Any],
) -> None:
    """Both servers (keyword, fused) started side by side, warmed, then called alternately: call i of the
    one, then call i of the other, so that both meet the same moments of the machine. The fused one starts
    and is called first, so that the vault's keeper (started by a server's first call) is its own and it
    ranks in its own process, as a server alone does; the keyword server finds the vault kept."""
    with open(os.devnull, "w") as devnull:
        await _alternate(envs, calls, into, weights, devnull)


async def _alternate(
    envs: tuple[dict[str, str], dict[str, str]],
    calls: int,
    into: tuple[list[tuple[str, float]], list[tuple[str, float]]],
    weights: dict[str, Any],
    devnull: Any,
) -> None:
    from contextlib import AsyncExitStack

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async with AsyncExitStack() as stack:
        sessions = []
        for env in envs[::-1]:
            params = StdioServerParameters(command=AMEM, args=["mcp"], env=env)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=devnull))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.insert(0, session)
        for session in sessions[::-1]:
            for _ in range(3):
                for query in QUERIES:
                    await session.call_tool("wiki_search", {"query": query})
        for query in QUERIES:  # the fusion each query gets (not timed)
            explained = await sessions[1].call_tool("wiki_search", {"query": query, "explain": True})
            fusion = (explained.structured_content or {}).get("fusion")
            weights[query] = fusion["weight"] if fusion else None
        for i in range(calls):
            query = QUERIES[i % len(QUERIES)]
            for session, times in zip(sessions[:: 1 if i % 2 else -1], into[:: 1 if i % 2 else -1], strict=True):
                start = time.perf_counter()
                result = await session.call_tool("wiki_search", {"query": query})
                times.append((query, (time.perf_counter() - start) * 1000))
                if result.is_error:
                    raise SystemExit(f"wiki_search failed: {result.content}")


def through_mcp(work: Path, vault: Path, model: str, calls: int) -> None:
    """Medians of every call and of each query's; a query whose fusion weight is 0 ranks no vectors."""
    import anyio

    keyword: list[tuple[str, float]] = []
    fused: list[tuple[str, float]] = []
    weights: dict[str, Any] = {}
    envs = (environment(work, vault, model, False), environment(work, vault, model, True))
    anyio.run(_calls, envs, calls, (keyword, fused), weights)
    k, f = statistics.median(ms for _, ms in keyword), statistics.median(ms for _, ms in fused)
    print(f"  MCP wiki_search ({len(keyword)} calls each): keyword {k:.1f} ms, fused {f:.1f} ms ({f / k:.2f}×)")
    for query in QUERIES:
        qk = statistics.median(ms for q, ms in keyword if q == query)
        qf = statistics.median(ms for q, ms in fused if q == query)
        print(f"    {query!r} (fusion weight {weights.get(query)}): {qk:.1f} / {qf:.1f} ms ({qf / qk:.2f}×)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--model", default="static")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--work", type=Path, default=Path("/tmp/amem-bench-fused"))
    parser.add_argument("--fill-tokens", type=int, default=16)
    parser.add_argument("--queries", nargs="+", help="these queries instead of the five (each call one of them)")
    parser.add_argument("--mcp-only", action="store_true", help="the MCP servers only, not the keeper")
    args = parser.parse_args()
    if args.queries:
        QUERIES[:] = args.queries
    args.work.mkdir(parents=True, exist_ok=True)
    vault = args.work / "vault"
    if not vault.is_dir():
        shutil.copytree(args.vault, vault)
    print(f"{args.model}, {sum(1 for _ in vault.rglob('*.md'))} notes; load average {os.getloadavg()}")
    prepare(args.work, vault, args.model, args.fill_tokens)
    if not args.mcp_only:
        through_keeper(args.work, vault, args.model, args.runs)
    through_mcp(args.work, vault, args.model, args.calls)
    print(f"  load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
