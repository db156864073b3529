"""Characters an agent pays for a `wiki_search` answer: ten hits over a real vault, through the official MCP
client.

    python tests/bench/bench_answer_size.py [--corpus vue-docs-en] [--limit 10] [QUERY …]

The corpus (under the shared corpora folder, or AMEM_CORPORA) is copied into a temporary vault, `amem mcp`
(the one on PATH beside this interpreter, or `python -m amem` when PYTHONPATH points elsewhere) is spawned on
it, and each query is asked with maxResults=--limit; the table gives the characters of the structured answer
as compact JSON, and of the largest hit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

CORPORA = Path(os.environ.get("AMEM_CORPORA", "/work/shared/corpora"))
QUERIES = ["reactive state", "component props", "event handling", "template refs", "computed properties"]


def compact(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


async def measure(vault: Path, home: Path, queries: list[str], limit: int) -> list[tuple[str, int, int, int]]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "AMEM_VAULT": str(vault)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[name] = str(home / name)
    params = StdioServerParameters(command=sys.executable, args=["-m", "amem", "mcp"], env=env, cwd=str(vault))
    rows = []
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for query in queries:
                result = await session.call_tool("wiki_search", {"query": query, "maxResults": limit})
                data = result.structured_content or {}
                hits = data.get("hits", [])
                rows.append((query, len(hits), compact(data), max((compact(hit) for hit in hits), default=0)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queries", nargs="*", default=QUERIES)
    parser.add_argument("--corpus", default="vue-docs-en")
    parser.add_argument("--limit", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        vault = Path(scratch) / "vault"
        shutil.copytree(CORPORA / options.corpus, vault)
        rows = anyio.run(measure, vault, Path(scratch), options.queries, options.limit)
    print(f"{'query':24} {'hits':>4} {'answer':>7} {'largest hit':>11}")
    for query, hits, chars, largest in rows:
        print(f"{query:24} {hits:>4} {chars:>7} {largest:>11}")


if __name__ == "__main__":
    main()
