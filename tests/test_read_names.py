"""Read by name (SPEC §3): `read`, `history` and their MCP tools accept what a [[link]] accepts, then a
frontmatter alias; writes keep exact ids and refuse a new note that is another's case twin (SPEC §2)."""

from __future__ import annotations

import os
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.gitrepo import commit_all, init_repo, set_identity
from tests.installed import installed_runner
from tests.test_mcp import Client, serve


@pytest.fixture
def names_vault(vault: Path) -> Path:
    write_file(vault / "Internal links.md", "# Internal links\nSee [[Graph View]].\n")
    write_file(vault / "plugins/Graph View.md", "---\naliases: [Graph, 'The Map']\n---\nThe graph.\n")
    write_file(vault / "a/Daily.md", "---\naliases: Journal\n---\nA's daily.\n")
    write_file(vault / "b/Daily.md", "b's daily\n")
    write_file(vault / "home.md", "the home note\n")
    return vault


@pytest.mark.parametrize(
    ("name", "real", "alternatives"),
    [
        ("internal links", "Internal links.md", None),  # case
        ("INTERNAL LINKS.md", "Internal links.md", None),  # case, with the extension
        ("Graph View", "plugins/Graph View.md", None),  # base name
        ("plugins/graph view", "plugins/Graph View.md", None),  # exact path, another case
        ("daily", "a/Daily.md", ["b/Daily.md"]),  # base name, two notes: the tie-break, and the other
        ("b/daily", "b/Daily.md", None),
        ("the map", "plugins/Graph View.md", None),  # an alias in a list
        ("journal", "a/Daily.md", None),  # an alias as a string
    ],
)
def test_read_resolves_a_name_as_a_link_would(
    tmp_path: Path, names_vault: Path, name: str, real: str, alternatives: list[str] | None
) -> None:
    run = installed_runner(tmp_path, names_vault)
    result = run("read", name, "--depth", "0")
    assert result.code == 0, result.stderr
    data = result.json
    assert data["id"] == real
    assert data["resolvedFrom"] == name
    assert data.get("alternatives") == alternatives
    assert data["version"] == run("read", real, "--depth", "0").json["version"]


def test_an_existing_exact_id_wins_and_adds_no_field(tmp_path: Path, names_vault: Path) -> None:
    write_file(names_vault / "Graph.md", "a note named like an alias\n")
    run = installed_runner(tmp_path, names_vault)
    for name, real in [("Graph", "Graph.md"), ("home", "home.md"), ("Internal links", "Internal links.md")]:
        data = run("read", name).json
        assert data["id"] == real
        assert "resolvedFrom" not in data and "alternatives" not in data


def test_a_name_that_nothing_matches_is_not_found(tmp_path: Path, names_vault: Path) -> None:
    run = installed_runner(tmp_path, names_vault)
    result = run("read", "nowhere at all")
    assert result.code == 3
    assert result.error == {"code": "not_found", "message": 'cannot read note "nowhere at all.md": no such note'}
    escape = run("read", "../home")
    assert escape.code == 5 and escape.error["code"] == "invalid_id"  # never resolved as a name


def test_nfd_and_nfc_spellings_meet(tmp_path: Path, vault: Path) -> None:
    write_file(vault / unicodedata.normalize("NFC", "Café.md"), "coffee\n")
    data = installed_runner(tmp_path, vault)("read", unicodedata.normalize("NFD", "café")).json
    assert data["id"] == unicodedata.normalize("NFC", "Café.md") and data["body"] == "coffee\n"


def test_an_alias_added_later_is_found_and_one_removed_is_gone(tmp_path: Path, vault: Path) -> None:
    run = installed_runner(tmp_path, vault)
    write_file(vault / "n.md", "no aliases yet\n")
    assert run("read", "Nickname").code == 3
    write_file(vault / "n.md", "---\naliases: [Nickname]\n---\nnow one\n")
    assert run("read", "nickname").json["id"] == "n.md"
    write_file(vault / "n.md", "---\naliases: [Other]\n---\nanother\n")
    assert run("read", "nickname").code == 3
    assert run("read", "other").json["id"] == "n.md"


def test_a_name_follows_a_note_rewritten_in_place_after_its_row_settled(tmp_path: Path, vault: Path) -> None:
    """A read looks at folders, not notes: a note rewritten in place (its folder's mtime unchanged) after the
    index stopped keeping its digest is not seen. A read by name still answers from the note as it is now: the
    notes the name leads to are looked at again, and a name that leads nowhere is sought again once every
    note is (what happens to the test above when the machine is slow enough for its rows to settle)."""
    run = installed_runner(tmp_path, vault)
    note = write_file(vault / "n.md", "---\naliases: [Nickname]\n---\nnow one\n")
    long_ago = time.time() - 60
    os.utime(note, (long_ago, long_ago))
    os.utime(vault, (long_ago, long_ago))
    assert run("read", "nickname").json["id"] == "n.md"  # indexed with an old mtime: no digest kept
    with open(note, "r+", encoding="utf-8") as handle:  # in place: the folder's mtime does not move
        handle.write("---\naliases: [Othername]\n---\nanother\n")
        handle.truncate()
    os.utime(vault, (long_ago, long_ago))
    assert run("read", "nickname").code == 3
    assert run("read", "othername").json["id"] == "n.md"
    assert run("read", "n").json["body"] == "another\n"


