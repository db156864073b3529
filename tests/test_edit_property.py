"""A property of `amem edit`: it changes no byte outside what it names. Random notes (frontmatter styles,
LF, CRLF and mixed line endings, a BOM, fenced code holding heading-like lines) are edited by find/replace,
by section and by prepend; the bytes before the change, after it, and the frontmatter apart from its
`updated` line are what they were."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from amem.notes.parse import parse_note
from amem.ops.edit import Edit, edit_text

STAMP = "2030-05-06T07:08:09+00:00"
WORDS = st.sampled_from(["note", "key", "Token", "[[link]]", "- item", "`code`", "x: y", "#tag", "  indented", ""])
KEY_LINES = [
    "title: Some Title",
    "tags: [a, b]",
    "# a comment",
    '"quoted": 1',
    "created: 2026-01-01",
    "aliases:\n  - one\n  - two",
    "empty:",
    "note: 'it''s'",
]


@st.composite
def frontmatters(draw: Any) -> tuple[str, str]:
    """(head as written, its line ending); "" for a note without frontmatter."""
    if draw(st.booleans()) and draw(st.booleans()):
        return "", "\n"
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    keys = draw(st.lists(st.sampled_from(KEY_LINES), unique=True, max_size=5))
    if draw(st.booleans()):
        keys.insert(draw(st.integers(0, len(keys))), "updated: 2025-02-03T04:05:06+01:00")
    lines = "\n".join(keys).split("\n") if keys else []
    return "---" + nl + "".join(line + nl for line in lines) + "---" + nl, nl


@st.composite
def texts(draw: Any, nl: str) -> str:
    """Lines of prose, other headings and fenced code with heading-like lines in it, none naming the
    markers the edits look for."""
    pieces = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["words", "heading", "fence", "blank"]))
        if kind == "words":
            pieces.append(" ".join(draw(st.lists(WORDS, min_size=1, max_size=4))) + nl)
        elif kind == "heading":
            pieces.append("#" * draw(st.integers(1, 6)) + f" Other {draw(st.integers(0, 9))}" + nl)
        elif kind == "fence":
            pieces.append(f"```{nl}## Target{nl}# Target{nl}```{nl}")
        else:
            pieces.append(nl)
    return "".join(pieces)


def _line_endings() -> st.SearchStrategy[str]:
    return st.sampled_from(["\n", "\r\n"])


def _expected_newline(body: str, head: str, head_nl: str) -> str:
    """The line ending an edit writes: the body's, or (a body of one line) the frontmatter's, else LF."""
    if "\n" in body:
        return "\r\n" if "\r\n" in body else "\n"
    return head_nl if head else "\n"


def _check_head(before: str, after: str, nl: str, head_nl: str) -> None:
    """`after` is `before` with only its `updated` line set (or added at the end of the block), in the
    block's line ending `head_nl`; a new block (`before` is "") in the body's line ending `nl`."""
    if not before:
        assert after == f"---{nl}updated: {STAMP}{nl}---{nl}"
        return
    old = [line for line in before.split("\n") if not line.startswith("updated:")]
    new = [line for line in after.split("\n") if not line.startswith("updated:")]
    assert old == new
    stamped = [line for line in after.split("\n") if line.startswith("updated:")]
    assert stamped == [f"updated: {STAMP}" + ("\r" if head_nl == "\r\n" else "")]
    assert parse_note(after).frontmatter == {**parse_note(before).frontmatter, "updated": STAMP}


def _changed_part(new: str, bom: str, prefix: str, suffix: str) -> tuple[str, str]:
    """(head, middle) of `new`, having checked that it is bom + head + prefix + middle + suffix."""
    assert new.startswith(bom) and new.endswith(suffix)
    rest = new[len(bom) : len(new) - len(suffix)]
    at = rest.find("---", 3) + 3 if rest.startswith("---") else 0
    at = rest.index("\n", at) + 1 if at else 0
    head, body = rest[:at], rest[at:]
    assert body.startswith(prefix)
    return head, body[len(prefix) :]


@settings(max_examples=150, deadline=None)
@given(st.data(), st.booleans(), frontmatters(), _line_endings())
def test_find_replace_changes_nothing_outside_the_match(data: Any, bom: bool, fm: tuple[str, str], nl: str) -> None:
    head, head_nl = fm
    before, after = data.draw(texts(nl)), data.draw(texts(nl))
    spans = data.draw(st.booleans())
    found = f"alpha{nl}omega" if spans else "alpha omega"
    mark = "\ufeff" if bom else ""
    text = mark + head + before + found + after
    replacement = data.draw(st.sampled_from(["", "beta", "two\nlines"]))
    new, replaced = edit_text(text, Edit(find=found.replace("\r\n", "\n"), replace=replacement), STAMP)
    assert replaced == 1
    new_head, middle = _changed_part(new, mark, before, after)
    _check_head(head, new_head, _expected_newline(before + found + after, head, head_nl), head_nl)
    assert middle.replace("\r\n", "\n") == replacement


@settings(max_examples=150, deadline=None)
@given(st.data(), st.booleans(), frontmatters(), _line_endings(), st.integers(1, 4))
def test_section_changes_nothing_outside_the_section(
    data: Any, bom: bool, fm: tuple[str, str], nl: str, level: int
) -> None:
    head, head_nl = fm
    before = data.draw(texts(nl)).replace("Other", "Before")
    heading = "#" * level + " Target" + nl
    under = data.draw(texts(nl)).replace("# Other", "#" * level + "# Deeper")  # only deeper headings inside
    following = (
        "#" * data.draw(st.integers(1, level)) + " Next" + nl + data.draw(texts(nl)) if data.draw(st.booleans()) else ""
    )
    if before and not before.endswith(nl):
        before += nl
    mark = "\ufeff" if bom else ""
    text = mark + head + before + heading + under + following
    new, replaced = edit_text(text, Edit(section="target", content="new text\nsecond line"), STAMP)
    assert replaced == 1
    new_head, middle = _changed_part(new, mark, before + heading, following)
    _check_head(head, new_head, nl, head_nl)
    expected = f"{nl}new text{nl}second line{nl}" + (nl if following else "")
    assert middle == expected


@settings(max_examples=150, deadline=None)
@given(st.data(), st.booleans(), frontmatters(), _line_endings(), st.integers(0, 2))
def test_prepend_changes_nothing_but_the_insertion(
    data: Any, bom: bool, fm: tuple[str, str], nl: str, blank: int
) -> None:
    head, head_nl = fm
    rest = re.sub(r"\A(?:[ \t]*\r?\n)*", "", data.draw(texts(nl)))
    mark = "\ufeff" if bom else ""
    text = mark + head + nl * blank + rest
    new, replaced = edit_text(text, Edit(prepend="first\nthen"), STAMP)
    assert replaced == 1
    new_head, middle = _changed_part(new, mark, nl * blank, rest)
    nl = _expected_newline(nl * blank + rest, head, head_nl)
    _check_head(head, new_head, nl, head_nl)
    assert middle == f"first{nl}then{nl}" + (nl if rest else "")
