"""A write records the version it wrote, so that the next read does not call amem's own write an outside
change: with the index as it should be, missing, or damaged in the ways a cache gets damaged. The installed
amem, one process per command, as a user runs it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from amem.config import load_config
from tests.installed import installed_runner


def index_file() -> Path:
    return load_config().cache_dir / "index.sqlite"


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
