"""`amem write --overwrite` edits the old frontmatter block, never re-serialises it (SPEC §5): keys the caller
does not give keep their bytes, comments and order; the caller's keys replace their lines in place or go at
the end; `updated` is stamped; a block that does not parse is kept, or the write refused, never dropped."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import write_file
from tests.installed import installed_runner

#: An `updated` line as amem stamps it.
STAMPED = re.compile(r"^updated: \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$", re.M)


def stamped(text: str) -> str:
    """`text` with the one `updated` line amem stamped spelled `updated: STAMP`."""
    found, count = STAMPED.subn("updated: STAMP", text)
    assert count == 1, text
    return found


OLD = (
    "---\n"
    "# planning, kept by hand\n"
    "ticket: 0755\n"
    "version: 1.10   # not 1.1\n"
    "title: Q3 plan\n"
    "'quoted key': yes\n"
    "created: 2026-01-01T09:00:00+08:00\n"
    "---\n"
    "old body\n"
)


@pytest.mark.parametrize("ending", ["\n", "", "\n\n"])
def test_keys_the_caller_does_not_give_keep_their_bytes_and_the_body_its_ending(
    tmp_path: Path, vault: Path, ending: str
) -> None:
    write_file(vault / "plan.md", OLD)
    run = installed_runner(tmp_path, vault)
    result = run("write", "plan", "--overwrite", f"---\ntitle: Q4 plan\nowner: ana\n---\nnew body{ending}")
    assert result.code == 0, result.stderr
    assert stamped((vault / "plan.md").read_text()) == (
        "---\n"
        "# planning, kept by hand\n"
        "ticket: 0755\n"
        "version: 1.10   # not 1.1\n"
        "title: Q4 plan\n"
        "'quoted key': yes\n"
        "created: 2026-01-01T09:00:00+08:00\n"
        "owner: ana\n"
        "updated: STAMP\n"
        "---\n"
        f"new body{ending}"
    )


def test_a_body_only_overwrite_changes_no_frontmatter_line_but_updated(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "plan.md", OLD.replace("created:", "updated: 2025-05-05T05:05:05+00:00  # by amem\ncreated:"))
    result = installed_runner(tmp_path, vault)("write", "plan", "--overwrite", "just the body")
    assert result.code == 0, result.stderr
    assert stamped((vault / "plan.md").read_text()) == OLD.replace("created:", "updated: STAMP\ncreated:").replace(
        "old body\n", "just the body"
    )


def test_a_block_list_the_caller_gives_replaces_the_old_lines_in_place(vault: Path, amem: Any) -> None:
    old = "---\ntitle: T\ntags:\n  - a\n  # the second\n  - b\n\n# people\nowner: ana\n---\nbody\n"
    write_file(vault / "n.md", old)
    result = amem("write", "n", "-", "--overwrite", input="---\ntags:\n- x\n- y   # why\nowner: bo\n---\nnew\n")
    assert result.exit_code == 0, result.stderr
    assert stamped((vault / "n.md").read_text()) == (
        "---\ntitle: T\ntags:\n- x\n- y   # why\n\n# people\nowner: bo\nupdated: STAMP\n---\nnew\n"
    )
    read = amem("read", "n").json
    assert read["frontmatter"]["tags"] == ["x", "y"] and read["frontmatter"]["title"] == "T"


def test_a_block_sent_back_as_it_was_read_is_not_doubled(vault: Path, amem: Any) -> None:
    """The caller's comment lines that the old block already has are not added again; a key the caller
    left out (`version`) keeps its place and bytes."""
    block = "---\n# about\nticket: 0755\n\n# sizes\nsizes:\n  - 1.10\n  - 1.20\n---\n"
    write_file(vault / "n.md", block.replace("ticket: 0755\n", "ticket: 0755\nversion: 1.10\n") + "old\n")
    assert amem("write", "n", "-", "--overwrite", input=block + "new\n").exit_code == 0
    assert stamped((vault / "n.md").read_text()) == (
        "---\n# about\nticket: 0755\nversion: 1.10\n\n# sizes\nsizes:\n  - 1.10\n  - 1.20\nupdated: STAMP\n---\nnew\n"
    )


def test_a_block_that_does_not_parse_is_kept_and_the_body_replaced(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "q3.md", "---\ntitle: [Q3 plan\n---\nold body\n")
    result = installed_runner(tmp_path, vault)("write", "q3", "--overwrite", "new body\n")
    assert result.code == 0, result.stderr
    assert (vault / "q3.md").read_text() == "---\ntitle: [Q3 plan\n---\nnew body\n"
    assert "does not parse" in result.stderr and "kept as written" in result.stderr


def test_keys_for_a_block_that_does_not_parse_are_refused_and_nothing_written(tmp_path: Path, vault: Path) -> None:
    old = "---\ntitle: [Q3 plan\nticket: 0755\n---\nold body\n"
    write_file(vault / "q3.md", old)
    result = installed_runner(tmp_path, vault)("write", "q3", "--overwrite", "---\nstatus: done\n---\nnew body\n")
    assert result.code == 2
    assert result.error["code"] == "usage"
    assert "does not parse" in result.error["message"] and "nothing was written" in result.error["message"]
    assert (vault / "q3.md").read_text() == old


def test_a_crlf_note_stays_crlf_and_keeps_its_lines(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "w.md", OLD.replace("\n", "\r\n").encode())
    result = installed_runner(tmp_path, vault)("write", "w", "--overwrite", "---\ntitle: Q4 plan\n---\nnew\nbody\n")
    assert result.code == 0, result.stderr
    data = (vault / "w.md").read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert stamped(data.decode().replace("\r\n", "\n")) == (
        "---\n# planning, kept by hand\nticket: 0755\nversion: 1.10   # not 1.1\ntitle: Q4 plan\n"
        "'quoted key': yes\ncreated: 2026-01-01T09:00:00+08:00\nupdated: STAMP\n---\nnew\nbody\n"
    )


def test_a_bom_stays_one_bom_and_the_block_its_bytes(vault: Path, amem: Any) -> None:
    write_file(vault / "b.md", ("\ufeff" + OLD).encode())
    result = amem("write", "b", "-", "--overwrite", input="\ufeff---\nticket: 0756\n---\nnew\n")
    assert result.exit_code == 0, result.stderr
    data = (vault / "b.md").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf---\n# planning, kept by hand\nticket: 0756\nversion: 1.10   # not 1.1\n")
    assert data.count(b"\xef\xbb\xbf") == 1 and data.endswith(b"---\nnew\n")


# --- the property: every line of a key the caller does not give survives, byte for byte, in order --------

#: Values as people write them after `key:`, including the ones a YAML round trip changes or drops.
VALUES = [
    " 0755",
    " 1.10",
    " yes",
    " '0755'",
    ' "a: b"   # said so',
    " [a, b]",
    "\n  - a\n  - b",
    "\n- one\n- two",
    " |\n  line one\n\n  line two",
    " >-\n  folded\n  text",
    "\n  nested: 1\n  deeper:\n    - x",
    " ~",
    " 2024-02-30",
    " plain words",
    "",
]
KEYS = ["alpha", "beta", "gamma", "delta", "ticket", "version", "title", "tags"]


@st.composite
def blocks(draw: Any) -> tuple[list[tuple[str, str]], list[str], dict[str, str]]:
    """(the old block's entries as (key, lines) in order, with comment lines among them; the keys the
    caller gives, with their lines)."""
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=6, unique=True))
    entries = []
    for i, key in enumerate(keys):
        if draw(st.booleans()):
            entries.append(("", f"# about {key}" if i % 2 else ""))
        entries.append((key, f"{key}:{draw(st.sampled_from(VALUES))}"))
    given_keys = draw(st.lists(st.sampled_from([*KEYS, "new", "other"]), max_size=4, unique=True))
    given = {key: f"{key}:{draw(st.sampled_from(VALUES))}" for key in given_keys}
    return entries, given_keys, given


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=blocks(), crlf=st.booleans())
def test_lines_of_keys_the_caller_does_not_give_survive_byte_for_byte(
    vault: Path, amem: Any, case: tuple[list[tuple[str, str]], list[str], dict[str, str]], crlf: bool
) -> None:
    entries, given_keys, given = case
    nl = "\r\n" if crlf else "\n"
    old_block = "".join(f"{text}\n" for _, text in entries)
    write_file(vault / "n.md", f"---\n{old_block}---\nold\n".replace("\n", nl).encode())
    before = amem("read", "n").json["frontmatter"]
    caller = "".join(f"{given[key]}\n" for key in given_keys)
    write_file(vault / "c.md", f"---\n{caller}---\nc\n")
    theirs = amem("read", "c").json["frontmatter"]

    result = amem("write", "n", "-", "--overwrite", input=f"---\n{caller}---\nnew\n")
    assert result.exit_code == 0, result.stderr
    data = (vault / "n.md").read_bytes().decode()
    if crlf:
        assert "\n" not in data.replace("\r\n", "")
    text = data.replace("\r\n", "\n")
    kept = [lines for key, lines in entries if key not in given]
    at = 0
    for lines in kept:  # each kept entry, whole and in its order
        found = text.find(f"\n{lines}\n", at)
        assert found >= 0, (lines, text)
        at = found + len(lines) + 1
    for key in given_keys:  # the caller's own lines, as written
        assert f"\n{given[key]}\n" in text, (given[key], text)
    after = amem("read", "n").json["frontmatter"]
    assert {k: v for k, v in after.items() if k != "updated"} == {
        **{k: v for k, v in before.items() if k != "updated"},
        **theirs,
    }
    assert after["updated"]
