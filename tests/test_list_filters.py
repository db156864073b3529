"""`amem list` and the search filters: tags from frontmatter and body, folders, sorting, totals."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config
from amem.notes.tags import note_tags
from amem.search.listing import list_notes
from amem.search.query import search
from tests.conftest import write_file


def ids(result: Mapping[str, Any], key: str = "hits") -> list[str]:
    return [item["id"] for item in result[key]]


def test_tags_come_from_frontmatter_lists_strings_and_body_hashtags() -> None:
    assert note_tags({"tags": ["Auth", "#infra", "a b"]}, "") == ["auth", "infra", "a", "b"]
    assert note_tags({"tags": "perf, #DB ui"}, "") == ["perf", "db", "ui"]
    body = "# Heading\nText #Todo and #project/amem, not#this, #123 nor `#code`\n```\n#fenced\n```\n"
    assert note_tags({}, body) == ["todo", "project/amem"]
    assert note_tags({"tags": [1, True, None, {"x": 1}]}, "") == ["1"]


@pytest.fixture
def tagged(vault: Path, config: Config) -> Config:
    write_file(vault / "notes/a.md", "---\ntags: [Auth, infra]\ncreated: 2025-01-02\n---\n# A\nalpha\n")
    write_file(vault / "notes/b.md", "---\ntags: auth\ncreated: 2025-03-01\n---\n# B\nalpha #project/amem\n")
    write_file(vault / "notes/sub/c.md", "# C\nalpha #Auth #infra\n")
    write_file(vault / "notes2.md", "---\ntags: [auth]\n---\n# N2\nalpha\n")
    write_file(vault / "other/d.md", "---\ntags: [infra]\ncreated: 2024-12-31\n---\n# D\nalpha\n")
    for i, note_id in enumerate(["notes/a.md", "notes/b.md", "notes/sub/c.md", "notes2.md", "other/d.md"]):
        os.utime(vault / note_id, (1_700_000_000 + i, 1_700_000_000 + i))
    return config


def test_search_tag_filters_all_must_hold_and_total_counts_after_filtering(tagged: Config) -> None:
    assert sorted(ids(search(tagged, "alpha", tags=["auth"]))) == [
        "notes/a.md",
        "notes/b.md",
        "notes/sub/c.md",
        "notes2.md",
    ]
    both = search(tagged, "alpha", tags=["#AUTH", "Infra"], limit=1)
    assert both["total"] == 2 and both["truncated"] is True
    assert sorted(ids(search(tagged, "alpha", tags=["auth", "infra"]))) == ["notes/a.md", "notes/sub/c.md"]
    assert ids(search(tagged, "alpha", tags=["project"])) == ["notes/b.md"]  # nested tags count
    assert search(tagged, "alpha", tags=["nope"])["total"] == 0


def test_search_folder_filter_means_that_folder(tagged: Config) -> None:
    for folder in ("notes", "notes/", "./notes", "/notes/"):
        assert sorted(ids(search(tagged, "alpha", folder=folder))) == ["notes/a.md", "notes/b.md", "notes/sub/c.md"]
    assert search(tagged, "alpha", folder="notes/sub", tags=["infra"])["total"] == 1
    assert search(tagged, None, exact_title="D", folder="other")["total"] == 1
    assert search(tagged, None, exact_title="D", folder="notes")["total"] == 0


def test_list_shows_metadata_and_filters_by_prefix_and_tag(tagged: Config) -> None:
    result = list_notes(tagged)
    assert ids(result, "notes") == ["notes/a.md", "notes/b.md", "notes/sub/c.md", "notes2.md", "other/d.md"]
    first = result["notes"][0]
    assert first["title"] == "A" and first["tags"] == ["auth", "infra"] and first["created"] == "2025-01-02"
    assert first["bytes"] == len("---\ntags: [Auth, infra]\ncreated: 2025-01-02\n---\n# A\nalpha\n")
    assert first["mtime"].startswith("2023-11-14T")
    assert ids(list_notes(tagged, "notes/"), "notes") == ["notes/a.md", "notes/b.md", "notes/sub/c.md"]
    assert ids(list_notes(tagged, "notes"), "notes") == ["notes/a.md", "notes/b.md", "notes/sub/c.md", "notes2.md"]
    assert ids(list_notes(tagged, tags=["infra"]), "notes") == ["notes/a.md", "notes/sub/c.md", "other/d.md"]


def test_list_sorts_and_limits(tagged: Config) -> None:
    modified = list_notes(tagged, sort="modified", limit=2)
    assert ids(modified, "notes") == ["other/d.md", "notes2.md"]
    assert (modified["total"], modified["truncated"]) == (5, True)
    created = ids(list_notes(tagged, sort="created"), "notes")
    assert created == ["notes/b.md", "notes/a.md", "other/d.md", "notes/sub/c.md", "notes2.md"]


def test_list_and_search_filters_on_the_command_line(tagged: Config, amem: Any) -> None:
    listed = amem("list", "notes/", "--tag", "auth", "--tag", "#INFRA")
    assert listed.exit_code == 0 and ids(listed.json, "notes") == ["notes/a.md", "notes/sub/c.md"]
    found = amem("search", "alpha", "--folder", "notes", "--tag", "project")
    assert found.exit_code == 0 and ids(found.json) == ["notes/b.md"] and found.json["total"] == 1
    bad = amem("list", "--sort", "size")
    assert bad.exit_code == 2 and bad.error["code"] == "usage"


def test_list_of_an_empty_or_missing_vault(vault: Path, config: Config) -> None:
    assert list_notes(config) == {"notes": [], "total": 0, "truncated": False}


def test_list_skips_unreadable_notes_and_symlinks_outside(vault: Path, config: Config, tmp_path: Path) -> None:
    write_file(vault / "good.md", "# Good\n")
    write_file(vault / "bad.md", b"\xff\xfe")
    outside = write_file(tmp_path / "secret.md", "# Secret\n")
    (vault / "leak.md").symlink_to(outside)
    assert ids(list_notes(config), "notes") == ["good.md"]
