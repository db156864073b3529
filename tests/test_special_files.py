"""Only regular files are notes (SPEC §2): a FIFO named like a note is refused at once by every command,
through the installed `amem`, and never hangs one; every other note and command works as before. Every
run has a timeout, so a hang fails the test instead of wedging the suite."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.gitrepo import commit_all, init_repo, set_identity
from tests.installed import amem_bin, path_with

TIMEOUT = 30


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))


@pytest.fixture
def fifo_vault(vault: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A git vault holding `ok.md` (which links to the FIFO) and the FIFO `f.md`; the ok note's commit."""
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "ok.md", "hello world [[f]] [[sub/g]]\n")
    write_file(vault / "f.md", "once a note\n")
    head = commit_all(vault, "notes")
    (vault / "f.md").unlink()
    os.mkfifo(vault / "f.md")
    (vault / "sub").mkdir()
    os.mkfifo(vault / "sub/g.md")
    os.symlink("f.md", vault / "link.md")  # a symlink inside the vault to the FIFO
    return {"head": head}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["amem", *args], env=env, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL
    )


def refused(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode in (3, 5), (result.returncode, result.stderr)
    error: dict[str, Any] = json.loads(result.stderr)["error"]
    assert error["code"] in ("not_found", "invalid_id")
    assert "regular file" in error["message"] and "/" not in error["message"].replace("sub/g.md", "")
    return error


EMPTY = "da39a3ee5e6b4b0d3255bfef95601890afd80709"


@pytest.mark.parametrize(
    "args",
    [
        ["read", "f"],
        ["read", "link"],
        ["read", "sub/g"],
        ["write", "f", "x"],
        ["write", "f", "x", "--overwrite"],
        ["write", "link", "x", "--overwrite", "--base-version", EMPTY],
        ["move", "f", "moved"],
        ["move", "ok", "f"],
        ["delete", "f", "--base-version", EMPTY],
        ["history", "f"],
    ],
)
def test_every_command_refuses_a_fifo_at_once(
    fifo_vault: dict[str, str], vault: Path, env: dict[str, str], args: list[str]
) -> None:
    refused(run(env, *args))
    assert stat.S_ISFIFO(os.lstat(vault / "f.md").st_mode)
    assert (vault / "ok.md").read_text() == "hello world [[f]] [[sub/g]]\n"
    assert not (vault / "moved.md").exists()


def test_restore_onto_a_fifo_is_refused(fifo_vault: dict[str, str], vault: Path, env: dict[str, str]) -> None:
    refused(run(env, "restore", "f", fifo_vault["head"], "--base-version", EMPTY))
    assert stat.S_ISFIFO(os.lstat(vault / "f.md").st_mode)


def test_every_other_note_and_command_works(fifo_vault: dict[str, str], vault: Path, env: dict[str, str]) -> None:
    ok = run(env, "read", "ok", "--depth", "2")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["linkedNotes"] == []
    for args in (["search", "hello"], ["list"], ["index"], ["write", "ok", "more"]):
        result = run(env, *args)
        assert result.returncode == 0, (args, result.stderr)
    assert [hit["id"] for hit in json.loads(run(env, "search", "hello").stdout)["hits"]] == ["ok.md"]
    assert [n["id"] for n in json.loads(run(env, "list").stdout)["notes"]] == ["ok.md"]
    completion = subprocess.run(
        ["amem"],
        env=dict(env, COMP_WORDS="amem read ", COMP_CWORD="2", _AMEM_COMPLETE="bash_complete"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert completion.returncode == 0, completion.stderr
    offered = {line.split(",", 1)[1] for line in completion.stdout.splitlines()}
    assert offered == {"ok"}


def test_the_mcp_tools_refuse_a_fifo(isolated_env: Path, fifo_vault: dict[str, str], vault: Path) -> None:
    from tests.test_mcp import Client, serve

    async def test(client: Client) -> None:
        for name, arguments in (
            ("wiki_read", {"id": "f"}),
            ("wiki_write", {"id": "f", "content": "x", "mode": "overwrite"}),
            ("wiki_delete", {"id": "f", "baseVersion": EMPTY}),
        ):
            error = await client.error(name, **arguments)
            assert error["code"] in ("not_found", "invalid_id") and "regular file" in error["message"], name
        assert (await client.ok("wiki_read", id="ok"))["linkedNotes"] == []

    serve(isolated_env, test)


def test_opening_a_note_that_became_a_fifo_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    """The race behind every check above: a note replaced by a FIFO between a stat and the open. The one
    opener of note files refuses it at once instead of waiting for a writer that never comes."""
    from amem.notes.ids import NotARegularFile, read_regular

    fifo = tmp_path / "raced.md"
    os.mkfifo(fifo)
    outcome: list[BaseException | bytes] = []
    worker = threading.Thread(target=lambda: outcome.append(_attempt(read_regular, fifo)), daemon=True)
    worker.start()
    worker.join(TIMEOUT)
    if worker.is_alive():
        with open(fifo, "wb"):  # let the blocked open go, so the thread ends
            pass
        raise AssertionError("opening a FIFO waited for a writer")
    assert isinstance(outcome[0], NotARegularFile) and isinstance(outcome[0], OSError)
    assert read_regular(write_file(tmp_path / "plain.md", "plain")) == b"plain"


def _attempt(reader: Any, path: Path) -> BaseException | bytes:
    try:
        data: bytes = reader(path)
    except BaseException as exc:  # noqa: BLE001 - the outcome is what the test checks
        return exc
    return data
