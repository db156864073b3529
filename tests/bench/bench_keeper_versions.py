"""`amem search QUERY` answered by a keeper (`amem index --watch`), this checkout's beside another
checkout's (--other: a folder holding that version's `amem` package, put first on PYTHONPATH), with
`rg -i -l` and `amem --version` in the same rounds, over vaults that are indexed already.

    python tests/bench/bench_keeper_versions.py --other /tmp/main-src/cli --vault V --cache C [--vault …]
                                                [--query "auth token"] [--runs 10] [--blocks 2]

For each vault the two versions take turns in --blocks blocks (the keeper of one stopped before the other's
starts: one keeper per vault), each block --runs / --blocks searches, each search followed by `rg` and
`amem --version`. Medians of --runs per version; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import RG_OK, rg_command, timed  # noqa: E402

AMEM = str(Path(sys.executable).parent / "amem")


def keeper(env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [AMEM, "index", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline(), "the keeper did not start"
    return proc


def bench(vault: Path, cache: Path, other: Path, query: str, runs: int, blocks: int) -> None:
    base = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    base.pop("AMEM_CONFIG", None)
    envs = {"this": dict(base), "other": {**base, "PYTHONPATH": str(other)}}
    envs["this"].pop("PYTHONPATH", None)
    search = [AMEM, "search", *query.split()]
    times: dict[str, list[float]] = {"this": [], "other": [], "rg": [], "--version": []}
    for _ in range(blocks):
        for name, env in envs.items():
            proc = keeper(env)
            try:
                for _ in range(2):
                    timed(search, env)  # warm: the keeper's first answers load what it answers with
                for _ in range(runs // blocks):
                    times[name].append(1000 * timed(search, env))
                    times["rg"].append(1000 * timed(rg_command(query, vault), env, RG_OK))
                    times["--version"].append(1000 * timed([AMEM, "--version"], envs["this"]))
            finally:
                proc.terminate()
                proc.wait(timeout=60)
    rg, version = statistics.median(times["rg"]), statistics.median(times["--version"])
    print(f"\n{vault.name}: `amem search {query}` with a keeper, medians of {runs}; {load()}")
    for name, label in (("other", f"other ({other})"), ("this", "this checkout")):
        t = statistics.median(times[name])
        print(f"  {label:40} {t:7.1f} ms  {t / rg:5.2f}× rg  {t - version:+7.1f} ms over --version")
    print(f"  {'rg -i -l':40} {rg:7.1f} ms")
    print(f"  {'amem --version':40} {version:7.1f} ms")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, required=True)
    parser.add_argument("--vault", type=Path, action="append", required=True)
    parser.add_argument("--cache", type=Path, action="append", required=True)
    parser.add_argument("--query", default="auth token")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--blocks", type=int, default=2)
    args = parser.parse_args()
    print(load())
    for vault, cache in zip(args.vault, args.cache, strict=True):
        bench(vault, cache, args.other, args.query, args.runs, args.blocks)


if __name__ == "__main__":
    main()
