"""A frontmatter value that looks like a date or a time and is not one (`2024-02-30`, `2023-11-31`,
`2024-01-01 25:61:61`) is a plain string (SPEC §2): the note reads, and no other note or command breaks,
whatever key holds it, nested values and lists included. Run through the installed `amem`, as a note
arriving by sync would meet it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.installed import amem_bin, path_with

BAD_NOTES = {
    "due": ("---\ndue: 2024-02-30\n---\nbad due\n", {"due": "2024-02-30"}),
    "created": ("---\ncreated: 2023-11-31\ntitle: Nov\n---\nbad created\n", {"created": "2023-11-31", "title": "Nov"}),
    "time": ("---\nupdated: 2024-01-01 25:61:61\n---\nbad time\n", {"updated": "2024-01-01 25:61:61"}),
    "offset": ("---\nat: 2024-01-01T10:00:00+99:00\n---\nbad offset\n", {"at": "2024-01-01T10:00:00+99:00"}),
    "list": ("---\ntags: [a, 2024-02-30]\n---\nbad list\n", {"tags": ["a", "2024-02-30"]}),
    "nested": (
        "---\nmeta:\n  when: 2023-11-31\n  items:\n    - 2024-13-01\n---\nbad nested\n",
        {"meta": {"when": "2023-11-31", "items": ["2024-13-01"]}},
    ),
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["amem", *args], env=env, input=stdin, capture_output=True, text=True, timeout=60)


def ok(env: dict[str, str], *args: str, stdin: str | None = None) -> Any:
    result = run(env, *args, stdin=stdin)
    assert result.returncode == 0, (args, result.stderr)
    return json.loads(result.stdout)


@pytest.mark.parametrize("kind", sorted(BAD_NOTES))
def test_one_impossible_date_breaks_no_command(vault: Path, env: dict[str, str], kind: str) -> None:
    text, frontmatter = BAD_NOTES[kind]
    write_file(vault / "bad.md", text)
    write_file(vault / "good.md", "---\ncreated: 2024-02-29\n---\nthe good note [[bad]]\n")
    assert ok(env, "read", "bad")["frontmatter"] == frontmatter
    good = ok(env, "read", "good")
    assert good["frontmatter"] == {"created": "2024-02-29"}
    assert [n["id"] for n in good["linkedNotes"]] == ["bad.md"]
    assert {hit["id"] for hit in ok(env, "search", "bad")["hits"]} == {"bad.md", "good.md"}
    assert {n["id"] for n in ok(env, "list")["notes"]} == {"bad.md", "good.md"}
    assert ok(env, "index")["notes"] == 2


def test_writes_keep_an_impossible_date_as_text(vault: Path, env: dict[str, str]) -> None:
    content = "---\ndue: 2024-02-30\ncreated: 2023-11-31\n---\nnew body\n"
    ok(env, "write", "new", "-", "--overwrite", stdin=content)
    fm = ok(env, "read", "new")["frontmatter"]
    assert fm["due"] == "2024-02-30" and fm["created"] == "2023-11-31"
    written = (vault / "new.md").read_text()
    assert "2024-02-30" in written and "2023-11-31" in written
    ok(env, "write", "new", "more", "--append")
    assert "more" in (vault / "new.md").read_text()
    version = ok(env, "read", "new")["version"]
    replaced = "---\ncreated: 2024-01-01 25:61:61\nupdated: 2023-11-31\n---\nreplaced\n"
    ok(env, "write", "new", "-", "--overwrite", "--base-version", str(version), stdin=replaced)
    fm = ok(env, "read", "new")["frontmatter"]
    assert fm["created"] == "2024-01-01 25:61:61"
    assert isinstance(fm["updated"], str) and fm["updated"] != "2023-11-31"  # stamped now


def test_a_moment_that_falls_off_the_calendar_in_the_zone_stays_as_written(vault: Path, env: dict[str, str]) -> None:
    west = dict(env, AMEM_TZ="-08:00")
    early = "---\ncreated: 0001-01-01T01:00:00+05:00\n---\nearly\n"
    ok(west, "write", "early", "-", "--overwrite", stdin=early)
    version = ok(west, "read", "early")["version"]
    ok(west, "write", "early", "-", "--overwrite", "--base-version", str(version), stdin=early)
    assert ok(west, "read", "early")["frontmatter"]["created"] == "0001-01-01T01:00:00+05:00"


def test_the_index_keeper_starts_and_keeps_going(vault: Path, env: dict[str, str]) -> None:
    write_file(vault / "bad.md", BAD_NOTES["nested"][0])
    proc = subprocess.Popen(
        ["amem", "index", "--watch"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=30)[1]
        assert json.loads(line)
        write_file(vault / "later.md", BAD_NOTES["due"][0].replace("bad due", "arrived later"))
        hits = ok(env, "search", "arrived")["hits"]
        assert [hit["id"] for hit in hits] == ["later.md"]
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def test_the_mcp_tools_answer(isolated_env: Path, vault: Path) -> None:
    from tests.test_mcp import Client, serve

    write_file(vault / "bad.md", BAD_NOTES["due"][0])
    write_file(vault / "good.md", "good note\n")

    async def test(client: Client) -> None:
        assert (await client.ok("wiki_read", id="bad"))["frontmatter"] == {"due": "2024-02-30"}
        assert (await client.ok("wiki_read", id="good"))["body"] == "good note\n"
        hits = (await client.ok("wiki_search", query="bad"))["hits"]
        assert [hit["id"] for hit in hits] == ["bad.md"]
        assert len((await client.ok("wiki_list"))["notes"]) == 2

    serve(isolated_env, test)


def test_an_impossible_date_in_the_config_is_a_config_error(tmp_path: Path, vault: Path, env: dict[str, str]) -> None:
    config = write_file(tmp_path / "config.yaml", "bundleVersion: 2024-02-30\n")
    result = run(dict(env, AMEM_CONFIG=str(config)), "read", "x")
    assert result.returncode == 7, result.stderr
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "config" and "not a real date" in error["message"]