def test_history_resolves_a_name(tmp_path: Path, vault: Path, amem: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "notes/Internal links.md", "---\naliases: [IL]\n---\none\n")
    commit_all(vault, "first")
    run = installed_runner(tmp_path, vault)
    for name in ("internal links", "il", "notes/INTERNAL LINKS"):
        data = run("history", name).json
        assert data["id"] == "notes/Internal links.md" and data["resolvedFrom"] == name
        assert [c["message"] for c in data["commits"]] == ["first"]
    exact = run("history", "notes/Internal links").json
    assert "resolvedFrom" not in exact
    assert run("history", "nothing").code == 3


def test_writes_keep_exact_ids(vault: Path, amem: Any) -> None:
    write_file(vault / "plugins/Graph View.md", "---\naliases: [Map]\n---\nthe graph\n")
    result = amem("write", "map", "a new note, not the aliased one")
    assert result.exit_code == 0, result.stderr
    assert result.json["id"] == "map.md" and (vault / "map.md").is_file()
    assert (vault / "plugins/Graph View.md").read_text() == "---\naliases: [Map]\n---\nthe graph\n"


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Internal links.md", "internal links"),
        ("notes/Idea.md", "NOTES/idea"),  # the folder differs too
        (unicodedata.normalize("NFD", "Café.md"), unicodedata.normalize("NFC", "café")),
    ],
)
def test_a_new_case_twin_is_refused_naming_the_existing_note(
    tmp_path: Path, vault: Path, existing: str, new: str
) -> None:
    write_file(vault / existing, "the first\n")
    run = installed_runner(tmp_path, vault)
    before = sorted(str(p.relative_to(vault)) for p in vault.rglob("*"))
    result = run("write", new, "a second")
    assert result.code == 4, result.stderr
    assert result.error["code"] == "conflict"
    assert f'"{existing}"' in result.error["message"]
    assert str(vault) not in result.stderr
    assert sorted(str(p.relative_to(vault)) for p in vault.rglob("*")) == before  # nothing written
    again = run("write", existing, "appended")  # the exact id still works
    assert again.code == 0, again.stderr


def test_a_move_to_a_case_twin_is_refused_and_a_case_rename_works(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "Plan.md", "the plan\n")
    write_file(vault / "other.md", "other\n")
    run = installed_runner(tmp_path, vault)
    result = run("move", "other", "plan")
    assert result.code == 4 and '"Plan.md"' in result.error["message"]
    assert (vault / "other.md").read_text() == "other\n" and not (vault / "plan.md").exists()
    renamed = run("move", "Plan", "plan")  # the note's own case changes: no twin of itself
    assert renamed.code == 0, renamed.stderr
    assert (vault / "plan.md").is_file() and not (vault / "Plan.md").exists()


def test_a_restore_beside_a_case_twin_is_refused(
    tmp_path: Path, vault: Path, amem: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "idea.md", "old idea\n")
    first = commit_all(vault, "first")
    (vault / "idea.md").unlink()
    write_file(vault / "Idea.md", "the new one\n")
    commit_all(vault, "second")
    empty = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    result = installed_runner(tmp_path, vault)("restore", "idea", first, "--base-version", empty)
    assert result.code == 4 and '"Idea.md"' in result.error["message"]
    assert not (vault / "idea.md").exists()


def test_the_tools_resolve_names(isolated_env: Path, names_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    init_repo(names_vault)
    commit_all(names_vault, "all")

    async def test(client: Client) -> None:
        read = await client.ok("wiki_read", id="internal links")
        assert read["id"] == "Internal links.md" and read["resolvedFrom"] == "internal links"
        assert [n["id"] for n in read["linkedNotes"]] == ["plugins/Graph View.md"]
        daily = await client.ok("wiki_read", id="Daily")
        assert daily["id"] == "a/Daily.md" and daily["alternatives"] == ["b/Daily.md"]
        assert (await client.ok("wiki_read", id="the map"))["id"] == "plugins/Graph View.md"
        history = await client.ok("wiki_history", id="graph")
        assert history["id"] == "plugins/Graph View.md" and history["resolvedFrom"] == "graph"
        assert (await client.error("wiki_read", id="nothing here"))["code"] == "not_found"

    serve(isolated_env, test)


def test_notes_sharing_an_alias_are_alternatives(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "deep/down/x.md", "---\naliases: [Shared]\n---\none\n")
    write_file(vault / "top.md", "---\naliases: shared\n---\ntwo\n")
    write_file(vault / "mid/y.md", "---\naliases: [SHARED, other]\n---\nthree\n")
    data = installed_runner(tmp_path, vault)("read", "shared").json
    assert data["id"] == "top.md"  # the fewest path segments, as links break ties
    assert data["alternatives"] == ["mid/y.md", "deep/down/x.md"]
