"""A writer killed with SIGKILL mid-write leaves the old note or the new one, and any temporary file it
left is gone after the next amem command that touches the vault: never indexed, never committed."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import write_file
from .gitrepo import git, init_repo, set_identity
from .installed import amem_bin, path_with

BIG = 8 * 2**20


def strays(vault: Path) -> list[str]:
    return sorted(str(p.relative_to(vault)) for p in vault.rglob("*.amem-tmp"))


@pytest.fixture
def env(isolated_env: Path, vault: Path, tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))


def _kill_a_writer(vault: Path, env: dict[str, str], content: Path, when_temp_seen: bool) -> bool:
    """Start `amem write notes/big --overwrite -` and SIGKILL it, either at a random moment or just
    after its temporary file appears; True when a temporary file existed at the kill."""
    with open(content, "rb") as stdin:
        proc = subprocess.Popen(
            ["amem", "write", "notes/big", "--overwrite", "-"],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + 20
        if when_temp_seen:
            while proc.poll() is None and not strays(vault) and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(random.uniform(0, 0.01))
        else:
            time.sleep(random.uniform(0.05, 0.8))
        seen = bool(strays(vault))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=20)
    return seen


@pytest.mark.parametrize("next_command", ["search", "read", "write-other", "write-same"])
def test_no_stray_temporary_outlives_the_next_command(
    vault: Path, env: dict[str, str], tmp_path: Path, next_command: str
) -> None:
    old = "---\ntitle: Big\n---\n" + "old line\n" * 10
    write_file(vault / "notes" / "big.md", old)
    write_file(vault / "notes" / "other.md", "other note\n")
    subprocess.run(["amem", "search", "other"], env=env, capture_output=True, check=True, timeout=60)
    new = "---\ntitle: Big\n---\n" + ("new line of a big overwrite\n" * (BIG // 28))
    content = write_file(tmp_path / "content.md", new)
    follow = {
        "search": ["amem", "search", "line"],
        "read": ["amem", "read", "notes/other"],
        "write-other": ["amem", "write", "notes/other", "more"],
        "write-same": ["amem", "write", "notes/big", "more"],
    }[next_command]
    killed_with_temp = 0
    for attempt in range(6):
        killed_with_temp += _kill_a_writer(vault, env, content, when_temp_seen=attempt % 2 == 0)
        text = (vault / "notes" / "big.md").read_text()
        # The old note or the whole new one, never a mix.
        assert text.startswith("---\ntitle: Big\n") and text.count("new line") in (0, BIG // 28)
        result = subprocess.run(follow, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert "amem-tmp" not in result.stdout
        assert strays(vault) == []
    assert killed_with_temp, "no kill landed while the temporary file existed"


def test_a_live_writers_temporary_is_never_removed(amem: Any, vault: Path) -> None:
    write_file(vault / "n.md", "n\n")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = write_file(vault / f".n.md.{sleeper.pid}-0123abcd.amem-tmp", "half written")
        assert amem("search", "n").exit_code == 0
        assert amem("write", "other", "x").exit_code == 0
        assert live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert amem("search", "n").exit_code == 0
    assert not live.exists()


def test_commit_never_commits_a_stray_temporary(amem: Any, vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "notes" / "a.md", "a\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stray = write_file(vault / "notes" / f".a.md.{dead.pid}-0123abcd.amem-tmp", "half")
    assert amem("write", "notes/b", "b", "--commit").exit_code == 0
    assert git(vault, "ls-tree", "-r", "--name-only", "HEAD").splitlines() == ["notes/b.md"]
    assert not stray.exists()
    git(vault, "add", "-A")
    assert "amem-tmp" not in git(vault, "status", "--porcelain")
