"""The docs' runnable shell blocks, run as written: every ```sh block marked `<!-- runnable -->` in README.md
and docs/, one page at a time in a fresh git repository with a fresh HOME and the installed `amem` on
PATH, in page order (a later block may use what an earlier one wrote), each command checked for its exit
status. The README's tour has its own test (tests/test_readme_tour.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .installed import amem_bin, path_with

REPO = Path(__file__).resolve().parents[1]
MARKER = "<!-- runnable -->\n```sh\n"

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="the docs use jq (.ci/run installs it)")


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def runnable_blocks(text: str) -> list[str]:
    return re.findall(re.escape(MARKER) + r"(.*?)```\n", text, re.S)


PAGES = {path.relative_to(REPO).as_posix(): blocks for path in pages() if (blocks := runnable_blocks(path.read_text()))}


def test_the_marker_finds_the_blocks() -> None:
    assert runnable_blocks("a\n<!-- runnable -->\n```sh\necho 1\n```\nb\n```sh\necho 2\n```\n") == ["echo 1\n"]
    assert len(PAGES) >= 5, sorted(PAGES)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_runs_as_written(page: str, isolated_env: Path, tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Docs Reader\n\temail = reader@example.org\n")
    env = {"PATH": path_with(amem_bin(tmp_path / "bin")), "HOME": str(home), "LANG": "C.UTF-8"}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    project = isolated_env / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, env=env, check=True)
    # Every command must succeed (a `|| echo` fallback excepted, as a reader would see it); the trap names
    # the one that did not.
    script = "set -euo pipefail\ntrap 'echo \"command failed ($?): $BASH_COMMAND\" >&2' ERR\n"
    result = subprocess.run(
        ["bash", "-c", script + "\n".join(PAGES[page])],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "command failed" not in result.stderr, result.stderr
    assert '"error"' not in result.stdout
