"""A write records the version it wrote, so that the next read does not call amem's own write an outside
change: with the index as it should be, missing, or damaged in the ways a cache gets damaged. The installed
amem, one process per command, as a user runs it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amem.config import load_config
from amem.index.schema import FILE as INDEX_FILE
from amem.notes.parse import version_of
from tests.installed import installed_runner


def index_file() -> Path:
    return load_config().cache_dir / INDEX_FILE


def damage(kind: str) -> None:
    path = index_file()
    if kind == "missing":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    elif kind == "not a database":
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"this is not a database" * 100)
    else:
        conn = sqlite3.connect(path)
        conn.executescript(kind)
        conn.close()


@pytest.mark.parametrize(
    "kind",
    ["missing", "not a database", "DROP TABLE seen", "DROP TABLE seen; CREATE TABLE seen (id TEXT)", "DROP TABLE meta"],
)
def test_a_write_is_not_an_outside_change_whatever_state_the_index_is_in(
    kind: str, tmp_path: Path, vault: Path
) -> None:
    run = installed_runner(tmp_path, vault)
    assert run("write", "n", "first words").code == 0
    assert run("read", "n").json["modifiedExternally"] is False  # the index exists now
    damage(kind)
    written = run("write", "n", "more words")
    assert written.code == 0, written.stderr
    note = run("read", "n").json
    assert note["modifiedExternally"] is False
    assert note["version"] == written.json["version"]
    with open(vault / "n.md", "a", encoding="utf-8") as handle:
        handle.write("edited in another editor\n")
    assert run("read", "n").json["modifiedExternally"] is True


def test_a_write_that_landed_succeeds_when_the_index_stays_locked(
    vault: Path, amem: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the index's write lock past the wait (a keeper indexing a huge note): the note
    is written all the same, so the write says so and succeeds, warning that the index could not record it.
    Failing would make a caller retry an append that already landed, and the note would hold it twice."""
    assert amem("write", "n", "first words").exit_code == 0
    monkeypatch.setattr("amem.index.seen.BUSY_TIMEOUT", 0.2)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(index_file())], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        written = amem("write", "n", "appended once")
    finally:
        holder.kill()
        holder.wait()
    assert written.exit_code == 0, written.stderr
    assert written.json["version"] == version_of((vault / "n.md").read_bytes())
    assert "could not record" in written.stderr
    assert (vault / "n.md").read_text(encoding="utf-8").count("appended once") == 1


HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)
"""
