"""Every test runs with its own HOME, XDG folders, vault and working directory; none touches the real home."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import settings

from amem.cli import cli
from amem.config import Config, load_config
from tests.keeperproc import KeeperProcess, start_keeper

_CLEARED_PREFIXES = ("AMEM_", "AGENTMEMORY_")

# Test modules import onnxruntime to skip without it, at collection, with the real HOME: with its telemetry
# on (1.32 on Linux) that import alone writes a device id under ~/.cache/Microsoft. amem turns it off the
# same way before its own import (amem.semantic.models).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

# No property fails for being slow: an example's time on a loaded machine (or beside another xdist worker)
# says nothing of the code. Hypothesis's default 200 ms deadline would be a timing assertion.
settings.register_profile("amem", deadline=None)
settings.load_profile("amem")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    for sub in ("", ".config", ".cache", ".local/state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local/state"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work


@pytest.fixture
def vault(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vault folder (not created yet: the first write creates it), named through AMEM_VAULT."""
    path = isolated_env / "vault"
    monkeypatch.setenv("AMEM_VAULT", str(path))
    return path


@pytest.fixture
def config(vault: Path) -> Config:
    return load_config()


@pytest.fixture
def short_cache(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache folder with a short path, so that the keeper's socket path fits (pytest's folders may not)."""
    folder = Path(tempfile.mkdtemp(prefix="amc", dir="/tmp"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def keeper(vault: Path) -> Iterator[KeeperProcess]:
    """A live index keeper (`amem index --watch`) of the vault, SIGKILLed at the end of the test."""
    vault.mkdir(parents=True, exist_ok=True)
    started = start_keeper()
    try:
        yield started
    finally:
        started.stop(signal.SIGKILL)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """An empty bare git repository, the remote that `tests.gitrepo.clone` clones."""
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


class Result:
    def __init__(self, exit_code: int, stdout: str, stderr: str) -> None:
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error(self) -> dict[str, Any]:
        last = [line for line in self.stderr.splitlines() if line.startswith("{")][-1]
        return json.loads(last)["error"]  # type: ignore[no-any-return]


@pytest.fixture
def amem() -> Any:
    """Run amem through Click's CliRunner: `amem("read", "x", input=...)` → Result."""
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None) -> Result:
        result = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
        return Result(result.exit_code, result.stdout, result.stderr)

    return invoke


def write_file(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return path
