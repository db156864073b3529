"""Block structure is CommonMark's for `edit --section`, links and headings alike (SPEC §2, §15), through the
`amem` command: a setext heading ends a section, a fence opened on a list item closes at its indented fence
(and hides nothing after it), a heading inside an HTML comment is no heading."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file

HEAD = "---\ntitle: Doc\nupdated: 2026-01-03T10:00:00+00:00\n---\n"


def edited(path: Path) -> str:
    """The note's text with its (freshly stamped) `updated` value replaced by STAMP."""
    text = path.read_text(encoding="utf-8")
    stamped = re.sub(r"^updated: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$", "updated: STAMP", text, flags=re.M)
    assert stamped != text, "the note was not stamped"
    return stamped


@pytest.mark.parametrize("underline", ["=============", "---"])
def test_a_setext_heading_ends_the_section_before_it(amem: Any, vault: Path, underline: str) -> None:
    body = f"## Setup\n\nold step\n\nRelease notes\n{underline}\n\nShipped on Monday.\n"
    path = write_file(vault / "doc.md", HEAD + body)
    result = amem("edit", "doc", "--section", "Setup", "new step")
    assert result.exit_code == 0, result.stderr
    assert result.json["replaced"] == 1
    after = f"## Setup\n\nnew step\n\nRelease notes\n{underline}\n\nShipped on Monday.\n"
    assert edited(path) == HEAD.replace("2026-01-03T10:00:00+00:00", "STAMP") + after


def test_a_setext_heading_is_a_section_of_its_own(amem: Any, vault: Path) -> None:
    path = write_file(vault / "doc.md", "Release notes\n===\n\nold\n\nNext\n---\n\nkept\n")
    result = amem("edit", "doc", "--section", "# release notes", "Shipped.")
    assert result.exit_code == 0, result.stderr
    assert edited(path) == "---\nupdated: STAMP\n---\nRelease notes\n===\n\nShipped.\n"
    path = write_file(vault / "two.md", "Release notes\n===\n\nold\n\nNext\n---\n\nkept\n")
    result = amem("edit", "two", "--section", "Next", "new")
    assert result.exit_code == 0, result.stderr
    assert edited(path) == "---\nupdated: STAMP\n---\nRelease notes\n===\n\nold\n\nNext\n---\n\nnew\n"


def test_a_fence_opened_on_a_list_item_holds_no_heading(amem: Any, vault: Path) -> None:
    body = "## Setup\n\n- ```sh\n  # install the tools\n  make tools\n  ```\n- then run it\n\n## Next\n\nkept\n"
    path = write_file(vault / "doc.md", HEAD + body)
    result = amem("edit", "doc", "--section", "Setup", "- ```sh\n  make all\n  ```")
    assert result.exit_code == 0, result.stderr
    after = "## Setup\n\n- ```sh\n  make all\n  ```\n\n## Next\n\nkept\n"
    assert edited(path) == HEAD.replace("2026-01-03T10:00:00+00:00", "STAMP") + after
    # `# install the tools` was never a heading: there is no such section
    refused = amem("edit", "doc", "--section", "install the tools", "x")
    assert refused.exit_code == 2 and refused.error["matches"] == 0


def test_a_heading_inside_an_html_comment_ends_no_section(amem: Any, vault: Path) -> None:
    body = "## Setup\n\nold step\n<!--\n## Draft\nnot yet\n-->\n\n## Next\n\nkept\n"
    path = write_file(vault / "doc.md", HEAD + body)
    result = amem("edit", "doc", "--section", "Setup", "new step")
    assert result.exit_code == 0, result.stderr
    after = "## Setup\n\nnew step\n\n## Next\n\nkept\n"
    assert edited(path) == HEAD.replace("2026-01-03T10:00:00+00:00", "STAMP") + after
    assert amem("edit", "doc", "--section", "Draft", "x").error["matches"] == 0


def test_a_heading_in_a_block_quote_or_list_item_is_part_of_its_section(amem: Any, vault: Path) -> None:
    body = "## Setup\n\n> ## Quoted\n> text\n\n- # Listed\n\n## Next\n\nkept\n"
    path = write_file(vault / "doc.md", HEAD + body)
    result = amem("edit", "doc", "--section", "Setup", "new step")
    assert result.exit_code == 0, result.stderr
    after = "## Setup\n\nnew step\n\n## Next\n\nkept\n"
    assert edited(path) == HEAD.replace("2026-01-03T10:00:00+00:00", "STAMP") + after


RUNBOOK = "# Runbook\n\n- build it:\n- ```sh\n  make\n  ```\n\nThen see [[deploy]] and [the checklist](checklist.md).\n"


def test_a_link_after_a_list_item_fence_is_a_backlink(amem: Any, vault: Path) -> None:
    write_file(vault / "runbook.md", RUNBOOK)
    write_file(vault / "deploy.md", "# Deploy\n")
    write_file(vault / "checklist.md", "# Checklist\n")
    read = amem("read", "runbook")
    assert read.exit_code == 0, read.stderr
    assert [(link["target"], link["resolved"]) for link in read.json["links"]] == [
        ("deploy", "deploy.md"),
        ("checklist.md", "checklist.md"),
    ]
    assert amem("read", "deploy").json["backlinks"] == ["runbook.md"]
    assert amem("read", "checklist").json["backlinks"] == ["runbook.md"]


def test_check_reports_a_broken_link_after_a_list_item_fence(amem: Any, vault: Path) -> None:
    write_file(vault / "runbook.md", RUNBOOK)
    write_file(vault / "checklist.md", "# Checklist\n[[runbook]]\n")
    result = amem("check")
    assert result.exit_code == 11, result.stderr
    broken = [p for p in result.json["problems"] if p["kind"] == "broken-link"]
    assert [(p["id"], p["target"], p["line"]) for p in broken] == [("runbook.md", "deploy", 8)]


def test_move_rewrites_a_link_after_a_list_item_fence(amem: Any, vault: Path) -> None:
    write_file(vault / "runbook.md", RUNBOOK)
    write_file(vault / "deploy.md", "# Deploy\n")
    result = amem("move", "deploy", "ops/release")
    assert result.exit_code == 0, result.stderr
    assert [entry["id"] for entry in result.json["rewritten"]] == ["runbook.md"]
    assert (
        (vault / "runbook.md")
        .read_text(encoding="utf-8")
        .endswith("Then see [[release]] and [the checklist](checklist.md).\n")
    )
