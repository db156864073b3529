"""`amem index [--rebuild]`: the index brought up to date now, and what it holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config, load_config
from amem.index.index import VaultIndex
from amem.index.schema import LOCK_FILE
from tests.conftest import write_file

FIELDS = {"notes", "terms", "bytes", "built", "refreshed", "took"}


def test_builds_then_refreshes_only_what_changed(amem: Any, vault: Path) -> None:
    write_file(vault / "a.md", "# Alpha\nauth token rotation\n")
    write_file(vault / "sub/b.md", "beta [[a]]\n")
    first = amem("index")
    assert first.exit_code == 0, first.stderr
    data = first.json
    assert set(data) == FIELDS
    assert data["notes"] == 2 and data["built"] is True and data["refreshed"] == 2
    assert data["terms"] >= 6 and data["bytes"] > 0 and data["took"] >= 0
    again = amem("index").json
    assert again["built"] is False and again["refreshed"] == 0 and again["notes"] == 2
    assert again["terms"] == data["terms"]
    write_file(vault / "a.md", "# Alpha\nnothing else\n")
    (vault / "sub/b.md").unlink()
    write_file(vault / "c.md", "gamma\n")
    changed = amem("index").json
    assert changed["refreshed"] == 3 and changed["notes"] == 2 and changed["built"] is False
    assert amem("search", "rotation").json["total"] == 0
    assert amem("search", "gamma").json["hits"][0]["id"] == "c.md"


def test_rebuild_starts_from_nothing_and_agrees_with_the_refreshed_index(amem: Any, vault: Path) -> None:
    for i in range(30):
        write_file(vault / f"n{i % 4}/note{i}.md", f"note {i} links [[note{(i + 1) % 30}]] word{i % 7}\n")
    built = amem("index").json
    rebuilt = amem("index", "--rebuild").json
    assert rebuilt["built"] is True and rebuilt["refreshed"] == 30
    assert {k: rebuilt[k] for k in ("notes", "terms")} == {k: built[k] for k in ("notes", "terms")}
    assert amem("search", "word3").json["total"] == len([i for i in range(30) if i % 7 == 3])


def test_an_empty_or_missing_vault_is_an_empty_index(amem: Any, vault: Path) -> None:
    result = amem("index")
    assert result.exit_code == 0, result.stderr
    assert {k: result.json[k] for k in ("notes", "terms", "refreshed")} == {"notes": 0, "terms": 0, "refreshed": 0}
    assert not vault.exists()  # indexing creates nothing in the vault


def test_a_damaged_index_is_rebuilt(amem: Any, vault: Path, config: Config) -> None:
    write_file(vault / "a.md", "alpha\n")
    amem("index")
    index_file = VaultIndex(config).path
    index_file.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{index_file}{suffix}").unlink(missing_ok=True)
    result = amem("index")
    assert result.exit_code == 0, result.stderr
    assert result.json["notes"] == 1 and result.json["built"] is True


def test_unreadable_notes_are_not_counted_and_are_warned_about(amem: Any, vault: Path) -> None:
    write_file(vault / "good.md", "fine\n")
    write_file(vault / "bad.md", b"\xff\xfe not utf-8\n")
    result = amem("index")
    assert result.json["notes"] == 1
    assert "bad.md" in result.stderr and "not UTF-8" in result.stderr


def test_an_extra_argument_is_a_usage_error(amem: Any, vault: Path) -> None:
    result = amem("index", "somewhere")
    assert result.exit_code == 2 and result.error["code"] == "usage" and result.stdout == ""


def test_the_installed_command_prints_one_json_line(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "a.md", "alpha\n")
    proc = subprocess.run(
        [sys.executable, "-m", "amem", "index"], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1 and json.loads(proc.stdout)["notes"] == 1
    assert proc.stderr == ""  # no progress when stderr is not a terminal


HOLD_REFRESH_LOCK = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.flock(handle, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(120)
"""


def test_a_search_gives_up_waiting_for_a_refresh_lock_held_too_long(
    vault: Path, amem: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that holds the refresh lock and never lets go (a keeper stopped with Ctrl-Z as it indexed a
    note, a process hung on a network file system) costs a search a bounded wait, then the index as it is,
    with a warning saying so; never a search that waits for ever."""
    import threading

    write_file(vault / "a.md", "alpha token\n")
    assert amem("search", "token").exit_code == 0  # the index exists
    write_file(vault / "b.md", "beta token\n")
    monkeypatch.setattr("amem.index.index.LOCK_WAIT", 0.5)
    lock = load_config().cache_dir / LOCK_FILE
    holder = subprocess.Popen([sys.executable, "-c", HOLD_REFRESH_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    outcome: list[Any] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        searching = threading.Thread(target=lambda: outcome.append(amem("search", "token")))
        searching.start()
        searching.join(timeout=60)
        finished = not searching.is_alive()
    finally:
        holder.kill()
        holder.wait()
    searching.join()
    assert finished, "the search was still waiting for the lock"
    result = outcome[0]
    assert result.exit_code == 0, result.stderr
    assert [hit["id"] for hit in result.json["hits"]] == ["a.md"]  # the index as it was
    assert "refresh lock" in result.stderr
    again = amem("search", "token")  # the lock let go: the next search sees the new note
    assert sorted(hit["id"] for hit in again.json["hits"]) == ["a.md", "b.md"]


def test_a_vault_reached_through_a_symlink_keeps_its_top_level_notes(
    tmp_path: Path, amem: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vault's own folder may be a symlink (~/notes to a synced folder): a read or list, which looks at
    folders, once found the top folder not a folder and dropped every note in it from the index, until the
    next search put them back."""
    real = tmp_path / "synced" / "notes"
    write_file(real / "top.md", "top token ![[diagram.png]]\n")
    write_file(real / "sub/inner.md", "inner token\n")
    write_file(real / "diagram.png", b"\x89PNG")
    link = tmp_path / "notes"
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("AMEM_VAULT", str(link))
    everything = ["sub/inner.md", "top.md"]
    for command in (["search", "token"], ["list"], ["read", "top"], ["list"], ["search", "token"], ["list"]):
        result = amem(*command)
        assert result.exit_code == 0, result.stderr
        if command[0] == "list":
            assert sorted(note["id"] for note in result.json["notes"]) == everything, command
        if command[0] == "search":
            assert sorted(hit["id"] for hit in result.json["hits"]) == everything, command
        if command[0] == "read":
            assert result.json["links"][0]["attachment"] == "diagram.png"  # the attachments' listing too
    assert amem("read", "top").json["links"][0]["attachment"] == "diagram.png"
