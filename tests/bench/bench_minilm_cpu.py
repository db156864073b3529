"""CPU per chunk of `semantic.model: minilm`, one configuration per process, the configurations alternated.

    python tests/bench/bench_minilm_cpu.py VAULT [--notes 40] [--runs 10] [--only NAME …] [--against DIR]

The same chunks (amem's `semantic.chunks` of every len/notes-th note of VAULT, a genvault vault) are embedded
one text at a time, as amem embeds them, by amem's own minilm loader; a configuration changes the tokens a
text is cut to, onnxruntime's intra-op threads and session options, or splits the chunks between two
processes of one thread each (parallel across texts instead of within one). Per configuration: the median
over runs of CPU (user + system, every thread) per chunk and of wall time per chunk, and the largest peak
RSS. A configuration with `windows` cuts no text but embeds each text longer than its token count in
windows of it (tests/bench/relevance.py's `@128w`): CPU per original chunk. `--against DIR` runs each
configuration a second time with the amem of another checkout (`DIR/cli` first on the path, e.g. `git
worktree add /tmp/main main`), in the same alternation: old code against new, side by side. Note the load
average beside the figures: the machine's other work slows the wall time more than the CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

CHILD = r"""
import glob, json, os, resource, sys, time
os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # as amem.semantic.models does, for the import below
setting, vault, notes, part, parts = json.loads(sys.argv[1])
from amem.semantic import models, semantic
if setting.get("threads"):
    models.MAX_THREADS = setting["threads"]
if setting.get("options"):  # amem's session options, with the configuration's changes
    import onnxruntime as ort
    real = ort.InferenceSession
    def changed(path, sess_options, providers, **more):
        change = setting["options"]
        sess_options.enable_cpu_mem_arena = change.get("arena", False)
        if change.get("level"):
            sess_options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, change["level"])
        for key, value in change.get("config", {}).items():
            sess_options.add_session_config_entry(key, value)
        if change.get("fused"):  # every fusion onnxruntime makes
            more.pop("disabled_optimizers", None)
        return real(path, sess_options=sess_options, providers=providers, **more)
    ort.InferenceSession = changed
embedder = semantic.load_embedder("minilm")
tokens = setting.get("tokens", models.MINILM_TOKENS)
embedder.tokenizer.enable_truncation(tokens)
files = sorted(glob.glob(os.path.join(vault, "**", "*.md"), recursive=True))
texts = []
for path in files[:: max(1, len(files) // notes)][:notes]:
    with open(path, encoding="utf-8") as handle:
        texts.extend(semantic.chunks(os.path.basename(path), semantic._body(handle.read())))
chunks = len(texts)
texts = texts[part::parts]
if setting.get("windows"):
    sys.path.insert(0, os.path.join(os.getcwd(), "tests", "bench"))
    from relevance import windowed
    texts = [w for text in texts for w in windowed(embedder.tokenizer, tokens, lambda t, b: [t])(text, "")]
embedder.embed(texts[:2])  # warm
before = resource.getrusage(resource.RUSAGE_SELF)
start = time.perf_counter()
embedder.embed(texts)
wall = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print(json.dumps({"chunks": chunks, "texts": len(texts), "cpu_s": cpu, "wall_s": wall,
                  "rss_mib": after.ru_maxrss / 1024}))
"""

CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "amem's own": {},
    "128 tokens, 2 threads, every fusion": {"tokens": 128, "threads": 2, "options": {"fused": True}},
    "256 tokens, 2 threads (amem before)": {"tokens": 256, "threads": 2},
    "256 tokens, 1 thread": {"tokens": 256, "threads": 1},
    "256 tokens, 2 processes x 1 thread": {"tokens": 256, "threads": 1, "parts": 2},
    "128 tokens, 2 threads": {"tokens": 128, "threads": 2},
    "128 tokens, 1 thread": {"tokens": 128, "threads": 1},
    "128 tokens, 2 processes x 1 thread": {"tokens": 128, "threads": 1, "parts": 2},
    "128-token windows, 2 threads": {"tokens": 128, "threads": 2, "windows": True},
    "128 tokens, 2 threads, ORT_ENABLE_EXTENDED": {
        "tokens": 128,
        "threads": 2,
        "options": {"level": "ORT_ENABLE_EXTENDED"},
    },
    "128 tokens, 2 threads, ORT_ENABLE_BASIC": {"tokens": 128, "threads": 2, "options": {"level": "ORT_ENABLE_BASIC"}},
    "128 tokens, 2 threads, spinning on": {
        "tokens": 128,
        "threads": 2,
        "options": {"config": {"session.intra_op.allow_spinning": "1"}},
    },
    "128 tokens, 2 threads, memory arena on": {"tokens": 128, "threads": 2, "options": {"arena": True}},
    "128 tokens, 2 threads, denormals as zero": {
        "tokens": 128,
        "threads": 2,
        "options": {"config": {"session.set_denormal_as_zero": "1"}},
    },
}


def run_once(setting: dict[str, Any], vault: Path, notes: int, code: Path | None = None) -> dict[str, float]:
    """One configuration: its processes started together, their CPU summed, the wall time the longest;
    with the amem of checkout `code` when given."""
    parts = setting.get("parts", 1)
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code / "cli"), *filter(None, [env.get("PYTHONPATH")])])
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps([setting, str(vault), notes, part, parts])],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for part in range(parts)
    ]
    outs = [json.loads(proc.communicate()[0].strip().splitlines()[-1]) for proc in procs]
    if any(proc.returncode for proc in procs):
        raise SystemExit(f"{setting}: a child failed")
    chunks = outs[0]["chunks"]
    return {
        "chunks": chunks,
        "cpu_ms": 1000 * sum(o["cpu_s"] for o in outs) / chunks,
        "wall_ms": 1000 * max(o["wall_s"] for o in outs) / chunks,
        "rss_mib": max(o["rss_mib"] for o in outs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--notes", type=int, default=40, help="notes sampled (about 3 chunks each)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", nargs="+", help="only the configurations whose name holds one of these")
    parser.add_argument("--skip", nargs="+", default=[], help="not the configurations whose name holds one of these")
    parser.add_argument("--against", type=Path, help="also run each configuration with the amem of this checkout")
    args = parser.parse_args()
    chosen: dict[str, tuple[dict[str, Any], Path | None]] = {}
    for name, setting in CONFIGURATIONS.items():
        if (not args.only or any(word in name for word in args.only)) and not any(word in name for word in args.skip):
            if args.against is not None:
                chosen[f"{name} ({args.against})"] = (setting, args.against)
            chosen[name] = (setting, None)
    got: dict[str, list[dict[str, float]]] = {name: [] for name in chosen}
    for run in range(args.runs):
        for name, (setting, code) in chosen.items():
            got[name].append(run_once(setting, args.vault, args.notes, code))
            print(json.dumps({"run": run + 1, "configuration": name, **got[name][-1]}), file=sys.stderr, flush=True)
    print(f"| configuration | CPU per chunk | wall per chunk | peak RSS |  ({args.runs} runs, medians)")
    print("|---|---|---|---|")
    for name, results in got.items():
        cpu = statistics.median(r["cpu_ms"] for r in results)
        wall = statistics.median(r["wall_ms"] for r in results)
        rss = max(r["rss_mib"] for r in results)
        print(f"| {name} | {cpu:.1f} ms | {wall:.1f} ms | {rss:.0f} MiB |  ({results[0]['chunks']:.0f} chunks)")


if __name__ == "__main__":
    main()
