"""Semantic search's costs, side by side with keyword-only search on the same synthetic vault.

    python tests/bench/bench_semantic.py [--notes 10000] [--runs 10] [--work DIR] [--model wordllama]

For each vault size:
- embedding: the vectors of every note built from nothing (`semantic.sync` on an up-to-date keyword index),
  notes per second, and one changed note brought up to date again;
- model load per process: `import` + load of the model in a fresh interpreter, beside `python -c pass`;
- in one process with the model loaded (as `amem mcp` or an index keeper would hold it): warm `search()`
  fused (vectors streamed from the index, and kept in memory as `semantic.KEEP_VECTORS` lets a long-lived
  process do) against keyword-only, interleaved, medians and ratios;
- whole process: warm `amem search --semantic` against `amem search`, interleaved, medians and ratio;
- peak RSS of a warm whole-process search, fused and keyword-only;
- with an index keeper (`amem index --watch`) ranking for the searches: `amem search --semantic` without a
  keeper, then with one (the model loaded in the keeper, not in the search), beside `amem search` and
  `amem --version` in the same loops, medians and ratios; the answers compared for equality.
Vaults are generated once under --work and reused; every run stops by itself.

    python tests/bench/bench_semantic.py --costs DIR [DIR …] [--sample 60] [--runs 3] [--folder FOLDER]

The models' cost table (docs/performance.md#search---semantic): for each model configuration, in a fresh
process each, side by side and alternating, medians of --runs: load time, the chunks of --sample notes of
each DIR (a genvault vault, a corpus) embedded (chunks/s, notes/s), query embedding ms, and the process's
peak RSS. Configurations: static; minilm (int8, onnxruntime) with 1 and 2 threads; minilm with batches of
8 padded texts (what batching would gain; amem embeds one text at a time, see amem.semantic.models); minilm
with texts cut to 128 tokens instead of 256 (what a shorter truncation would save); and, with --folder, a
model folder of the user's (model.onnx and tokenizer.json).
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
from benchlib import peak_rss_mib, timed  # noqa: E402
from make_vault import VOCABULARY, make_vault  # noqa: E402

AMEM = str(Path(sys.executable).parent / "amem")
QUERIES = ["auth token", "how long do sessions stay valid", "migration", "认证", VOCABULARY[2000]]


def in_process(vault: Path, cache: Path, runs: int, model: str) -> dict[str, float]:
    """Embedding speed and warm query times inside this process (the model stays loaded)."""
    os.environ["XDG_CACHE_HOME"] = str(cache)
    from amem.config import load_config
    from amem.index.index import VaultIndex
    from amem.report import Reporter
    from amem.search.query import search
    from amem.semantic import semantic

    config = load_config(env={}, vault=vault, cwd=vault)
    index = VaultIndex(config)
    index.refresh()
    n = index.conn.execute("SELECT count(*) FROM notes").fetchone()[0]
    embedder = semantic.load_embedder(model)
    index.conn.execute("DROP TABLE IF EXISTS semantic_vectors")
    index.conn.execute("DROP TABLE IF EXISTS semantic_meta")
    start = time.perf_counter()
    embedded = semantic.sync(
        index.conn, embedder, semantic.index_stamps(index.conn), semantic.note_reader(config, index.conn), Reporter()
    )
    build_s = time.perf_counter() - start
    chunks = sum(len(blob) for (blob,) in index.conn.execute("SELECT vectors FROM semantic_vectors")) // (
        2 * embedder.embed(["x"]).shape[1]
    )
    index.close()
    print(f"  embedded {embedded} notes ({chunks} chunks) in {build_s:.2f} s → {embedded / build_s:,.0f} notes/s")

    note = next(vault.rglob("note-000001.md"))
    original = note.read_text(encoding="utf-8")
    note.write_text(original + "\nOne more line about sessions.\n", encoding="utf-8")
    index = VaultIndex(config)
    index.refresh()
    start = time.perf_counter()
    again = semantic.sync(
        index.conn, embedder, semantic.index_stamps(index.conn), semantic.note_reader(config, index.conn), Reporter()
    )
    one_s = time.perf_counter() - start
    index.close()
    note.write_text(original, encoding="utf-8")
    print(f"  one changed note: {again} embedded, sync {one_s * 1000:.0f} ms")

    search(config, "settle", semantic=True)
    keyword, fused, kept = [], [], []
    for _ in range(runs):
        for query in QUERIES:
            t = time.perf_counter()
            search(config, query)
            keyword.append(time.perf_counter() - t)
            semantic.KEEP_VECTORS = False
            t = time.perf_counter()
            search(config, query, semantic=True)
            fused.append(time.perf_counter() - t)
            semantic.KEEP_VECTORS = True
            search(config, "settle", semantic=True)  # the vectors in memory, as a long-lived process has them
            t = time.perf_counter()
            search(config, query, semantic=True)
            kept.append(time.perf_counter() - t)
            semantic.KEEP_VECTORS = False
    k, f, m = (statistics.median(x) * 1000 for x in (keyword, fused, kept))
    print(f"  warm in one process: keyword {k:.1f} ms, fused {f:.1f} ms ({f / k:.2f}×),", end=" ")
    print(f"fused with vectors kept in memory {m:.1f} ms ({m / k:.2f}×)")
    return {"notes": n, "embed_notes_per_s": embedded / build_s, "warm_keyword_ms": k, "warm_fused_ms": f}


def model_load(runs: int, model: str) -> None:
    code = f"from amem.index import semantic; semantic.load_embedder({model!r})"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    load, bare = [], []
    for _ in range(runs):
        load.append(timed([sys.executable, "-c", code], env))
        bare.append(timed([sys.executable, "-c", "pass"], env))
    m, b = statistics.median(load) * 1000, statistics.median(bare) * 1000
    print(f"model import + load in a fresh process: {m:.0f} ms (python -c pass {b:.0f} ms) → {m - b:.0f} ms extra")


def whole_process(vault: Path, cache: Path, runs: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(XDG_CACHE_HOME=str(cache), AMEM_VAULT=str(vault))
    env.pop("AMEM_CONFIG", None)
    timed([AMEM, "search", "--semantic", "settle"], env)
    keyword, fused = [], []
    for _ in range(runs):
        for query in QUERIES[:2]:
            keyword.append(timed([AMEM, "search", query], env))
            fused.append(timed([AMEM, "search", "--semantic", query], env))
    k, f = statistics.median(keyword) * 1000, statistics.median(fused) * 1000
    print(f"  whole process, warm index: amem search {k:.0f} ms, --semantic {f:.0f} ms → {f / k:.2f}×")
    rk = max(peak_rss_mib([AMEM, "search", q], env) for q in QUERIES[:2])
    rf = max(peak_rss_mib([AMEM, "search", "--semantic", q], env) for q in QUERIES[:2])
    print(f"  peak RSS of a warm search: keyword {rk:.1f} MiB, fused {rf:.1f} MiB")


def with_keeper(vault: Path, cache: Path, runs: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(XDG_CACHE_HOME=str(cache), AMEM_VAULT=str(vault))
    env.pop("AMEM_CONFIG", None)

    def answers() -> list[bytes]:
        return [
            subprocess.run([AMEM, "search", "--semantic", q], capture_output=True, env=env, check=True).stdout
            for q in QUERIES
        ]

    def block() -> tuple[float, float, float]:
        fused, keyword, version = [], [], []
        for _ in range(runs):
            for query in QUERIES[:2]:
                fused.append(timed([AMEM, "search", "--semantic", query], env))
                keyword.append(timed([AMEM, "search", query], env))
                version.append(timed([AMEM, "--version"], env))
        return tuple(statistics.median(x) * 1000 for x in (fused, keyword, version))  # type: ignore[return-value]

    timed([AMEM, "search", "--semantic", "settle"], env)
    alone = answers()
    f0, k0, v0 = block()
    keeper = subprocess.Popen(
        [AMEM, "index", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    try:
        assert keeper.stdout is not None
        if not keeper.stdout.readline():
            raise SystemExit("the keeper did not start")
        timed([AMEM, "search", "--semantic", "settle"], env)  # the keeper loads the model
        kept = answers()
        f1, k1, v1 = block()
    finally:
        keeper.terminate()
        keeper.wait(timeout=30)
    print(f"  no keeper:   amem search --semantic {f0:.0f} ms, amem search {k0:.0f} ms, amem --version {v0:.0f} ms")
    print(f"  with keeper: amem search --semantic {f1:.0f} ms, amem search {k1:.0f} ms, amem --version {v1:.0f} ms")
    print(f"  --semantic through the keeper: {f0 / f1:.2f}× faster; {f1 / k1:.2f}× a keyword search with the keeper")
    print(f"  same answers with and without the keeper: {alone == kept}")


_COST_CHILD = r"""
import glob, json, os, resource, statistics, sys, time
setting, folders, sample = json.loads(sys.argv[1])
from amem.semantic import models, semantic
if setting.get("threads"):
    models.MAX_THREADS = setting["threads"]
