"""Link syntax, code that hides links, and Obsidian-style resolution with its tie-breaks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amem.notes.links import Link, LinkResolver, extract_links, link_spans, resolution_keys


def targets(body: str) -> list[str]:
    return [link.target for link in extract_links(body)]


def test_each_syntax() -> None:
    links = extract_links("[[a]] [[b|Alias]] [[c#Heading]] [[d#^block1]] ![[e.png]] ![[f#^b|x]]")
    assert links == [
        Link("a"),
        Link("b", alias="Alias"),
        Link("c", heading="Heading"),
        Link("d", block="block1"),
        Link("e.png", embed=True),
        Link("f", alias="x", block="b", embed=True),
    ]


def test_backslashes_in_targets_read_as_slashes() -> None:
    assert targets(r"[[notes\foo]]") == ["notes/foo"]


def test_escaped_pipe_in_tables() -> None:
    assert extract_links(r"| [[a\|Alias]] |") == [Link("a", alias="Alias")]


def test_backtick_fence_hides_links() -> None:
    assert targets("[[in]]\n```\n[[hidden]]\n```\n[[out]]") == ["in", "out"]


def test_tilde_fence_hides_links() -> None:
    assert targets("~~~\n[[hidden]]\n~~~\n[[out]]") == ["out"]


def test_fence_closes_only_with_same_char_at_least_as_long() -> None:
    body = "````\n```\n[[hidden1]]\n~~~~\n[[hidden2]]\n`````\n[[out]]"
    assert targets(body) == ["out"]


def test_closing_fence_with_text_after_it_does_not_close() -> None:
    assert targets("```\n``` not a close\n[[hidden]]\n```\n[[out]]") == ["out"]


def test_indented_fence_up_to_three_spaces() -> None:
    assert targets("   ```\n[[hidden]]\n   ```\n[[out]]") == ["out"]
    # four spaces is an indented code line, not a fence: links around it count
    assert targets("    ```\n[[seen]]") == ["seen"]


def test_unclosed_fence_runs_to_the_end() -> None:
    assert targets("[[a]]\n```python\n[[b]]\n[[c]]") == ["a"]


def test_crlf_fences_close() -> None:
    assert targets("```\r\n[[hidden]]\r\n```\r\n[[out]]\r\n") == ["out"]


def test_inline_code_hides_links() -> None:
    assert targets("`[[no]]` [[yes]] ``a `[[no]]` b`` [[yes2]]") == ["yes", "yes2"]


def test_unmatched_backtick_is_literal() -> None:
    assert targets("it`s [[yes]]") == ["yes"]


def test_code_span_across_lines_of_a_paragraph() -> None:
    assert targets("`start\n[[no]] end` [[yes]]") == ["yes"]
    assert targets("`open\n\n[[yes]]") == ["yes"]  # a blank line ends the paragraph


IDS = [
    "notes/foo.md",
    "shared/notes/foo.md",
    "z/foo.md",
    "a/b/foo.md",
    "bar.md",
    "deep/x/bar.md",
    "Zeta.md",
    "zeta/Zeta.md",
    "c/cap.md",
    "b/cap.md",
]


@pytest.mark.parametrize(
    "target, expected",
    [
        ("notes/foo", "notes/foo.md"),  # exact, without extension
        ("notes/foo.md", "notes/foo.md"),  # exact, with extension
        ("shared/notes/foo", "shared/notes/foo.md"),
        ("b/foo", "a/b/foo.md"),  # path suffix at a / boundary
        ("otes/foo", None),  # not a boundary, and a target with a folder never falls back to the base name
        ("foo", "notes/foo.md"),  # basename: fewest segments, then code-point order
        ("bar", "bar.md"),
        ("x/bar", "deep/x/bar.md"),
        ("Zeta", "Zeta.md"),
        ("cap", "b/cap.md"),  # tie on segments: code-point order
        ("nothing", None),
        ("", None),
        ("./bar", "bar.md"),
        ("notes\\foo", "notes/foo.md"),
    ],
)
def test_resolution_tiers(target: str, expected: str | None) -> None:
    assert LinkResolver(IDS, (".md",)).resolve(target) == expected


def test_heading_part_is_ignored_when_resolving() -> None:
    link = extract_links("[[bar#Intro]]")[0]
    assert LinkResolver(IDS, (".md",)).resolve(link.target) == "bar.md"


def test_resolution_keys_cover_every_tier() -> None:
    assert resolution_keys("a/b/c.md", (".md",)) == {"a/b/c.md", "a/b/c", "b/c.md", "b/c", "c.md", "c"}


# --- case and Unicode normalisation, as Obsidian resolves them -----------------------------------------

CAFE_NFC = "caf\u00e9"
CAFE_NFD = "cafe\u0301"


@pytest.mark.parametrize(
    "ids, target, expected",
    [
        (["Internal links.md"], "internal links", "Internal links.md"),
        (["docs/Graph View.md"], "graph view", "docs/Graph View.md"),
        (["docs/Graph View.md"], "DOCS/graph view", "docs/Graph View.md"),  # exact path, another case
        (["a/Docs/Graph View.md"], "docs/GRAPH VIEW.MD", "a/Docs/Graph View.md"),  # suffix, with extension
        ([f"{CAFE_NFD}.md"], CAFE_NFC, f"{CAFE_NFD}.md"),  # NFC link, NFD file name
        ([f"{CAFE_NFC}.md"], CAFE_NFD, f"{CAFE_NFC}.md"),
        (["Straße.md"], "STRASSE", "Straße.md"),  # full case folding
        # the exact spelling wins within a tier, whatever the code-point order says
        (["Foo.md", "foo.md"], "Foo", "Foo.md"),
        (["Foo.md", "foo.md"], "foo", "foo.md"),
        (["Foo.md", "foo.md"], "FOO", "Foo.md"),  # neither is exact: code-point order
        ([f"{CAFE_NFC}.md", f"{CAFE_NFD}.md"], CAFE_NFD, f"{CAFE_NFD}.md"),
        (["a/Foo.md", "b/c/foo.md"], "foo", "b/c/foo.md"),  # exact spelling beats fewer segments
        (["a/Foo.md", "b/c/foo.md"], "FOO", "a/Foo.md"),  # otherwise fewest segments
        # a tier still beats the next: an exact path in another case beats a suffix spelled exactly
        (["Notes/foo.md", "x/notes/foo.md"], "notes/foo", "Notes/foo.md"),
    ],
)
def test_resolution_ignores_case_and_normalisation(ids: list[str], target: str, expected: str) -> None:
    assert LinkResolver(ids, (".md",)).resolve(target) == expected


def test_ranked_lists_the_winning_tier_best_first() -> None:
    resolver = LinkResolver(["Foo.md", "foo.md", "x/foo.md"], (".md",))
    assert resolver.ranked("foo") == ["foo.md", "Foo.md"]
    assert resolver.ranked("x/FOO") == ["x/foo.md"]
    assert resolver.ranked("nothing") == []


def test_remove_undoes_add() -> None:
    resolver = LinkResolver(["a/Foo.md", "b/foo.md"], (".md",))
    resolver.remove("b/foo.md")
    assert resolver.resolve("foo") == "a/Foo.md"
    resolver.remove("a/Foo.md")
    assert resolver.resolve("foo") is None
    assert resolver.exact == resolver.suffix == resolver.basename == {}


def test_resolution_keys_are_link_keys() -> None:
    assert resolution_keys("A/Foo.MD", (".md",)) == {"a/foo.md", "a/foo", "foo.md", "foo"}


def test_link_spans_locate_each_target_as_written() -> None:
    body = "x [[a/b|Alias]] `[[code]]` ![[ c\\d #^blk]]\r\n| [[t\\|T]] | [[#local]]\n```\n[[no]]\n```\n[[e#h]]"
    spans = link_spans(body)
    assert [body[s.target_start : s.target_end] for s in spans] == ["a/b", "c\\d", "t", "", "e"]
    assert [body[s.start : s.end] for s in spans] == [
        "[[a/b|Alias]]",
        "![[ c\\d #^blk]]",
        "[[t\\|T]]",
        "[[#local]]",
        "[[e#h]]",
    ]
    assert [s.link for s in spans] == extract_links(body)


@given(
    st.lists(
        st.sampled_from(
            [
                "[[a]]",
                "![[b|c]]",
                "[[d#h]]",
                "[[x\\y]]",
                "[[",
                "]]",
                "[t](a.md)",
                "](",
                "text",
                " ",
                "\n",
                "\r\n",
                "\n\n",
            ]
        ),
        max_size=30,
    ).map("".join)
)
def test_a_body_without_code_finds_the_same_links_either_way(body: str) -> None:
    """The shortcut for bodies with no code finds what the paragraph-by-paragraph reading finds."""
    from amem.notes.links import _spans_by_paragraph, _spans_in_text, may_hold_code

    if not may_hold_code(body):
        assert list(_spans_in_text(body, 0, True, True, (".md",))) == list(
            _spans_by_paragraph(body, True, True, (".md",))
        )
