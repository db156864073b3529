"""Benchmark `amem search` as users run it, whole process, side by side with `rg -i -l` on the same vault.

    python tests/bench/bench_search.py [--notes 1000 10000 50000] [--runs 10] [--work DIR]

For each vault size: the cold index build (notes per second and peak RSS), warm searches and ripgrep
over the same words (medians of --runs, interleaved so that both see the same machine state), a search
right after one note changed and right after 100 notes were rewritten, the peak memory of a warm search,
and `read` / `write --append` beside `amem --version`. Vaults are generated once under --work and reused.
The console script beside this interpreter is timed, not a shell shim in front of it, with bytecode
caching on (PYTHONDONTWRITEBYTECODE is dropped from the environment), as in an installed amem.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import RG_OK, peak_rss_mib, rg_command, timed  # noqa: E402
from make_vault import VOCABULARY, make_vault  # noqa: E402

#: Topic words of several frequencies, Chinese, and a rare made-up word (rank 2000 of the vocabulary).
QUERIES = ["auth token", "session", "migration", "认证", VOCABULARY[2000]]
AMEM = str(Path(sys.executable).parent / "amem")


def bench(n: int, runs: int, work: Path) -> dict[str, float]:
    vault = work / f"vault-{n}"
    if not (vault / ".complete").exists():
        shutil.rmtree(vault, ignore_errors=True)
        print(f"generating {n} notes …", file=sys.stderr)
        make_vault(vault, n, seed=0)
        (vault / ".complete").touch()  # a dot-file, not a note
    cache = work / f"cache-{n}"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    env.pop("AMEM_CONFIG", None)
    # Users' installs keep compiled bytecode; without it every run would compile amem's sources again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    cold, cold_rss = [], []
    for _ in range(3 if n <= 10_000 else 1):
        shutil.rmtree(cache, ignore_errors=True)
        start = time.perf_counter()
        cold_rss.append(peak_rss_mib([AMEM, "search", "warm up"], env))
        cold.append(time.perf_counter() - start)
    cold_s = statistics.median(cold)
    print(
        f"\n{n} notes: cold build + first search {cold_s:.2f} s → {n / cold_s:,.0f} notes/s, "
        f"peak RSS {max(cold_rss):.0f} MiB",
        flush=True,
    )

    print(f"{'query':14} {'amem warm':>10} {'rg -i -l':>10} {'ratio':>6} {'1 changed':>10} {'ratio':>6}")
    changed_note = next(vault.rglob("note-000001.md"))
    original = changed_note.read_text(encoding="utf-8")
    totals: dict[str, list[float]] = {"amem": [], "rg": [], "changed": []}
    for query in QUERIES:
        warm, grep, changed = [], [], []
        timed([AMEM, "search", query], env)  # make sure the index is current
        for i in range(runs):
            warm.append(timed([AMEM, "search", query], env))
            grep.append(timed(rg_command(query, vault), env, RG_OK))
            changed_note.write_text(f"{original}\nedit {i} {query}\n", encoding="utf-8")
            changed.append(timed([AMEM, "search", query], env))
        changed_note.write_text(original, encoding="utf-8")
        w, g, c = (statistics.median(x) * 1000 for x in (warm, grep, changed))
        totals["amem"].append(w)
        totals["rg"].append(g)
        totals["changed"].append(c)
        print(f"{query:14} {w:8.1f}ms {g:8.1f}ms {w / g:5.2f}× {c:8.1f}ms {c / w:5.2f}×", flush=True)
    timed([AMEM, "search", "settle"], env)
    # 100 notes rewritten between two searches, beside a warm search of the same query.
    hundred = sorted(vault.rglob("note-0001*.md"))[:100]
    originals = {path: path.read_text(encoding="utf-8") for path in hundred}
    warm100, after100 = [], []
    for i in range(runs):
        warm100.append(timed([AMEM, "search", "auth token"], env))
        for path, text in originals.items():
            path.write_text(f"{text}\nrewrite {i}\n", encoding="utf-8")
        after100.append(timed([AMEM, "search", "auth token"], env))
    for path, text in originals.items():
        path.write_text(text, encoding="utf-8")
    w100, a100 = (statistics.median(x) * 1000 for x in (warm100, after100))
    print(f"after rewriting 100 notes: {a100:.1f} ms vs warm {w100:.1f} ms → {a100 / w100:.2f}×")
    timed([AMEM, "search", "settle"], env)
    rss = max(peak_rss_mib([AMEM, "search", query], env) for query in QUERIES)
    # read and write beside the interpreter's start-up with amem loaded (`amem --version`)
    target = next(vault.rglob("note-000002.md")).relative_to(vault).as_posix()
    version, read, write = [], [], []
    for i in range(runs):
        version.append(timed([AMEM, "--version"], env))
        read.append(timed([AMEM, "read", target], env))
        write.append(timed([AMEM, "write", "bench/scratch", f"line {i}"], env))
    v, r, wr = (statistics.median(x) * 1000 for x in (version, read, write))
    print(f"--version {v:.1f} ms, read {r:.1f} ms ({r / v:.2f}×), write {wr:.1f} ms ({wr / v:.2f}×)")
    scratch = vault / "bench" / "scratch.md"
    scratch.unlink(missing_ok=True)
    w, g, c = (statistics.median(totals[k]) for k in ("amem", "rg", "changed"))
    print(f"{'median':14} {w:8.1f}ms {g:8.1f}ms {w / g:5.2f}× {c:8.1f}ms {c / w:5.2f}×")
    print(f"peak RSS of a warm search: {rss:.1f} MiB")
    python_alone = statistics.median(timed([sys.executable, "-c", "pass"], env) for _ in range(runs)) * 1000
    print(f"(for scale: `python -c pass` {python_alone:.1f} ms)")
    return {"cold_notes_per_s": n / cold_s, "warm_ms": w, "rg_ms": g, "changed_ms": c, "rss_mib": rss}


def build_only(n: int, work: Path) -> None:
    """Cold build rate and peak RSS alone (for the largest vaults, where warm runs take too long)."""
    vault = work / f"vault-{n}"
    if not (vault / ".complete").exists():
        shutil.rmtree(vault, ignore_errors=True)
        make_vault(vault, n, seed=0)
        (vault / ".complete").touch()
    cache = work / f"cache-{n}"
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    rss = peak_rss_mib([AMEM, "search", "warm up"], env)
    took = time.perf_counter() - start
    print(f"\n{n} notes: cold build {took:.1f} s → {n / took:,.0f} notes/s, peak RSS {rss:.0f} MiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, nargs="*", default=[1_000, 10_000, 50_000])
    parser.add_argument("--build-only", type=int, nargs="*", default=[], metavar="N", help="cold builds only")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--work", type=Path, default=Path("/tmp/amem-bench-search"))
    args = parser.parse_args()
    if shutil.which("rg") is None:
        raise SystemExit("ripgrep (rg) is needed: apt-get install -y ripgrep")
    args.work.mkdir(parents=True, exist_ok=True)
    for n in args.notes:
        bench(n, args.runs, args.work)
    for n in args.build_only:
        build_only(n, args.work)


if __name__ == "__main__":
    main()
