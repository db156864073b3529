"""Benchmark the ranking's cost on the worst-case vault, side by side with `rg -i -l` in one run.

    python tests/bench/bench_topk.py [--notes 10000 50000] [--corpus vue-docs-en vue-docs-zh] [--runs 10]
                                     [--query "auth token"] [--work DIR] [--genvault PATH]

Vaults of --notes notes come from the shared generator (`genvault.py DIR N`: a small vocabulary, so that
`auth token` matches nearly every note and every match must be scored); the real corpora are copied from
the shared corpora folder. For each vault, medians of --runs, interleaved so that both see the same
machine state:

- `amem search QUERY` (warm, whole process) beside `rg -i -l -e WORD …` over the same vault;
- the search right after 100 notes were rewritten beside a warm search of the same query;
- the ranking alone (`Ranker.rank` of the default limit and `total`, on an open index), CPU ms.

The load average is printed before and after: on a shared machine the ratios are the figures to read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import RG_OK, rg_command, timed  # noqa: E402

AMEM = str(Path(sys.executable).parent / "amem")
GENVAULT = Path("/work/shared/bench/genvault.py")
CORPORA = Path(os.environ.get("AMEM_CORPORA", "/work/shared/corpora"))


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def vault_of(name: str, work: Path, genvault: Path) -> Path:
    vault = work / f"vault-{name}"
    if (vault / ".complete").exists():
        return vault
    shutil.rmtree(vault, ignore_errors=True)
    if name.isdigit():
        subprocess.run([sys.executable, str(genvault), str(vault), name], check=True, stdout=subprocess.DEVNULL)
    else:
        shutil.copytree(CORPORA / name, vault)
    (vault / ".complete").touch()  # a dot-file, not a note
    return vault


def ranking_cpu_ms(vault: Path, env: dict[str, str], query: str, runs: int) -> float:
    """The ranking alone, in a child process (its own cache folder and vault), CPU ms per search."""
    code = (
        "import sys, time, statistics\n"
        "from amem.config import load_config\n"
        "from amem.index.index import VaultIndex\n"
        "from amem.search.rank import Filter, Ranker\n"
        "from amem.notes.tokenize import Query\n"
        "index = VaultIndex(load_config()); index.refresh(); conn = index.conn\n"
        "samples = []\n"
        f"for _ in range({runs}):\n"
        "    conn.execute('BEGIN'); start = time.process_time()\n"
        f"    ranker = Ranker(conn, Query({query!r}), Filter()); ranker.rank(20); ranker.total()\n"
        "    samples.append(time.process_time() - start); conn.execute('COMMIT')\n"
        "print(statistics.median(samples) * 1000)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def bench(name: str, args: argparse.Namespace) -> None:
    vault = vault_of(name, args.work, args.genvault)
    cache = args.work / f"cache-{name}"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    env.pop("AMEM_CONFIG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # installs keep their bytecode
    query, runs = args.query, args.runs
    start = time.perf_counter()
    timed([AMEM, "search", query], env)  # builds the index if there is none, or brings it up to date
    print(f"\n{name}: first search {time.perf_counter() - start:.1f} s ({load()})", flush=True)
    warm, grep = [], []
    for _ in range(runs):
        warm.append(timed([AMEM, "search", query], env))
        grep.append(timed(rg_command(query, vault), env, RG_OK))
    w, g = (statistics.median(x) * 1000 for x in (warm, grep))
    print(f"  warm `amem search {query}` {w:.1f} ms, `rg -i -l` {g:.1f} ms: {w / g:.2f}×", flush=True)
    notes = sorted(p for p in vault.rglob("*.md") if "archive" not in p.parts)[100:200]
    originals = {path: path.read_text(encoding="utf-8") for path in notes}
    before, after = [], []
    try:
        for i in range(runs):
            before.append(timed([AMEM, "search", query], env))
            for path, text in originals.items():
                path.write_text(f"{text}\nrewrite {i}\n", encoding="utf-8")
            after.append(timed([AMEM, "search", query], env))
    finally:
        for path, text in originals.items():
            path.write_text(text, encoding="utf-8")
    b, a = (statistics.median(x) * 1000 for x in (before, after))
    print(f"  after 100 rewrites {a:.1f} ms vs warm {b:.1f} ms: {a / b:.2f}×", flush=True)
    timed([AMEM, "search", query], env)
    print(f"  ranking alone {ranking_cpu_ms(vault, env, query, runs):.1f} ms CPU ({load()})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", nargs="*", default=["10000", "50000"])
    parser.add_argument("--corpus", nargs="*", default=["vue-docs-en", "vue-docs-zh"])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--query", default="auth token")
    parser.add_argument("--work", type=Path, default=Path("/tmp/amem-bench-topk"))
    parser.add_argument("--genvault", type=Path, default=GENVAULT)
    args = parser.parse_args()
    if shutil.which("rg") is None:
        raise SystemExit("ripgrep (rg) is needed: apt-get install -y ripgrep")
    args.work.mkdir(parents=True, exist_ok=True)
    for name in [*args.notes, *args.corpus]:
        bench(name, args)


if __name__ == "__main__":
    main()
