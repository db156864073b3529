"""The installed `amem` on a PATH of its own, for tests that run shells, hooks and scripts as users do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def amem_bin(folder: Path) -> Path:
    """A folder holding an executable `amem`: the console script beside this interpreter when there is one,
    else a wrapper that runs `python -m amem` with this interpreter (the same installed package)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "amem"
    if target.exists():  # made by an earlier call in the same test
        return folder
    script = Path(sys.executable).parent / "amem"
    if script.is_file() and os.access(script, os.X_OK):
        target.symlink_to(script)
    else:
        target.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m amem "$@"\n')
        target.chmod(0o755)
    return folder


def path_with(folder: Path) -> str:
    """PATH with `folder` first, so that `amem` means the amem under test."""
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


class Run:
    """A finished run of the installed `amem`: its exit code, stdout and stderr, parsed on demand."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error(self) -> dict[str, Any]:
        return json.loads(self.stderr)["error"]  # type: ignore[no-any-return]


def installed_runner(tmp_path: Path, vault: Path) -> Callable[..., Run]:
    """`run("read", "x")` runs the installed `amem` in a subprocess from beside the vault, as a user does."""
    program = str(amem_bin(tmp_path / "bin") / "amem")

    def invoke(*args: str) -> Run:
        return Run(subprocess.run([program, *args], capture_output=True, text=True, cwd=vault.parent, timeout=120))

    return invoke
