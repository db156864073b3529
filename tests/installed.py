"""The installed `amem` on a PATH of its own, for tests that run shells, hooks and scripts as users do."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def amem_bin(folder: Path) -> Path:
    """A folder holding an executable `amem`: the console script beside this interpreter when there is one,
    else a wrapper that runs `python -m amem` with this interpreter (the same installed package)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "amem"
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
