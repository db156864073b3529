"""Benchmark the index keeper (`amem index --watch`): whole CLI commands with and without a keeper, side by
side with `rg -i -l` and `amem --version`, and the keeper's own costs.

    python tests/bench/bench_keeper.py [--notes 10000 50000] [--runs 11] [--work DIR] [--genvault SCRIPT]
                                       [--vault DIR …] [--search-only]

For each vault size (made by tests/bench/make_vault.py, or by the `genvault.py DIR N` script --genvault
names), or each vault --vault names (one already made; the keeper makes and removes its `.amem-sync/`
folder in it, and the rewrite test below rewrites a note and puts it back, so give a copy of a vault that
must stay untouched), indexed in a cache of its own under --work:

- with no keeper: `amem search auth token`, `rg -i -l -e auth -e token` over the same vault and `amem
  --version`, one of each per round (medians of --runs);
- with a keeper (`amem index --watch`): `search`, `read` and `list` (all notes, and `--limit 20`) answered
  by the keeper, the same answered in their own process (AMEM_NO_KEEPER=1: the keeper's cookie still
  spares the walk), `rg` and `amem --version`, one of each per round; --search-only times `search` alone
  (and `rg`, `--version`) and skips what follows;
- the keeper: the time from an outside in-place rewrite to the index having it (the keeper confirming a
  sync cookie; p50/p95 of 100), its CPU while idle for 10 s, and its resident memory.

Each phase's ratios are to the `rg` and `--version` of the same rounds. The load average is printed before
and after each phase: the machine may be shared.
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
from benchlib import RG_OK, percentile, rg_command, timed  # noqa: E402
from make_vault import make_vault  # noqa: E402

AMEM = str(Path(sys.executable).parent / "amem")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def made_vault(n: int, work: Path, genvault: Path | None) -> Path:
    vault = work / f"vault-{n}"
    if not (vault / ".complete").exists():
        shutil.rmtree(vault, ignore_errors=True)
        print(f"generating {n} notes …", file=sys.stderr)
        if genvault is None:
            make_vault(vault, n, seed=0)
        else:
            vault.mkdir(parents=True)
            subprocess.run([sys.executable, str(genvault), str(vault), str(n)], check=True)
        (vault / ".complete").touch()
    return vault


def row(label: str, t: float, g: float, v: float) -> None:
    print(f"{label:44} {t:7.1f} ms   {t / g:5.2f}× rg   {t / v:5.2f}× --version")


def rounds(
    commands: dict[str, tuple[list[str], dict[str, str]]], runs: int, ok: dict[str, tuple[int, ...]]
) -> dict[str, float]:
    """Medians in ms of each command, one of each per round."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (command, env) in commands.items():
            times[name].append(1000 * timed(command, env, ok.get(name, (0,))))
    return {name: statistics.median(values) for name, values in times.items()}


def bench(vault: Path, runs: int, work: Path, search_only: bool) -> None:
    notes = sorted(vault.rglob("*.md"))
    n = len(notes)
    env = {**os.environ, "XDG_CACHE_HOME": str(work / f"cache-{vault.name}"), "AMEM_VAULT": str(vault)}
    env.pop("AMEM_CONFIG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    note = notes[n // 2]
    note_id = str(note.relative_to(vault))
    search = [AMEM, "search", "auth", "token"]
    rg = rg_command("auth token", vault)
    version = [AMEM, "--version"]
    ok = {"rg": RG_OK}
    timed([AMEM, "index"], env)
    timed(search, env)  # warm
    print(f"\n{vault} ({n} notes), medians of {runs}; load average before: {load()}")
    alone = rounds({"search": (search, env), "rg": (rg, env), "version": (version, env)}, runs, ok)
    g, v = alone["rg"], alone["version"]
    row("amem search auth token, no keeper", alone["search"], g, v)
    row("rg -i -l -e auth -e token", g, g, v)
    row("amem --version", v, g, v)
    print(f"(load average after: {load()})")

    keeper = subprocess.Popen(
        [AMEM, "index", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    try:
        assert keeper.stdout is not None and keeper.stdout.readline(), "the keeper did not start"
        own = {**env, "AMEM_NO_KEEPER": "1"}
        commands = {"search auth token": search}
        if not search_only:
            commands.update(
                {
                    "read NOTE": [AMEM, "read", note_id],
                    "list": [AMEM, "list"],
                    "list --limit 20": [AMEM, "list", "--limit", "20"],
                }
            )
        for command in commands.values():  # warm: the keeper's first answers load what it answers with
            timed(command, env)
        timing: dict[str, tuple[list[str], dict[str, str]]] = {}
        for name, command in commands.items():
            timing[f"amem {name}, keeper answers"] = (command, env)
            timing[f"amem {name}, own process (cookie)"] = (command, own)
        timing["rg"], timing["version"] = (rg, env), (version, env)
        print(f"with a keeper; load average before: {load()}")
        kept = rounds(timing, runs, ok)
        g, v = kept.pop("rg"), kept.pop("version")
        for name, t in kept.items():
            row(name, t, g, v)
        row("rg -i -l -e auth -e token", g, g, v)
        row("amem --version", v, g, v)
        print(f"(load average after: {load()})")
        if not search_only:
            latency_and_idle(keeper, env, note)
    finally:
        keeper.terminate()
        keeper.wait(timeout=30)


def latency_and_idle(keeper: subprocess.Popen[str], env: dict[str, str], note: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "cli"))
    os.environ.update(XDG_CACHE_HOME=env["XDG_CACHE_HOME"], AMEM_VAULT=env["AMEM_VAULT"])
    from amem.config import load_config
    from amem.index.index import VaultIndex
    from amem.keeperproto.client import synced

    config = load_config()
    original = note.read_bytes()
    latencies = []
    try:
        for i in range(100):
            with open(note, "r+b") as handle:
                handle.write(f"edit{i:04d} ".encode())
            start = time.perf_counter()
            index = VaultIndex(config)
            try:
                if not synced(index, timeout=5):
                    raise SystemExit("the keeper did not confirm a cookie")
            finally:
                index.close()
            latencies.append((time.perf_counter() - start) * 1000)
            time.sleep(0.02)
    finally:
        note.write_bytes(original)
    print(
        f"outside write → in the index        p50 {percentile(latencies, 0.5):5.1f} ms, "
        f"p95 {percentile(latencies, 0.95):5.1f} ms"
    )
    time.sleep(2)
    before = cpu_seconds(keeper.pid)
    time.sleep(10)
    idle = (cpu_seconds(keeper.pid) - before) / 10 * 100
    print(f"keeper idle CPU over 10 s           {idle:5.2f} % of a core; RSS {rss_mib(keeper.pid):.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--work", type=Path, default=Path("/tmp/amem-bench-mcp"))
    parser.add_argument("--genvault", type=Path, help="a `genvault.py DIR N` script to make the vaults with")
    parser.add_argument("--vault", type=Path, nargs="+", help="vaults already made (instead of --notes)")
    parser.add_argument("--search-only", action="store_true", help="time only search, rg and --version")
    args = parser.parse_args()
    if shutil.which("rg") is None:
        raise SystemExit("ripgrep (rg) is needed")
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"load average {load()} on {os.cpu_count()} cores")
    vaults = args.vault or [made_vault(n, args.work, args.genvault) for n in args.notes]
    for vault in vaults:
        bench(vault.resolve(), args.runs, args.work, args.search_only)


if __name__ == "__main__":
    main()
