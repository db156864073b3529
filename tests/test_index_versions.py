"""The index files of two schema versions side by side (`amem.index.versions`): an amem of another version
still running keeps its own file, which this one neither builds again nor removes while it is open, so that
neither builds the whole index again each time the other has used it."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from amem.config import Config, load_config
from amem.index import versions
from amem.index.index import RefreshStats, VaultIndex
from amem.index.schema import FILE
from tests.conftest import write_file

#: Another amem's connection to its index, held open until stdin closes (WAL mode, as every amem opens it).
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', 'another version')")
conn.commit()
print("open", flush=True)
sys.stdin.read()
"""


def refresh(config: Config) -> RefreshStats:
    index = VaultIndex(config)
    try:
        return index.refresh()
    finally:
        index.close()


def digest(path: Path) -> str:
    """The database's bytes and its WAL's (its shared memory changes with every reader's marks)."""
    return hashlib.sha256(path.read_bytes() + Path(f"{path}-wal").read_bytes()).hexdigest()


@pytest.mark.parametrize("name", ["index.sqlite", "index-14.sqlite", "index-99.sqlite"])
def test_another_versions_open_index_is_left_as_it_is_and_neither_is_built_again(vault: Path, name: str) -> None:
    write_file(vault / "a.md", "# A\n\nSee [[b]].\n")
    write_file(vault / "b.md", "# B\n")
    config = load_config()
    other = Path(config.cache_folder) / name
    other.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(other)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        held = digest(other)
        assert versions.in_use(str(other))
        assert refresh(config).added == 2  # this version's first file, built
        for turn in range(3):  # each command after it finds this version's file as it left it
            write_file(vault / "b.md", f"# B\n\n{turn}\n")
            stats = refresh(config)
            assert (stats.added, stats.changed) == (0, 1)
        assert digest(other) == held  # the other's file and its WAL untouched
        assert (Path(config.cache_folder) / FILE).exists()
    finally:
        holder.communicate(b"")
    assert not versions.in_use(str(other))
    (Path(config.cache_folder) / FILE).unlink()
    assert refresh(config).added == 2
    assert not list(other.parent.glob(name + "*"))  # closed now: removed with its side files


def test_a_file_of_this_version_is_not_another_versions(vault: Path) -> None:
    write_file(vault / "a.md", "# A\n")
    config = load_config()
    assert refresh(config).added == 1
    folder = Path(config.cache_folder)
    write_file(folder / "index-notes.txt", "not an index\n")
    assert versions.other_versions(str(folder)) == []
    (folder / FILE).rename(folder / "index.sqlite")
    assert versions.other_versions(str(folder)) == [str(folder / "index.sqlite")]


def test_amem_index_removes_another_versions_file_once_it_is_closed(vault: Path) -> None:
    """A file still open when this version's first was built stays; `amem index` removes it once closed."""
    from click.testing import CliRunner

    from amem.cli import cli

    write_file(vault / "a.md", "# A\n")
    config = load_config()
    other = Path(config.cache_folder) / "index.sqlite"
    other.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(other)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        assert CliRunner().invoke(cli, ["index"]).exit_code == 0
        assert other.exists()
    finally:
        holder.communicate(b"")
    result = CliRunner().invoke(cli, ["index"])
    assert result.exit_code == 0, result.output
    assert not list(other.parent.glob("index.sqlite*")) and (other.parent / FILE).exists()


def test_another_files_triggers_and_views_are_never_taken(vault: Path) -> None:
    """Only the feature tables' and their indexes' definitions are copied from another version's file: a
    trigger or view named like one is not run into this version's database."""
    import sqlite3

    write_file(vault / "a.md", "# A\n")
    config = load_config()
    assert refresh(config).added == 1
    folder = Path(config.cache_folder)
    (folder / FILE).rename(folder / "index-14.sqlite")
    conn = sqlite3.connect(folder / "index-14.sqlite")
    conn.execute("CREATE TABLE semantic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO semantic_meta VALUES ('model', 'm')")
    conn.execute("CREATE VIEW semantic_view AS SELECT 1")
    conn.execute("CREATE TRIGGER semantic_trap AFTER INSERT ON notes BEGIN DELETE FROM notes; END")
    conn.commit()
    conn.close()
    assert refresh(config).added == 1
    index = VaultIndex(config)
    try:
        kinds = dict(index.conn.execute("SELECT name, type FROM sqlite_master WHERE name LIKE 'semantic%'"))
        assert kinds == {"semantic_meta": "table"}
        assert index.conn.execute("SELECT value FROM semantic_meta").fetchall() == [("m",)]
    finally:
        index.close()


def test_what_amem_last_saw_survives_an_upgrade(vault: Path) -> None:
    """A note another program changed after amem last saw it is still `modifiedExternally` when read by
    the first command of a new version: its file takes the other's `seen` rows."""
    from amem.ops.read import read_note
    from amem.ops.write import write_note

    config = load_config()
    write_note(config, "a", "# A\n\nWritten by amem.\n")
    folder = Path(config.cache_folder)
    (folder / FILE).rename(folder / "index-14.sqlite")  # the version before's file, closed
    with open(vault / "a.md", "a", encoding="utf-8") as note:
        note.write("\nChanged by another program.\n")
    assert read_note(config, "a")["modifiedExternally"] is True
    assert not (folder / "index-14.sqlite").exists()


def test_what_amem_last_saw_survives_a_rebuild_for_other_settings(vault: Path, isolated_env: Path) -> None:
    """The index is built again in place when its settings change (a folder excluded); what amem last saw
    of each note still holds, so a note changed meanwhile by another program reads as such."""
    from amem.ops.read import read_note
    from amem.ops.write import write_note

    config = load_config()
    write_note(config, "a", "# A\n\nWritten by amem.\n")
    write_note(config, "ops/b", "# B\n")
    with open(vault / "a.md", "a", encoding="utf-8") as note:
        note.write("\nChanged by another program.\n")
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "excludeDirs: [ops]\n")
    rebuilt = load_config()
    assert rebuilt.cache_folder == config.cache_folder
    assert refresh(rebuilt).added == 1  # built again: the other settings
    assert read_note(rebuilt, "a")["modifiedExternally"] is True
