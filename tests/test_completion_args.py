"""Completion of the PREFIX, --from and --tag arguments of check, list and graph (issue 24), through the real
protocol: `python -m amem` asked by the bash reply format, as the checked-in scripts ask it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import write_file
from .test_completion import run_complete

NOTES = {
    "notes/auth.md": "---\ntags: [project/alpha, Security]\n---\n# auth\n",
    "notes/authz.md": "# authz\n#project/beta and #people\n",
    "notes/deep/a.md": "# a\n",
    "top.md": "# top\n```\n#incode\n```\n",
}


@pytest.fixture
def tagged(vault: Path, isolated_env: Path) -> Path:
    for note_id, text in NOTES.items():
        write_file(vault / note_id, text)
    return vault


def offered(words: str, isolated_env: Path) -> list[str]:
    """The candidates amem offers for the last word of `words` (`amem list no` completes `no`)."""
    split = words.split(" ")
    done = run_complete("bash", words, str(len(split) - 1), isolated_env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [line.removeprefix("plain,") for line in done.stdout.splitlines() if line]


def build_index(isolated_env: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "amem", "index"], cwd=isolated_env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("command", ["check", "list", "graph"])
def test_a_prefix_completes_folder_by_folder_as_ids_do(command: str, tagged: Path, isolated_env: Path) -> None:
    assert offered(f"amem {command} no", isolated_env) == ["notes/"]
    assert offered(f"amem {command} notes/", isolated_env) == ["notes/auth", "notes/authz", "notes/deep/"]
    assert offered(f"amem {command} notes/deep/", isolated_env) == ["notes/deep/a"]


def test_graph_from_completes_note_ids(tagged: Path, isolated_env: Path) -> None:
    assert offered("amem graph --from notes/a", isolated_env) == ["notes/auth", "notes/authz"]
    assert offered("amem graph --from notes/d", isolated_env) == ["notes/deep/"]


@pytest.mark.parametrize("command", ["list", "graph"])
def test_a_tag_completes_from_the_tags_the_index_holds(command: str, tagged: Path, isolated_env: Path) -> None:
    build_index(isolated_env)
    assert offered(f"amem {command} --tag pro", isolated_env) == ["project/alpha", "project/beta"]
    assert offered(f"amem {command} --tag #Pe", isolated_env) == ["#people"]  # as typed: with its #
    assert offered(f"amem {command} --tag sec", isolated_env) == ["security"]
    assert offered(f"amem {command} --tag inc", isolated_env) == []  # in code: no tag
    write_file(tagged / "notes/new.md", "#project/gamma\n")  # a new note: the index is brought up to date
    assert offered(f"amem {command} --tag project/", isolated_env) == ["project/alpha", "project/beta", "project/gamma"]


def test_a_tag_completes_nothing_before_the_first_build_and_never_fails(tagged: Path, isolated_env: Path) -> None:
    # Building the whole index for a TAB would take seconds in a big vault: the first command builds it.
    assert offered("amem graph --tag pro", isolated_env) == []
    build_index(isolated_env)
    (isolated_env / "bad.yaml").write_text("extensions: [\n")
    done = run_complete("bash", "amem --config bad.yaml graph --tag pro", "5", isolated_env)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "", "")
