"""Reading part of a note (SPEC §18): `read --lines A-B` (the file's lines as an editor numbers them) and
`read --section HEADING` (the section as `edit --section` finds it) return that part as `body` with
`lines: {from, to, total}`, while `version` stays the whole note's; the same through `amem batch`, a live
keeper, the console script and MCP `wiki_read`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.keeperproc import KeeperProcess
from tests.test_keeper_answers import alone, assert_same, console, probe
from tests.test_mcp import Client, serve

NOTE = (
    "---\n"
    "title: Auth\n"
    "---\n"
    "# Auth\n"
    "\n"
    "Tokens are checked. [[keys]]\n"
    "\n"
    "## Status\n"
    "\n"
    "Rotating keys weekly.\n"
    "\n"
    "```\n"
    "## Next\n"
    "```\n"
    "\n"
    "### Open questions\n"
    "\n"
    "Who signs?\n"
    "\n"
    "\n"
    "## Next\n"
    "\n"
    "Ship it.\n"
)
FILE_LINES = NOTE.splitlines(keepends=True)


@pytest.fixture
def note(vault: Path) -> Path:
    write_file(vault / "keys.md", "# Keys\n\nSigning keys.\n")
    return write_file(vault / "auth.md", NOTE)


def lines_of(first: int, last: int) -> str:
    return "".join(FILE_LINES[first - 1 : last])


# --- --lines ----------------------------------------------------------------------------------------------


def test_lines_are_the_files_own_frontmatter_included_and_version_is_the_whole_notes(amem: Any, note: Path) -> None:
    whole = amem("read", "auth").json
    part = amem("read", "auth", "--lines", "2-5")
    assert part.exit_code == 0, part.stderr
    data = part.json
    assert data["body"] == "title: Auth\n---\n# Auth\n\n" == lines_of(2, 5)
    assert data["lines"] == {"from": 2, "to": 5, "total": len(FILE_LINES)}
    assert data["version"] == whole["version"]
    assert data["frontmatter"] == {"title": "Auth"} and data["title"] == "Auth"
    assert "lines" not in whole


@pytest.mark.parametrize(
    ("asked", "first", "last"),
    [("20-", 20, 23), ("6", 6, 6), ("21-500", 21, 23), (" 3 - 4 ", 3, 4), ("23-23", 23, 23)],
)
def test_a_range_to_the_end_one_line_and_an_end_past_the_files(
    amem: Any, note: Path, asked: str, first: int, last: int
) -> None:
    data = amem("read", "auth", f"--lines={asked}").json
    assert data["body"] == lines_of(first, last)
    assert data["lines"] == {"from": first, "to": last, "total": 23}


def test_a_start_past_the_end_is_a_usage_error_that_says_how_many_lines_there_are(amem: Any, note: Path) -> None:
    result = amem("read", "auth", "--lines", "24-30")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.error["code"] == "usage" and result.error["total"] == 23
    assert "it has 23 lines" in result.error["message"]


@pytest.mark.parametrize(("asked", "says"), [("5-3", "after the last"), ("0-3", "from 1"), ("2-0", "from 1")])
def test_a_backward_or_zero_range_is_a_usage_error(amem: Any, note: Path, asked: str, says: str) -> None:
    result = amem("read", "auth", "--lines", asked)
    assert result.exit_code == 2 and result.error["code"] == "usage"
    assert says in result.error["message"] and "Traceback" not in result.stderr


@pytest.mark.parametrize("asked", ["", "abc", "3-x", "-4", "1-2-3", "1,3", "٣-٤"])
def test_a_malformed_range_is_a_usage_error_naming_the_forms(amem: Any, note: Path, asked: str) -> None:
    result = amem("read", "auth", f"--lines={asked}")
    assert result.exit_code == 2 and result.error["code"] == "usage"
    assert "A-B" in result.error["message"]


def test_a_range_of_a_missing_note_is_not_found(amem: Any, vault: Path) -> None:
    result = amem("read", "nowhere", "--lines", "1-2")
    assert result.exit_code == 3 and result.error["code"] == "not_found"


def test_lines_keep_crlf_and_leave_a_bom_out(amem: Any, vault: Path) -> None:
    write_file(vault / "win.md", "\ufeff# Win\r\n\r\nfirst\r\nsecond")
    data = amem("read", "win", "--lines", "3-").json
    assert data["body"] == "first\r\nsecond" and data["lines"] == {"from": 3, "to": 4, "total": 4}
    assert amem("read", "win", "--lines", "1").json["body"] == "# Win\r\n"


# --- --section ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("heading", ["Status", "## Status", "##status", "  STATUS  "])
def test_a_section_runs_from_its_heading_to_the_next_of_its_level(amem: Any, note: Path, heading: str) -> None:
    data = amem("read", "auth", "--section", heading).json
    # the `## Next` in the code block ends nothing; the subsection is part of it; trailing blanks are not
    assert data["body"] == lines_of(8, 18) and data["body"].startswith("## Status\n")
    assert data["lines"] == {"from": 8, "to": 18, "total": 23}
    assert amem("read", "auth", "--lines", "8-18").json["body"] == data["body"]


def test_the_last_section_and_a_subsection(amem: Any, note: Path) -> None:
    last = amem("read", "auth", "--section", "next").json
    assert last["body"] == "## Next\n\nShip it.\n" and last["lines"] == {"from": 21, "to": 23, "total": 23}
    sub = amem("read", "auth", "--section", "### Open Questions").json
    assert sub["body"] == "### Open questions\n\nWho signs?\n" and sub["lines"]["from"] == 16


def test_a_heading_at_another_level_than_named_is_not_found(amem: Any, note: Path) -> None:
    result = amem("read", "auth", "--section", "# Status")
    assert result.exit_code == 2 and result.error["matches"] == 0


def test_a_missing_or_repeated_heading_is_the_error_edit_gives(amem: Any, vault: Path, note: Path) -> None:
    result = amem("read", "auth", "--section", "Nowhere")
    edited = amem("edit", "auth", "--section", "Nowhere", "x")
    assert result.exit_code == edited.exit_code == 2
    assert result.error["code"] == edited.error["code"] == "usage"
    assert result.error["matches"] == edited.error["matches"] == 0
    assert '"Nowhere" occurs 0 times' in result.error["message"]
    write_file(vault / "twice.md", "## Log\n\na\n\n## Log\n\nb\n")
    twice = amem("read", "twice", "--section", "Log")
    assert twice.exit_code == 2 and twice.error["matches"] == 2 and "occurs 2 times" in twice.error["message"]


def test_an_empty_heading_and_lines_with_section_are_refused(amem: Any, note: Path) -> None:
    empty = amem("read", "auth", "--section", "##")
    assert empty.exit_code == 2 and "no heading" in empty.error["message"]
    both = amem("read", "auth", "--lines", "1-2", "--section", "Status")
    assert both.exit_code == 2 and both.error["code"] == "usage" and "not both" in both.error["message"]


# --- with links and a budget ------------------------------------------------------------------------------


def test_a_part_follows_links_only_with_an_explicit_depth(amem: Any, note: Path) -> None:
    part = amem("read", "auth", "--section", "Auth").json
    assert part["linkedNotes"] == [] and [link["resolved"] for link in part["links"]] == ["keys.md"]
    deep = amem("read", "auth", "--lines", "20-", "--depth", "1").json
    assert [linked["id"] for linked in deep["linkedNotes"]] == ["keys.md"]  # the whole note's links
    assert deep["body"] == lines_of(20, 23)


def test_a_budget_cuts_the_part_and_to_says_the_last_line_kept(amem: Any, note: Path) -> None:
    data = amem("read", "auth", "--section", "Status", "--max-chars", "25").json
    assert data["truncated"] is True
    assert data["body"] == "## Status\n\nRotating keys weekly.\n"[:11] == lines_of(8, 9)
    assert data["lines"] == {"from": 8, "to": 9, "total": 23}


# --- a guarded edit after a part read, and batch ------------------------------------------------------------


def test_the_version_a_part_read_gives_guards_an_edit_of_that_section(amem: Any, vault: Path, note: Path) -> None:
    part = amem("read", "auth", "--section", "Next").json
    edited = amem("edit", "auth", "--section", "Next", "Shipped.", "--base-version", part["version"])
    assert edited.exit_code == 0, edited.stderr
    again = amem("read", "auth", "--section", "Next").json
    assert again["body"] == "## Next\n\nShipped.\n" and again["version"] == edited.json["version"]
    stale = amem("edit", "auth", "--section", "Next", "No.", "--base-version", part["version"])
    assert stale.exit_code == 4 and stale.error["code"] == "conflict"


def test_batch_lines_read_parts_as_the_command_does(amem: Any, note: Path) -> None:
    lines = [
        ["read", "auth", "--lines", "3-5"],
        ["read", "auth", "--section", "Next"],
        ["read", "auth", "--lines", "9-2"],
    ]
    result = amem("batch", input="".join(json.dumps(line) + "\n" for line in lines))
    assert result.exit_code == 0, result.stderr
    first, second, bad = (json.loads(line) for line in result.stdout.splitlines())
    assert first["exit"] == 0 and first["result"]["body"] == lines_of(3, 5)
    assert second["result"] == amem("read", "auth", "--section", "Next").json
    assert bad["exit"] == 2 and bad["error"]["code"] == "usage" and "after the last" in bad["error"]["message"]


# --- a live keeper and the console script -------------------------------------------------------------------


@pytest.mark.usefixtures("short_cache")
def test_a_keeper_and_the_console_script_answer_a_part_as_the_command_would(
    tmp_path: Path, note: Path, keeper: KeeperProcess
) -> None:
    for args in (["read", "auth", "--lines", "2-5"], ["read", "auth", "--section", "## Status", "--depth", "1"]):
        kept = probe(tmp_path, *args)
        own = alone(tmp_path, *args)
        assert kept.by_keeper and own.code == 0, kept.stderr
        assert_same(kept, own)
        assert json.loads(own.stdout)["lines"]["from"] in (2, 8)
        shimmed, loaded = console(tmp_path, *args)
        assert_same(shimmed, own)
        assert "click" not in loaded
    refused = ["read", "auth", "--section", "Nowhere"]
    kept, own = probe(tmp_path, *refused), alone(tmp_path, *refused)
    assert own.code == 2 and json.loads(own.stderr)["error"]["matches"] == 0
    assert_same(kept, own)


# --- MCP ----------------------------------------------------------------------------------------------------


def test_wiki_read_takes_lines_and_section(isolated_env: Path, vault: Path, note: Path) -> None:
    async def test(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        properties = listed["wiki_read"].input_schema["properties"]
        assert {"lines", "section"} <= set(properties)
        ranged = await client.ok("wiki_read", id="auth", lines="8-10")
        assert ranged["body"] == lines_of(8, 10) and ranged["lines"] == {"from": 8, "to": 10, "total": 23}
        section = await client.ok("wiki_read", id="auth", section="next")
        assert section["body"] == "## Next\n\nShip it.\n" and section["linkedNotes"] == []
        whole = await client.ok("wiki_read", id="auth")
        assert section["version"] == ranged["version"] == whole["version"]
        both = await client.error("wiki_read", id="auth", lines="1-2", section="next")
        assert both["code"] == "usage" and "not both" in both["message"]
        missing = await client.error("wiki_read", id="auth", section="nowhere")
        assert missing["code"] == "usage" and missing["matches"] == 0
        edited = await client.ok(
            "wiki_edit", id="auth", section="Next", content="Shipped.", baseVersion=section["version"]
        )
        assert edited["replaced"] == 1

    serve(isolated_env, test)
