"""Bounded answers (SPEC §3): `--max-chars` / `maxChars` bound the characters of all bodies a read returns,
the note first, then linked notes nearest first, each cut at a line; `truncated` and `omitted` say what
was left out, and `version` is always the whole note's."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import load_config
from amem.ops.read import read_note
from tests.conftest import write_file
from tests.installed import installed_runner
from tests.test_mcp import Client, serve


def _records(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every record of a read, breadth-first: the note's own (the very object given), then its linked notes."""
    order, queue = [data], [data]
    while queue:
        queue = [linked for record in queue for linked in record["linkedNotes"]]
        order += queue
    return order


def _chain(vault: Path) -> None:
    """home -> a, b; a -> c: bodies of known lengths, in lines."""
    write_file(vault / "home.md", "# Home\n" + "home line\n" * 5 + "[[a]] [[b]]\n")  # 7 + 50 + 12 = 69
    write_file(vault / "a.md", "alpha line\n" * 3 + "[[c]]\n")  # 33 + 6 = 39
    write_file(vault / "b.md", "beta line\n" * 4)  # 40
    write_file(vault / "c.md", "gamma\n" * 10)  # 60


def test_the_cli_has_no_default_budget(tmp_path: Path, vault: Path) -> None:
    _chain(vault)
    data = installed_runner(tmp_path, vault)("read", "home", "--depth", "5").json
    assert [r["id"] for r in _records(data)] == ["home.md", "a.md", "b.md", "c.md"]
    assert "truncated" not in data and "omitted" not in data


def test_a_budget_keeps_the_note_then_the_nearest_and_names_the_rest(tmp_path: Path, vault: Path) -> None:
    _chain(vault)
    run = installed_runner(tmp_path, vault)
    whole = run("read", "home", "--depth", "5").json
    data = run("read", "home", "--depth", "5", "--max-chars", "130").json  # 69 + 39 fit, 22 left for b
    assert data["truncated"] is True
    assert data["body"] == whole["body"] and data["version"] == whole["version"]
    a, b = data["linkedNotes"]
    assert a["id"] == "a.md" and "truncated" not in a and a["linkedNotes"] == []  # c is farther than b
    assert b["id"] == "b.md" and b["truncated"] is True and b["body"] == "beta line\n" * 2
    assert b["version"] == whole["linkedNotes"][1]["version"]  # the whole note's
    assert data["omitted"] == ["c.md"]
    assert sum(len(r["body"]) for r in _records(data)) <= 130


def test_the_note_itself_is_cut_at_a_line(tmp_path: Path, vault: Path) -> None:
    _chain(vault)
    data = installed_runner(tmp_path, vault)("read", "home", "--max-chars", "30").json
    assert data["body"] == "# Home\nhome line\nhome line\n"
    assert data["truncated"] is True and data["linkedNotes"] == [] and data["omitted"] == ["a.md", "b.md"]


def test_a_budget_that_holds_everything_cuts_nothing(tmp_path: Path, vault: Path) -> None:
    _chain(vault)
    data = installed_runner(tmp_path, vault)("read", "home", "--depth", "5", "--max-chars", "208").json
    assert data["truncated"] is False and data["omitted"] == []
    assert [r["id"] for r in _records(data)] == ["home.md", "a.md", "b.md", "c.md"]


def test_a_negative_budget_is_a_usage_error(tmp_path: Path, vault: Path) -> None:
    _chain(vault)
    result = installed_runner(tmp_path, vault)("read", "home", "--max-chars", "-1")
    assert result.code == 2 and result.error["code"] == "usage"


def test_wiki_read_defaults_to_twenty_thousand_characters(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "big.md", "".join(f"line {i:05d} of a long note\n" for i in range(2000)) + "[[small]]\n")
    write_file(vault / "small.md", "small\n")

    async def test(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        description = listed["wiki_read"].description or ""
        assert "20,000" in description and "maxChars" in description
        assert listed["wiki_read"].input_schema["properties"]["maxChars"]["default"] == 20000
        data = await client.ok("wiki_read", id="big")
        assert len(data["body"]) <= 20000 and data["body"].endswith("\n")
        assert data["truncated"] is True and data["omitted"] == ["small.md"]
        whole = await client.ok("wiki_read", id="big", maxChars=10**9)
        assert whole["truncated"] is False and whole["version"] == data["version"]
        assert whole["body"].startswith(data["body"])
        small = await client.ok("wiki_read", id="big", maxChars=100)
        assert len(small["body"]) <= 100

    serve(isolated_env, test)


_counter = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_budget_property(tmp_path_factory: Any, data: st.DataObject) -> None:
    """Random link graphs and budgets: the bodies total at most the budget, every body is the whole one or
    a prefix ending at a line, the records kept are the unbounded read's nearest first, and `omitted`
    names exactly the linked notes left out."""
    vault = tmp_path_factory.mktemp("budget") / f"v{next(_counter)}"
    size = data.draw(st.integers(1, 7))
    names = [f"n{i}" for i in range(size)]
    for name in names:
        lines = data.draw(st.lists(st.text("ab é", max_size=12), max_size=6))
        links = data.draw(st.lists(st.sampled_from(names), max_size=3))
        text = "".join(line + "\n" for line in lines) + " ".join(f"[[{t}]]" for t in links)
        if data.draw(st.booleans()):
            text += "\n"
        write_file(vault / f"{name}.md", text)
    config = load_config(vault=vault)
    depth = data.draw(st.integers(0, 4))
    whole = read_note(config, "n0", depth)
    whole_order = _records(whole)
    bodies = {r["id"]: r["body"] for r in whole_order}
    total = sum(len(b) for b in bodies.values())
    budget = data.draw(st.integers(0, total + 5))
    cut = read_note(config, "n0", depth, max_chars=budget)
    order = _records(cut)
    assert sum(len(r["body"]) for r in order) <= budget
    kept = [r["id"] for r in order]
    assert kept == [r["id"] for r in whole_order][: len(kept)]  # nearest first: a prefix of the whole read
    assert cut["omitted"] == [r["id"] for r in whole_order][len(kept) :]
    assert cut["version"] == whole["version"]
    for record in order:
        full = bodies[record["id"]]
        if record is cut:
            assert record["body"] == full or full.startswith(record["body"])
        else:
            assert record.get("truncated", False) == (record["body"] != full)
        if record["body"] != full:
            assert full.startswith(record["body"]) and (record["body"] == "" or record["body"].endswith("\n"))
    assert cut["truncated"] == (bool(cut["omitted"]) or any(r["body"] != bodies[r["id"]] for r in order))
    assert cut["truncated"] == (budget < total)
