"""`amem read` beside another process's index build, with real processes (SPEC §3): it never waits for the
build and is never silently wrong because of it: its links and the notes it follows are right, and what it
cannot know yet (the backlinks) is flagged, with a warning naming the build."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from amem.config import load_config
from amem.index.schema import FILE as INDEX_FILE
from tests.conftest import write_file

AMEM = [sys.executable, "-m", "amem"]
FILLER = 3000  # several of the index's batches


def make_vault(vault: Path) -> None:
    """Filler notes in the vault's root (indexed first), the probe there too, and what it links to, and
    what links to it, in a folder indexed last."""
    for i in range(FILLER):
        write_file(vault / f"filler{i:05}.md", f"# Filler {i}\n\nwords about nothing in particular {i}\n")
    write_file(vault / "probe.md", "# Probe\n\nSee [[alpha]] and [[t/beta|the second]] and [[nowhere]].\n")
    write_file(vault / "t/alpha.md", "# Alpha\n\nBack to [[probe]].\n")
    write_file(vault / "t/beta.md", "# Beta\n\nNo links here.\n")
    write_file(vault / "t/gamma.md", "# Gamma\n\nAlso about [[Probe]].\n")


EXPECTED_LINKS = ["t/alpha.md", "t/beta.md", None]
EXPECTED_LINKED = ["t/alpha.md", "t/beta.md"]
EXPECTED_BACKLINKS = ["t/alpha.md", "t/gamma.md"]


def start_read() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*AMEM, "read", "probe", "--depth", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def finish(proc: subprocess.Popen[str]) -> tuple[dict[str, Any], str]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out), err


def assert_right_or_flagged(result: dict[str, Any], stderr: str) -> bool:
    """The read's links and linked notes are right; its backlinks are too, or flagged as incomplete with a
    warning that names the build. True when it had to flag them."""
    assert result["id"] == "probe.md"
    assert [link["resolved"] for link in result["links"]] == EXPECTED_LINKS
    assert [note["id"] for note in result["linkedNotes"]] == EXPECTED_LINKED
    assert result["linkedNotes"][0]["links"][0]["resolved"] == "probe.md"
    if result.get("incomplete") == ["backlinks"]:
        assert "building" in stderr and "index" in stderr, stderr
        assert set(result["backlinks"]) <= set(EXPECTED_BACKLINKS)
        return True
    assert "incomplete" not in result
    assert result["backlinks"] == EXPECTED_BACKLINKS
    return False


def indexed_notes() -> int:
    path = load_config().cache_dir / INDEX_FILE
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_reads_beside_a_running_build_are_right_and_say_what_they_cannot_know(vault: Path) -> None:
    make_vault(vault)
    builder = subprocess.Popen(
        [*AMEM, "index"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    flagged = []
    try:
        deadline = time.monotonic() + 300
        while indexed_notes() == 0:  # the first batch is in; the build goes on
            assert builder.poll() is None, "the build finished before a read could start beside it"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        while builder.poll() is None:
            flagged.append(assert_right_or_flagged(*finish(start_read())))
    finally:
        assert builder.wait(timeout=300) == 0
    assert True in flagged, "no read met the build half way"
    result, stderr = finish(start_read())  # the build finished: every backlink, no flag
    assert assert_right_or_flagged(result, stderr) is False and stderr == ""


def test_a_read_beside_a_killed_build_is_right_too(vault: Path) -> None:
    make_vault(vault)
    builder = subprocess.Popen([*AMEM, "index"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while indexed_notes() == 0:
        assert builder.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    builder.send_signal(signal.SIGKILL)
    builder.wait(timeout=60)
    # No build runs now: the read finishes the one that was killed itself, and knows everything.
    result, stderr = finish(start_read())
    assert assert_right_or_flagged(result, stderr) is False


def test_three_reads_started_together_on_a_cold_cache_all_answer_right(vault: Path) -> None:
    make_vault(vault)
    reads = []
    for _ in range(3):
        reads.append(start_read())
        time.sleep(0.2)
    flagged = [assert_right_or_flagged(*finish(proc)) for proc in reads]
    assert flagged.count(False) >= 1  # the one that built the index knows every backlink
