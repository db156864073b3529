"""What `amem read`, `amem write --append` and an idle `amem sync` cost on top of start-up: whole processes
of the installed console script, interleaved round by round with `amem --version` (start-up alone), wall
and CPU (user + system of the process and its children, git's included), medians and the ratios to
`--version` taken pair by pair in the same round.

    python tests/bench/bench_startup.py --vault DIR [--cache CACHE] [--runs 15] [--before AMEM]

- read: `amem read NOTE` of DIR itself, which is only read (its index goes in a cache folder of this run;
  --cache copies a cache already built for DIR, such as /tmp/scale/cache-10000, instead of building one);
- write: `echo x | amem write bench/startup-log --append` into a copy of DIR, with its own index;
- sync: `amem sync` with nothing to do, in a clone (of a bare repository in the work folder) holding DIR's
  notes in one commit.

--before AMEM also times that amem executable (the code before a change) in the same rounds, on the same
vaults. The load average is printed before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AMEM = str(Path(sys.executable).parent / "amem")


def timed(cmd: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; a failed run stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{cmd} failed: {done.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--cache", type=Path, help="an XDG cache folder already holding DIR's index")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", metavar="AMEM", help="also time this amem executable")
    parser.add_argument("--no-sync", action="store_true", help="leave out the idle sync (and its clone)")
    args = parser.parse_args()

    vault = args.vault.resolve()
    work = Path(tempfile.mkdtemp(prefix="amem-bench-startup-", dir="/tmp"))
    # Bytecode caching on, as in an installed amem (some environments set PYTHONDONTWRITEBYTECODE).
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base.update(HOME=str(work), AMEM_TZ="+00:00")
    for role in ("AUTHOR", "COMMITTER"):
        base[f"GIT_{role}_NAME"] = "bench"
        base[f"GIT_{role}_EMAIL"] = "bench@localhost"
    try:
        read_env = {**base, "AMEM_VAULT": str(vault), "XDG_CACHE_HOME": str(work / "cache-read")}
        if args.cache:
            shutil.copytree(args.cache, work / "cache-read", symlinks=True)
        notes = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md") if "archive" not in p.parts)
        note = notes[len(notes) // 2]

        written = work / "write-vault"
        shutil.copytree(vault, written, symlinks=True)
        write_env = {**base, "AMEM_VAULT": str(written), "XDG_CACHE_HOME": str(work / "cache-write")}

        sync_env = {**base, "AMEM_VAULT": str(work / "sync-vault"), "XDG_CACHE_HOME": str(work / "cache-sync")}
        if not args.no_sync:
            git(work, "init", "-q", "--bare", "remote.git")
            git(work, "clone", "-q", "remote.git", "sync-vault")
            shutil.copytree(vault, work / "sync-vault", dirs_exist_ok=True, symlinks=True)
            git(work / "sync-vault", "add", "-A")
            git(work / "sync-vault", "commit", "-q", "-m", "the vault")

        programs = {"": AMEM, **({"before: ": args.before} if args.before else {})}
        cases: dict[str, tuple[list[str], dict[str, str], bytes | None]] = {}
        for label, amem in programs.items():
            cases[f"{label}amem --version"] = ([amem, "--version"], base, None)
            cases[f"{label}amem read NOTE"] = ([amem, "read", note], read_env, None)
            cases[f"{label}amem write --append"] = ([amem, "write", "bench/startup-log", "--append"], write_env, b"x\n")
            if not args.no_sync:
                cases[f"{label}amem sync, nothing to do"] = ([amem, "sync"], sync_env, None)
        # Warm every case (the indexes are built, the first sync pushes), then let the files' mtimes age
        # past the racy window, as in a vault not written this second, and warm again.
        for _ in range(2):
            for cmd, env, stdin in cases.values():
                timed(cmd, env, stdin)
            time.sleep(3.5)

        load_before = os.getloadavg()
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (cmd, env, stdin) in cases.items():
                times[name].append(timed(cmd, env, stdin))
        load_after = os.getloadavg()

        print(f"vault: {vault} ({len(notes)} notes outside archive/), note {note}, {args.runs} rounds")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}")
        print(f"load average after:  {' '.join(f'{x:.2f}' for x in load_after)}")
        print(f"{'command':42} {'wall ms':>8} {'cpu ms':>8} {'wall/ver':>9} {'cpu/ver':>8}")
        for name, values in times.items():
            label = "before: " if name.startswith("before: ") else ""
            reference = times[f"{label}amem --version"]
            wall = statistics.median(v[0] for v in values)
            cpu = statistics.median(v[1] for v in values)
            wall_ratio = statistics.median(v[0] / r[0] for v, r in zip(values, reference, strict=True))
            cpu_ratio = statistics.median(v[1] / r[1] for v, r in zip(values, reference, strict=True) if r[1] > 0)
            print(f"{name:42} {wall * 1000:8.1f} {cpu * 1000:8.1f} {wall_ratio:8.2f}x {cpu_ratio:7.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
