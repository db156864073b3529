"""Benchmark `amem sync` and `amem history` side by side with git, on repositories built in a temporary folder.

    python tests/bench/bench_sync.py [--runs 10] [--notes 1000] [--vault DIR] [--before AMEM] [--idle-only]

--vault DIR: the first machine's notes are a copy of DIR (such as a vault made by genvault.py), committed
in one commit, instead of --notes notes written one by one. --before AMEM: the idle sync is also timed
side by side with that amem executable (the code before a change). --idle-only: step 1 only.

1. sync with nothing to do, vs `git fetch && git status` in the same clone, and vs `amem --version`
   (farm-bench, paired runs);
2. sync after 100 notes were appended to on each side (the same 100 notes: every one goes through the merge
   driver), wall time of the second machine's sync, median of --runs rounds;
3. `amem history` of a note with 2,000 commits vs `git log --follow` of it (farm-bench, paired runs);
4. with --interleave N: machines A and B each append N sections to one note with real `amem write`
   processes and sync in a random interleaving; checks every section is present once in both clones and
   prints the syncs' median time.
Everything is local; the temporary folder is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AMEM = str(Path(sys.executable).parent / "amem")


def git(cwd: Path, *args: str, input: bytes | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, input=input, check=True, capture_output=True)


def amem_sync(vault: Path) -> float:
    start = time.monotonic()
    proc = subprocess.run([AMEM, "sync"], env={**os.environ, "AMEM_VAULT": str(vault)}, capture_output=True)
    took = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode())
    return took


def farm(cwd: Path, command: list[str], versus: str, runs: int, env: dict[str, str]) -> None:
    argv = ["farm-bench", "-n", str(runs), "--timeout", "300", "--vs", versus, "--", *command]
    print("$", " ".join(argv), flush=True)
    subprocess.run(argv, cwd=cwd, env=env, check=False, timeout=400)


def append_all(vault: Path, names: list[str], text: str) -> None:
    from amem.config import load_config
    from amem.ops.write import write_note

    config = load_config(vault=str(vault))
    for name in names:
        write_note(config, name, text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--interleave", type=int, default=0, metavar="N")
    parser.add_argument("--vault", type=Path)
    parser.add_argument("--before", metavar="AMEM")
    parser.add_argument("--idle-only", action="store_true")
    args = parser.parse_args()
    # Bytecode caching on, as in an installed amem (some environments set PYTHONDONTWRITEBYTECODE).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for role in ("AUTHOR", "COMMITTER"):
        os.environ[f"GIT_{role}_NAME"] = "bench"
        os.environ[f"GIT_{role}_EMAIL"] = "bench@localhost"
    root = Path(tempfile.mkdtemp(prefix="amem-bench-sync-"))
    try:
        remote = root / "remote.git"
        git(root, "init", "-q", "--bare", str(remote))
        a, b = root / "a", root / "b"
        git(root, "clone", "-q", str(remote), str(a))
        names = [f"notes/n{i:05d}" for i in range(args.notes)]
        if args.vault:
            shutil.copytree(args.vault, a, dirs_exist_ok=True, symlinks=True)
            git(a, "add", "-A")
            git(a, "commit", "-q", "-m", "the vault")
            names = sorted(p.relative_to(a).with_suffix("").as_posix() for p in a.rglob("*.md"))
            args.notes = len(names)
        else:
            append_all(a, names, "first words")
        amem_sync(a)
        git(root, "clone", "-q", str(remote), str(b))
        amem_sync(b)
        env = {**os.environ, "AMEM_VAULT": str(a)}
        print(f"# {args.notes} notes; nothing to do", flush=True)
        farm(a, [AMEM, "sync"], "sh -c 'git fetch -q && git status >/dev/null'", args.runs, env)
        farm(a, [AMEM, "sync"], f"{AMEM} --version", args.runs, env)
        if args.before:
            farm(a, [AMEM, "sync"], f"{args.before} sync", args.runs, env)
        if args.idle_only:
            return

        print("# 100 notes appended to on each side (the same notes), the second machine's sync", flush=True)
        changed = names[:100]
        times = []
        for round_ in range(max(3, args.runs // 2)):
            append_all(a, changed, f"from a, round {round_}")
            append_all(b, changed, f"from b, round {round_}")
            amem_sync(a)
            times.append(amem_sync(b))
            amem_sync(a)
        print(
            f"sync with 100 notes merged: median {statistics.median(times):.2f} s, runs {len(times)}, "
            f"min {min(times):.2f} max {max(times):.2f}",
            flush=True,
        )

        print("# history of a note with 2,000 commits", flush=True)
        repo = root / "hist"
        git(root, "init", "-q", str(repo))
        stream = []
        for n in range(2000):
            body = f"version {n}\n".encode()
            stream.append(
                b"commit refs/heads/master\n"
                + f"committer bench <bench@localhost> {1_700_000_000 + n} +0000\n".encode()
                + b"data 5\nedit\n"
                + f"M 100644 inline note.md\ndata {len(body)}\n".encode()
                + body
                + f"M 100644 inline other{n % 7}.md\ndata {len(body)}\n".encode()
                + body
            )
        git(repo, "fast-import", "--quiet", input=b"".join(stream))
        git(repo, "reset", "-q", "--hard", "master")
        env = {**os.environ, "AMEM_VAULT": str(repo)}
        farm(
            repo,
            [AMEM, "history", "note"],
            "git log --follow --format=%H%x1f%at%x1f%an%x1f%ae%x1f%s -- note.md",
            args.runs,
            env,
        )
        if args.interleave:
            interleave(root, args.interleave)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def interleave(root: Path, count: int) -> None:
    import random
    import re

    remote = root / "log.git"
    git(root, "init", "-q", "--bare", str(remote))
    machines = [root / "ia", root / "ib"]
    for machine in machines:
        git(root, "clone", "-q", str(remote), str(machine))
    done = {m: 0 for m in machines}
    rng = random.Random(16)
    times = []
    while min(done.values()) < count:
        machine = rng.choice([m for m in machines if done[m] < count])
        for _ in range(min(rng.randint(1, 20), count - done[machine])):
            done[machine] += 1
            env = {**os.environ, "AMEM_VAULT": str(machine)}
            subprocess.run(
                [AMEM, "write", "log", f"{machine.name}-{done[machine]}"], env=env, check=True, capture_output=True
            )
        if rng.random() < 0.7:
            times.append(amem_sync(machine))
    for machine in (*machines, machines[0]):
        times.append(amem_sync(machine))
    texts = [(m / "log.md").read_text() for m in machines]
    ok = texts[0] == texts[1] and all(
        sorted(re.findall(rf"^{m.name}-\d+$", texts[0], re.M)) == sorted(f"{m.name}-{n}" for n in range(1, count + 1))
        for m in machines
    )
    print(
        f"interleaved {count} appends on each of 2 machines: {'every section once in both' if ok else 'MISMATCH'}; "
        f"{len(times)} syncs, median {statistics.median(times):.2f} s",
        flush=True,
    )


if __name__ == "__main__":
    main()
