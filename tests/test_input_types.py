"""Inputs are checked alike everywhere: every integer option and every integer argument of the MCP tools
takes at most 1,000,000,000 and refuses a larger one as a `usage` error naming it (never `internal`); an MCP
argument of another JSON type than declared is refused, never coerced; GraphML gives each node its own id,
whatever characters the note's id holds. The CLI through the installed `amem`, the tools through a real SDK
client."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from amem.errors import ConfigError
from tests.conftest import write_file
from tests.installed import installed_runner
from tests.test_mcp import Client, serve

MAXIMUM = 1_000_000_000
HUGE = str(10**20)

#: Every integer option, as a command line with its value last.
INTEGER_OPTIONS = [
    ("search", "plan", "--limit"),
    ("list", "--limit"),
    ("read", "a", "--depth"),
    ("read", "a", "--max-chars"),
    ("graph", "--from", "a", "--depth"),
    ("history", "a", "--limit"),
    ("watch", "--debounce-ms"),
    ("mcp", "--http", "127.0.0.1:0", "--max-connections"),
]


@pytest.mark.parametrize("line", INTEGER_OPTIONS, ids=lambda line: " ".join(line))
def test_an_integer_option_over_the_maximum_is_a_usage_error(
    tmp_path: Path, vault: Path, line: tuple[str, ...]
) -> None:
    write_file(vault / "a.md", "# A plan\n")
    run = installed_runner(tmp_path, vault)
    for value in (HUGE, str(MAXIMUM + 1)):
        result = run(*line, value)
        assert result.code == 2, (line, value, result.stderr)
        assert result.error["code"] == "usage"
        assert f"'{line[-1]}'" in result.error["message"] and str(MAXIMUM) in result.error["message"]


def test_every_integer_option_documents_the_maximum_and_takes_it(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "a.md", "# A plan\n")
    run = installed_runner(tmp_path, vault)
    for line in (("search", "plan", "--limit"), ("list", "--limit"), ("read", "a", "--max-chars")):
        result = run(*line, str(MAXIMUM))
        assert result.code == 0, (line, result.stderr)
    commands = re.findall(r"^  (\w+) ", run("--help").stdout, re.M)
    ranges = []
    for command in commands:
        ranges += re.findall(r"\[(?:default: [^;\]]*; )?((?:[0-9]+<=)?x[<>]=[0-9]+)\]", run(command, "--help").stdout)
    assert len(ranges) == len(INTEGER_OPTIONS), ranges
    assert all(r.endswith(f"<=x<={MAXIMUM}") for r in ranges), ranges


# --- the MCP tools ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "argument"),
    [
        ("wiki_search", {"query": "plan", "maxResults": 1e20}, "maxResults"),
        ("wiki_search", {"query": "plan", "maxResults": 10**20}, "maxResults"),
        ("wiki_list", {"maxResults": 10**20}, "maxResults"),
        ("wiki_read", {"id": "a", "maxChars": 10**20}, "maxChars"),
        ("wiki_read", {"id": "a", "depth": MAXIMUM + 1}, "depth"),
        ("wiki_history", {"id": "a", "limit": 10**20}, "limit"),
        ("wiki_read", {"id": "a", "depth": "2"}, "depth"),
        ("wiki_search", {"query": "plan", "maxResults": "5"}, "maxResults"),
        ("wiki_history", {"id": "a", "limit": True}, "limit"),
        ("wiki_search", {"query": "plan", "explain": "true"}, "explain"),
        ("wiki_write", {"id": "a", "content": "more", "requireExisting": "true"}, "requireExisting"),
        ("wiki_edit", {"id": "a", "find": "plan", "replace": "idea", "all": 1}, "all"),
        ("wiki_read", {"id": 5}, "id"),
    ],
)
def test_a_tool_refuses_a_value_out_of_range_or_of_another_type(
    isolated_env: Path, vault: Path, name: str, arguments: dict[str, Any], argument: str
) -> None:
    note = write_file(vault / "a.md", "# A plan\n")
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        found["error"] = await client.error(name, **arguments)

    serve(isolated_env, test)
    error = found["error"]
    assert error["code"] == "usage", error
    assert f'argument "{argument}" must be' in error["message"] and "nothing was done" in error["message"], error
    assert note.read_text() == "# A plan\n"


def test_every_integer_argument_declares_the_maximum_and_takes_it(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "a.md", "# A plan\n")
    integers: list[tuple[str, str, Any]] = []
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        for tool in (await client.session.list_tools()).tools:
            for argument, schema in tool.input_schema["properties"].items():
                kinds = schema.get("type")
                if kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds):
                    integers.append((tool.name, argument, schema.get("maximum")))
        found["search"] = await client.ok("wiki_search", query="plan", maxResults=MAXIMUM, explain=False)
        found["read"] = await client.ok("wiki_read", id="a", depth=2, maxChars=MAXIMUM)
        found["write"] = await client.ok("wiki_write", id="a", content="more", requireExisting=True)

    serve(isolated_env, test)
    assert [hit["id"] for hit in found["search"]["hits"]] == ["a.md"]
    assert found["read"]["id"] == "a.md" and found["write"]["id"] == "a.md"
    assert {(name, argument) for name, argument, _ in integers} >= {
        ("wiki_read", "depth"),
        ("wiki_search", "maxResults"),
        ("wiki_list", "maxResults"),
        ("wiki_history", "limit"),
    }
    assert all(maximum == MAXIMUM for _, _, maximum in integers), integers


# --- GraphML ---------------------------------------------------------------------------------------------


def test_graphml_gives_ids_that_differ_only_by_a_character_xml_cannot_hold_their_own_node(
    tmp_path: Path, vault: Path
) -> None:
    write_file(vault / "x\x01y.md", "[[xy]] [[ghost\x01]] [[ghost\x02]] [[ghost]]\n")
    write_file(vault / "x\x02y.md", "[[xy]]\n")
    write_file(vault / "xy.md", "[[x\x01y]]\n")
    run = installed_runner(tmp_path, vault)
    result = run("graph", "--format", "graphml", "--missing")
    assert result.code == 0, result.stderr
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    graph = ET.fromstring(result.stdout.encode()).find("g:graph", ns)
    assert graph is not None
    ids = [node.get("id") for node in graph.findall("g:node", ns)]
    expected = run("graph", "--missing").json
    assert len(ids) == len(set(ids)) == len(expected["nodes"]) == 6
    assert "xy.md" in ids and "ghost" in ids  # an id XML can hold stays as it is
    edges = [(edge.get("source"), edge.get("target")) for edge in graph.findall("g:edge", ns)]
    assert len(edges) == len(expected["edges"])
    assert all(source in ids and target in ids for source, target in edges)
    by_json = dict(zip([n["id"] for n in expected["nodes"]], ids, strict=True))
    assert edges == [(by_json[e["from"]], by_json[e["to"]]) for e in expected["edges"]]


def test_a_config_integer_past_the_maximum_is_a_config_error(isolated_env: Path, amem: Any) -> None:
    (isolated_env / ".amem").mkdir()
    (isolated_env / ".amem/config.yaml").write_text("maxSearchResults: 100000000000000000000\n")
    result = amem("search", "x")
    assert result.exit_code == ConfigError.exit_code
    assert "maxSearchResults" in result.error["message"] and "1000000000" in result.error["message"]
