"""A name with a folder never falls back to another folder (SPEC §2 "Links", §3 "Names resolve as links
do"): `[[projects/gamma/plan]]` resolves by exact path or path suffix only, so with no such note it is a
broken link, and `read projects/gamma/plan` is not found, never `old/2019/plan.md`. A bare name still finds
its note anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.gitrepo import commit_all, init_repo, set_identity
from tests.installed import installed_runner
from tests.test_mcp import Client, serve

LINK = "Plan for gamma: [[projects/gamma/plan]].\n"


@pytest.fixture
def plans(vault: Path) -> Path:
    write_file(vault / "old/2019/plan.md", "# Plan 2019\n")
    write_file(vault / "a.md", LINK)
    return vault


def test_read_and_history_of_a_folder_name_that_no_path_matches_are_not_found(
    tmp_path: Path, plans: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_identity(monkeypatch)
    init_repo(plans)
    commit_all(plans, "first")
    run = installed_runner(tmp_path, plans)
    for command in ("read", "history"):
        result = run(command, "projects/gamma/plan")
        assert result.code == 3, (command, result.stdout)
        assert result.error["code"] == "not_found"
    # what still resolves: a path suffix at a `/`, and a bare name anywhere
    for name in ("2019/plan", "old/2019/PLAN.md", "plan", "Plan.md"):
        data = run("read", name).json
        assert data["id"] == "old/2019/plan.md" and data["resolvedFrom"] == name
    assert run("history", "2019/plan").json["id"] == "old/2019/plan.md"


def test_such_a_link_is_no_backlink_and_check_calls_it_broken(plans: Path, amem: Any) -> None:
    read = amem("read", "old/2019/plan")
    assert read.exit_code == 0, read.stderr
    assert read.json["backlinks"] == []
    linking = amem("read", "a").json
    assert [(link["target"], link["resolved"]) for link in linking["links"]] == [("projects/gamma/plan", None)]
    assert linking["linkedNotes"] == []
    checked = amem("check")
    assert checked.exit_code == 11, checked.stdout
    broken = [p for p in checked.json["problems"] if p["kind"] == "broken-link"]
    assert [(p["id"], p["target"], p["line"]) for p in broken] == [("a.md", "projects/gamma/plan", 1)]


def test_the_index_keeps_the_rule_as_notes_come_and_go(plans: Path, amem: Any) -> None:
    """An index kept up to date answers as a fresh one: the link finds a note at its path when one
    appears, and no other when it goes."""
    assert amem("read", "old/2019/plan").json["backlinks"] == []
    write_file(plans / "projects/gamma/plan.md", "# Gamma's plan\n")
    assert amem("read", "projects/gamma/plan").json["backlinks"] == ["a.md"]
    write_file(plans / "elsewhere/plan.md", "# Another plan\n")
    (plans / "projects/gamma/plan.md").unlink()
    for note in ("old/2019/plan", "elsewhere/plan"):
        assert amem("read", note).json["backlinks"] == [], note
    assert amem("read", "a").json["links"][0]["resolved"] is None
    kept = amem("check").json["problems"]
    assert amem("index", "--rebuild").exit_code == 0
    assert amem("check").json["problems"] == kept
    assert [(p["id"], p["target"]) for p in kept if p["kind"] == "broken-link"] == [("a.md", "projects/gamma/plan")]


def test_a_move_leaves_such_a_link_alone(plans: Path, amem: Any) -> None:
    moved = amem("move", "old/2019/plan", "archive/plan")
    assert moved.exit_code == 0, moved.stderr
    assert moved.json["rewritten"] == []
    assert (plans / "a.md").read_text() == LINK


def test_read_of_the_old_name_after_a_move_is_not_another_note(tmp_path: Path, vault: Path, amem: Any) -> None:
    write_file(vault / "folder/old.md", "the one that moves\n")
    write_file(vault / "other/old.md", "another note of that name\n")
    assert amem("move", "folder/old", "folder/new").exit_code == 0
    result = installed_runner(tmp_path, vault)("read", "folder/old")
    assert result.code == 3, result.stdout
    assert result.error == {"code": "not_found", "message": 'cannot read note "folder/old.md": no such note'}


def test_wiki_read_of_such_a_name_is_not_found(isolated_env: Path, plans: Path) -> None:
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        found["missing"] = await client.error("wiki_read", id="projects/gamma/plan")
        found["bare"] = await client.ok("wiki_read", id="plan")

    serve(isolated_env, test)
    assert found["missing"]["code"] == "not_found"
    assert found["bare"]["id"] == "old/2019/plan.md"
