"""The README's tour, run verbatim: the block between its markers, in a fresh git repository with a
fresh HOME and the installed `amem` on PATH, each command checked for its exit status."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .installed import amem_bin, path_with

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="the tour uses jq (.ci/run installs it)")


def tour() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- tour:start -->\n```sh\n(.*?)```\n<!-- tour:end -->", readme, re.S)
    assert match, "the README has no tour block"
    return match.group(1)


def test_the_tour_runs_as_written(isolated_env: Path, tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    home.mkdir()
    env = {
        "PATH": path_with(amem_bin(tmp_path / "bin")),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    project = isolated_env / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, env=env, check=True)
    for key, value in (("user.name", "Tour Taker"), ("user.email", "tour@example.org")):
        subprocess.run(["git", "config", key, value], cwd=project, env=env, check=True)
    # Every command must succeed (a `|| echo` fallback excepted, as a reader would see it); the trap
    # names the one that did not.
    script = "set -euo pipefail\ntrap 'echo \"tour command failed ($?): $BASH_COMMAND\" >&2' ERR\n" + tour()
    result = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "tour command failed" not in result.stderr
    assert "changed meanwhile" not in result.stdout
    lines = result.stdout.splitlines()
    assert "notes/auth.md" in lines  # the search's first hit
    assert "notes/login.md" in lines  # the Chinese search's first hit
    assert '"notes/auth.md"' in lines  # the linked note of decisions/keys
    assert "amem: write notes/auth.md" in " ".join(lines)
    todo = (project / ".amem" / "memory" / "notes" / "todo.md").read_text()
    assert "- rotate the staging keys" in todo
    auth = (project / ".amem" / "memory" / "notes" / "auth.md").read_text()
    assert "A change worth keeping." in auth and "A change to undo." not in auth
    assert os.listdir(home) == [".cache"]  # the cache went to the fresh HOME, nothing else
