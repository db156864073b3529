"""What an agent meets in a search (issue 42, SPEC §18): compact hits (`backlinkCount`, at most 5
`backlinks`), the file line a hit's snippet is on, and the agent's own queries (`--also`, MCP `queries`),
through the CLI, the installed amem beside a keeper, and the official MCP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amem.semantic import semantic
from tests.conftest import write_file
from tests.keeperproc import KeeperProcess
from tests.test_keeper_answers import alone, assert_same, probe
from tests.test_mcp import Client, cli, serve


def ids(result: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


# --- compact hits ----------------------------------------------------------------------------------------


def test_a_hit_linked_from_twelve_notes_counts_them_all_and_names_the_first_five(amem: Any, vault: Path) -> None:
    write_file(vault / "hub.md", "# Hub\n\nThe switchboard of the vault.\n")
    sources = [f"from-{n:02d}.md" for n in range(12)]
    for name in reversed(sources):
        write_file(vault / name, f"# {name}\n\nSee [[hub]].\n")
    result = amem("search", "switchboard")
    assert result.exit_code == 0, result.stderr
    (hit,) = result.json["hits"]
    assert hit["id"] == "hub.md" and hit["backlinkCount"] == 12
    assert hit["backlinks"] == sources[:5]


def test_a_hit_without_backlinks_counts_none(amem: Any, vault: Path) -> None:
    write_file(vault / "alone.md", "# Alone\n\nNo one links here.\n")
    (hit,) = amem("search", "alone").json["hits"]
    assert hit["backlinks"] == [] and hit["backlinkCount"] == 0


# --- the line of a hit ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "query", "line"),
    [
        # frontmatter counts, as an editor numbers the file's lines
        ("---\ntags: [a]\ntitle: T\n---\n# Notes\n\nfirst paragraph\n\nthe otter swims here\n", "otter", 9),
        # Windows line ends, and no frontmatter
        ("# Notes\r\n\r\nsome text\r\nan otter\r\n", "otter", 4),
        # the word matched case-insensitively after folding (full-width letters)
        ("---\na: 1\n---\nintro\n\nＯＴＴＥＲ lives here\n", "otter", 6),
        # no match in the body (the id only): the body's first line with text
        ("---\na: 1\n---\n\n\n# Heading\nbody text\n", "otter", 6),
    ],
)
def test_a_hits_line_is_the_files_line_its_snippet_is_on(
    amem: Any, vault: Path, text: str, query: str, line: int
) -> None:
    write_file(vault / "otter.md", text.encode())
    (hit,) = amem("search", query).json["hits"]
    assert hit["line"] == line
    on_the_line = (vault / "otter.md").read_bytes().decode().splitlines()[line - 1]
    assert on_the_line.strip() and " ".join(on_the_line.split())[-8:] in hit["snippet"]


def test_a_hits_line_past_the_first_megabyte(amem: Any, vault: Path) -> None:
    filler = "".join(f"line {n} of filler words\n" for n in range(60_000))
    write_file(vault / "big.md", "---\na: 1\n---\n" + filler + "the otter at last\n")
    (hit,) = amem("search", "otter").json["hits"]
    assert hit["line"] == 3 + 60_000 + 1 and "otter" in hit["snippet"]


# --- the agent's own queries ------------------------------------------------------------------------------


def two_notes(vault: Path) -> None:
    # the first query's note sorts after the second's by id: only the first query's double weight puts it first
    write_file(vault / "zz-first.md", "# Folding\n\nHow headings fold.\n")
    write_file(vault / "aa-second.md", "# Outline\n\nCollapse a section of the outline.\n")
    write_file(vault / "other.md", "# Other\n\nNothing to see.\n")


def test_also_finds_a_note_only_the_second_query_matches_and_the_first_query_weighs_double(
    amem: Any, vault: Path
) -> None:
    two_notes(vault)
    alone_result = amem("search", "fold")
    assert ids(alone_result.json) == ["zz-first.md"]
    result = amem("search", "fold", "--also", "collapse")
    assert result.exit_code == 0, result.stderr
    assert ids(result.json) == ["zz-first.md", "aa-second.md"]
    assert result.json["total"] == 2 and result.json["truncated"] is False
    first, second = result.json["hits"]
    assert first["score"] > second["score"]
    assert "Collapse" in second["snippet"] and second["line"] == 3
    # the other way round, the other note leads
    assert ids(amem("search", "collapse", "--also", "fold").json) == ["aa-second.md", "zz-first.md"]


def test_total_counts_the_notes_any_query_matches_and_limit_cuts_the_fused_list(amem: Any, vault: Path) -> None:
    two_notes(vault)
    result = amem("search", "fold", "--also", "collapse", "--also", "headings fold", "--limit", "1")
    assert ids(result.json) == ["zz-first.md"]
    assert result.json["total"] == 2 and result.json["truncated"] is True


def test_also_alone_is_the_query(amem: Any, vault: Path) -> None:
    two_notes(vault)
    assert ids(amem("search", "--also", "collapse").json) == ["aa-second.md"]


def test_explain_gives_each_hits_rank_in_every_query(amem: Any, vault: Path) -> None:
    two_notes(vault)
    result = amem("search", "fold", "--also", "collapse", "--explain")
    first, second = result.json["hits"]
    assert first["explain"]["queryRanks"] == [1, None] and first["explain"]["keywordRank"] == 1
    assert second["explain"]["queryRanks"] == [None, 1] and second["explain"]["keywordRank"] is None
    assert result.json["fusion"]["why"] == "off"


def test_six_queries_are_refused(amem: Any, vault: Path) -> None:
    two_notes(vault)
    also = [arg for word in ("b", "c", "d", "e", "f") for arg in ("--also", word)]
    result = amem("search", "a", *also)
    assert result.exit_code == 2 and result.error["code"] == "usage"
    assert "at most 5 queries" in result.error["message"]
    assert amem("search", "a", *also[:-2]).exit_code == 0


def test_exact_title_with_also_is_refused(amem: Any, vault: Path) -> None:
    two_notes(vault)
    result = amem("search", "--exact-title", "Folding", "--also", "collapse")
    assert result.exit_code == 2 and result.error["code"] == "usage"
    assert "--exact-title" in result.error["message"] and "--also" in result.error["message"]


@pytest.mark.usefixtures("short_cache")
def test_the_installed_amem_beside_a_keeper_answers_also_as_it_would_alone(
    tmp_path: Path, vault: Path, keeper: KeeperProcess
) -> None:
    two_notes(vault)
    args = ["search", "fold", "--also", "collapse", "--also", "headings"]
    kept = probe(tmp_path, *args)
    assert kept.by_keeper, kept.stderr
    assert kept.code == 0, kept.stderr
    assert ids(json.loads(kept.stdout)) == ["zz-first.md", "aa-second.md"]
    assert_same(kept, alone(tmp_path, *args))
    refused = [*args, "--also", "x", "--also", "y"]
    assert_same(probe(tmp_path, *refused), alone(tmp_path, *refused))


def test_mcp_queries_beside_or_instead_of_query(isolated_env: Path, vault: Path) -> None:
    two_notes(vault)
    results: dict[str, Any] = {}

    async def test(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        schema = listed["wiki_search"].input_schema
        assert "queries" in schema["properties"] and "query" not in schema.get("required", [])
        results["both"] = await client.ok("wiki_search", query="fold", queries=["collapse"])
        results["only"] = await client.ok("wiki_search", queries=["collapse", "fold"])
        results["six"] = await client.error("wiki_search", query="a", queries=["b", "c", "d", "e", "f"])
        results["none"] = await client.error("wiki_search")
        results["typed"] = await client.error("wiki_search", queries="collapse")

    serve(isolated_env, test)
    assert ids(results["both"]) == ["zz-first.md", "aa-second.md"]
    assert results["both"] == json.loads(cli(isolated_env, "search", "fold", "--also", "collapse").stdout)
    assert ids(results["only"]) == ["aa-second.md", "zz-first.md"]
    assert results["six"]["code"] == "usage" and "at most 5" in results["six"]["message"]
    assert results["none"]["code"] == "usage"
    assert results["typed"]["code"] == "usage" and "queries" in results["typed"]["message"]


@pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")
def test_with_semantic_search_on_each_query_is_ranked_by_meaning_too(amem: Any, vault: Path) -> None:
    two_notes(vault)
    result = amem("search", "--semantic", "fold", "--also", "collapse", "--explain")
    assert result.exit_code == 0, result.stderr
    assert result.json["fused"] is True and result.json["semantic"] == "ok"
    # other.md holds neither word: only the semantic rankings found it, and both did
    assert ids(result.json)[:2] == ["zz-first.md", "aa-second.md"] and "other.md" in ids(result.json)
    assert all(None not in hit["explain"]["queryRanks"] for hit in result.json["hits"])
    assert result.json["total"] == 3
