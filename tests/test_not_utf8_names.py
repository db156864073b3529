"""A file or folder whose name is not UTF-8 (a Latin-1 `résumé.md` committed on another machine) is one bad
file, never a broken vault: every scan skips it, `check` names it (`not-utf8-name`, its bytes escaped),
and every other note answers, through the installed `amem`, its MCP tools and the keeper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.installed import Run, installed_runner
from tests.keeperproc import start_keeper

#: a note and a folder named in Latin-1, as git checks them out from a commit made elsewhere
BAD_NOTE = b"r\xe9sum\xe9.md"
BAD_FOLDER = b"caf\xe9"
BAD_ATTACHMENT = b"ph\xe9to.png"
GOOD_IDS = ["b.md", "notes/a.md"]


def _bad_names(vault: Path) -> None:
    root = os.fsencode(vault)
    with open(os.path.join(root, BAD_NOTE), "wb") as handle:
        handle.write(b"alpha in a note of a Latin-1 name\n")
    os.mkdir(os.path.join(root, BAD_FOLDER))
    with open(os.path.join(root, BAD_FOLDER, b"inside.md"), "wb") as handle:
        handle.write(b"alpha inside a folder of a Latin-1 name\n")
    with open(os.path.join(root, BAD_ATTACHMENT), "wb") as handle:
        handle.write(b"\x89PNG\r\n")


@pytest.fixture
def bad_vault(vault: Path) -> Path:
    # [[photo.png]] names no note: a read of notes/a lists the vault's attachments too.
    write_file(vault / "notes/a.md", "---\ntitle: A\n---\nalpha [[b]] and ![[photo.png]]\n")
    write_file(vault / "b.md", "beta\n")
    _bad_names(vault)
    return vault


@pytest.fixture
def run(tmp_path: Path, bad_vault: Path) -> Any:
    return installed_runner(tmp_path, bad_vault)


def _ok(result: Run) -> Any:
    assert result.code == 0, result.stderr
    assert "\\udc" not in result.stdout and "\udce9" not in result.stdout
    return result.json


def test_every_other_note_answers(run: Any, bad_vault: Path) -> None:
    read = _ok(run("read", "notes/a"))
    assert read["id"] == "notes/a.md" and [n["id"] for n in read["linkedNotes"]] == ["b.md"]
    assert [n["id"] for n in _ok(run("list"))["notes"]] == GOOD_IDS
    assert [hit["id"] for hit in _ok(run("search", "alpha"))["hits"]] == ["notes/a.md"]
    graph = _ok(run("graph"))
    assert sorted(node["id"] for node in graph["nodes"]) == GOOD_IDS
    assert _ok(run("index"))["notes"] == 2
    moved = _ok(run("move", "b", "c"))
    assert moved["id"] == "c.md" and moved["rewritten"] == [{"id": "notes/a.md", "links": 1}]
    assert [n["id"] for n in _ok(run("list"))["notes"]] == ["c.md", "notes/a.md"]
    assert (bad_vault / os.fsdecode(BAD_NOTE)).exists()  # left as it was


def test_check_names_each_with_its_bytes_escaped(run: Any) -> None:
    checked = run("check")
    assert checked.code == 11, checked.stderr  # `problems`: the kind is an error
    found = [(p["id"], p["severity"]) for p in checked.json["problems"] if p["kind"] == "not-utf8-name"]
    assert found == [("caf\\xe9/", "error"), ("ph\\xe9to.png", "error"), ("r\\xe9sum\\xe9.md", "error")]
    assert checked.json["notes"] == 2
    assert checked.error["counts"]["not-utf8-name"] == 3
    assert "\udce9" not in checked.stdout
    folder = run("check", "caf")
    assert folder.code == 11 and [p["id"] for p in folder.json["problems"]] == ["caf\\xe9/"]


def test_the_mcp_tools_answer(isolated_env: Path, bad_vault: Path) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.test_mcp import Client

    results: dict[str, Any] = {}
    # `python -m amem mcp` in this test's environment (HOME, XDG folders, AMEM_VAULT, the PYTHONPATH of
    # the amem under test), as the keeper's tests start theirs
    params = StdioServerParameters(command=sys.executable, args=["-m", "amem", "mcp"], env=dict(os.environ))

    async def main() -> None:
        with (isolated_env.parent / "server-stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                client = Client(session)
                with anyio.fail_after(60):
                    results["search"] = await client.ok("wiki_search", query="alpha")
                    results["list"] = await client.ok("wiki_list")
                    results["read"] = await client.ok("wiki_read", id="b")
                    results["check"] = await client.ok("wiki_check")

    anyio.run(main)
    assert [hit["id"] for hit in results["search"]["hits"]] == ["notes/a.md"]
    assert [n["id"] for n in results["list"]["notes"]] == GOOD_IDS
    assert results["read"]["body"] == "beta\n"
    assert "r\\xe9sum\\xe9.md" in [p["id"] for p in results["check"]["problems"]]


def test_the_keeper_starts_and_skips_such_names_as_they_come(short_cache: Path, bad_vault: Path) -> None:
    keeper = start_keeper()
    try:
        root = os.fsencode(bad_vault)
        with open(os.path.join(root, b"n\xe9w.md"), "wb") as handle:
            handle.write(b"gamma\n")
        with open(os.path.join(root, BAD_FOLDER, b"more.md"), "wb") as handle:
            handle.write(b"gamma\n")
        write_file(bad_vault / "g.md", "gamma\n")
        searched = subprocess.run(
            [sys.executable, "-m", "amem", "search", "gamma"], capture_output=True, text=True, timeout=60
        )
        assert searched.returncode == 0, searched.stderr
        assert [hit["id"] for hit in json.loads(searched.stdout)["hits"]] == ["g.md"]
        listed = subprocess.run([sys.executable, "-m", "amem", "list"], capture_output=True, text=True, timeout=60)
        assert [n["id"] for n in json.loads(listed.stdout)["notes"]] == ["b.md", "g.md", "notes/a.md"]
        assert keeper.proc.poll() is None
    finally:
        keeper.stop(signal.SIGTERM)
    assert "could not update" not in keeper.stderr() and "not handled" not in keeper.stderr()


def test_an_id_that_is_not_utf8_is_refused_and_nothing_is_written(run: Any, bad_vault: Path) -> None:
    before = sorted(os.listdir(os.fsencode(bad_vault)))
    for args in (["read", "r\udce9sum\udce9"], ["write", "n\udce9w", "text"], ["delete", "r\udce9sum\udce9"]):
        refused = run(*args)
        assert refused.code == 5 and refused.error["code"] == "invalid_id"
        assert "\\xe9" in refused.error["message"]
    assert sorted(os.listdir(os.fsencode(bad_vault))) == before


def test_sync_pushes_such_a_file_and_names_only_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.gitrepo import clone, git, set_identity

    set_identity(monkeypatch)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    vault = clone(remote, tmp_path / "v")
    write_file(vault / "b.md", "beta\n")
    _bad_names(vault)
    proc = subprocess.run(
        [sys.executable, "-m", "amem", "--vault", str(vault), "sync"], capture_output=True, cwd=vault, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.decode("utf-8"))  # strict: a raw Latin-1 byte would not decode
    assert sorted(result["pushed"]) == ["b.md"]
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=vault, capture_output=True, check=True).stdout
    assert BAD_NOTE in tracked.split(b"\0")  # synced as the file it is, though no note