if setting.get("max_tokens"):
    models.MAX_TOKENS = models.MINILM_TOKENS = setting["max_tokens"]
start = time.perf_counter()
embedder = semantic.load_embedder(setting["model"])
load_s = time.perf_counter() - start
texts, notes = [], 0
for folder in folders:
    files = sorted(glob.glob(os.path.join(folder, "**", "*.md"), recursive=True))
    step = max(1, len(files) // sample)
    for path in files[::step][:sample]:
        with open(path, encoding="utf-8") as handle:
            body = semantic._body(handle.read())
        texts.extend(semantic.chunks(os.path.basename(path), body))
        notes += 1
start = time.perf_counter()
cpu = resource.getrusage(resource.RUSAGE_SELF)
batch = setting.get("batch", 1)
if batch == 1:
    embedder.embed(texts)
else:  # padded batches straight through the session: what batching would give
    import numpy as np
    tok = embedder.tokenizer
    tok.enable_padding()
    for at in range(0, len(texts), batch):
        enc = tok.encode_batch(texts[at : at + batch])
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        embedder.backend.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": ids * 0})
embed_s = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
cpu_s = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
queries = []
for q in ("how long do sessions stay valid", "deploy the server", "认证令牌", "retry with backoff"):
    t = time.perf_counter()
    embedder.embed([q])
    queries.append(time.perf_counter() - t)
print(json.dumps({"load_s": load_s, "chunks": len(texts), "notes": notes, "embed_s": embed_s, "cpu_s": cpu_s,
                  "query_ms": statistics.median(queries) * 1000,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def costs(folders: list[Path], sample: int, runs: int, folder: Path | None, only: list[str] | None = None) -> None:
    import json

    settings: dict[str, dict[str, object]] = {
        "static": {"model": "static"},
        "minilm, 2 threads": {"model": "minilm", "threads": 2, "max_tokens": 256},
        "minilm, 1 thread": {"model": "minilm", "threads": 1, "max_tokens": 256},
        "minilm, 2 threads, batches of 8": {"model": "minilm", "threads": 2, "batch": 8, "max_tokens": 256},
        "minilm, 2 threads, cut to 128 tokens": {"model": "minilm", "threads": 2, "max_tokens": 128},
    }
    if folder is not None:
        settings["model folder"] = {"model": str(folder)}
    if only:
        settings = {name: setting for name, setting in settings.items() if any(word in name for word in only)}
    got: dict[str, list[dict[str, float]]] = {name: [] for name in settings}
    for _ in range(runs):
        for name, setting in settings.items():
            arg = json.dumps([setting, [str(f) for f in folders], sample])
            env = {**os.environ, **setting.get("env", {})}  # type: ignore[dict-item]
            out = subprocess.run([sys.executable, "-c", _COST_CHILD, arg], capture_output=True, text=True, env=env)
            if out.returncode:
                raise SystemExit(f"{name}: {out.stderr}")
            got[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"| model | load s | peak RSS MiB | chunks/s | notes/s | CPU ms/chunk | query ms |  ({runs} runs, medians)")
    for name, results in got.items():
        med = {key: statistics.median(r[key] for r in results) for key in results[0]}
        print(
            f"| {name} | {med['load_s']:.2f} | {med['rss_mib']:.0f} | {med['chunks'] / med['embed_s']:.1f} |"
            f" {med['notes'] / med['embed_s']:.2f} | {med['cpu_s'] * 1000 / med['chunks']:.0f} |"
            f" {med['query_ms']:.1f} |"
            f"  ({med['chunks']:.0f} chunks)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--costs", type=Path, nargs="+", help="the model cost table over these vaults")
    parser.add_argument("--sample", type=int, default=60, help="--costs: notes per vault")
    parser.add_argument("--folder", type=Path, help="--costs: a model folder (model.onnx, tokenizer.json)")
    parser.add_argument("--only", nargs="+", help="--costs: only the configurations whose name holds one of these")
    parser.add_argument("--notes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--work", type=Path, default=Path("/tmp/amem-bench-semantic"))
    parser.add_argument("--model", default="wordllama")
    parser.add_argument("--skip-process", action="store_true", help="only the in-process figures")
    parser.add_argument("--keeper-only", action="store_true", help="only the figures with and without a keeper")
    args = parser.parse_args()
    if args.costs:
        costs(args.costs, args.sample, args.runs, args.folder, args.only)
        return
    if not Path(AMEM).exists():
        raise SystemExit(f"{AMEM} does not exist: pip install '.[semantic]' first")
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.keeper_only:
        model_load(args.runs, args.model)
    for n in args.notes:
        vault = args.work / f"vault-{n}"
        if not (vault / ".complete").exists():
            shutil.rmtree(vault, ignore_errors=True)
            print(f"generating {n} notes …", file=sys.stderr)
            make_vault(vault, n, seed=0)
            (vault / ".complete").touch()
        cache = args.work / f"cache-{n}"
        print(f"\n{n} notes ({args.model}):")
        if args.keeper_only:
            with_keeper(vault, cache, args.runs)
            continue
        in_process(vault, cache, args.runs, args.model)
        if not args.skip_process:
            whole_process(vault, cache, args.runs)
            with_keeper(vault, cache, args.runs)


if __name__ == "__main__":
    main()
