"""The exact-heading tier: a note with a heading that is the whole query (without its `{#anchor}`, folded as
--exact-title folds a title) ranks above notes that say the query's words more often, for a query of one
word too, and below a note titled as the query; filters still apply, the headings' index follows the
notes as they change, and --explain shows the tier's part of the score."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amem.config import Config
from amem.search import rank
from amem.search.query import search
from tests.conftest import write_file
from tests.test_search_title_tier import unrelated


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def reactivity(vault: Path) -> None:
    """A long page with the section "Reactive Props Destructure" and a short one with a longer heading of
    those words that says them more often: BM25 and the phrase tiers alone put the second first."""
    filler = "The compiler rewrites the access so that it stays reactive across renders and updates. " * 10
    write_file(
        vault / "guide/props.md",
        f"---\ntags: [guide]\n---\n# Props\n\n## Reactive Props Destructure {{#reactive-props-destructure}}\n\n"
        f"Destructured props stay reactive. {filler}\n",
    )
    repeated = "Reactive props destructure is covered here; reactive props destructure, again. " * 3
    write_file(vault / "blog/notes.md", f"# Notes on 3.5\n\n## Reactive Props Destructure, explained\n\n{repeated}\n")
    unrelated(vault)


def test_a_page_with_the_query_as_a_heading_outranks_a_page_that_says_it_more(vault: Path, config: Config) -> None:
    reactivity(vault)
    assert ids(search(config, "Reactive Props Destructure")) == ["guide/props.md", "blog/notes.md"]
    # Folded as a title is: case and separators do not matter, nor the heading's anchor.
    assert ids(search(config, "reactive-props_destructure"))[0] == "guide/props.md"
    # A query that is not a whole heading gets no tier.
    part = search(config, "props destructure", explain=True)
    assert part["hits"] and all("headingBonus" not in hit["explain"] for hit in part["hits"])


def test_a_one_word_heading_and_a_chinese_one(vault: Path, config: Config) -> None:
    filler = "Slots let a parent pass template content down to a child, which renders it where it likes. " * 10
    write_file(vault / "components.md", f"# Components in depth\n\n### Fallthrough\n\n## Slots\n\n{filler}\n")
    write_file(vault / "api.md", "# Built-in elements\n\nThe slot element: slots, slots and slots again.\n")
    write_file(
        vault / "zh/computed.md", f"# 响应式\n\n## 计算属性 {{#computed}}\n\n{'模板中的表达式虽然方便。' * 10}\n"
    )
    write_file(vault / "zh/api.md", "# 组合式 API\n\n计算属性的类型，计算属性，计算属性。\n")
    unrelated(vault)
    assert ids(search(config, "slots")) == ["components.md", "api.md"]
    assert ids(search(config, "计算属性")) == ["zh/computed.md", "zh/api.md"]
    assert ids(search(config, "Slots", folder="other")) == []


def test_a_page_titled_as_the_query_still_outranks_a_heading_of_it(vault: Path, config: Config) -> None:
    """The title's share is the larger: a page titled so (in its frontmatter, no heading of it) comes first
    even against a page with the heading that says the words more often."""
    filler = "Watchers run a callback whenever a piece of reactive state changes, lazily by default. " * 10
    write_file(vault / "watchers.md", f"---\ntitle: Watchers\n---\nIntro.\n\n{filler}\n")
    write_file(vault / "guide.md", "# Essentials\n\n## Watchers\n\nWatchers, watchers: the watchers.\n")
    unrelated(vault)
    assert ids(search(config, "watchers")) == ["watchers.md", "guide.md"]


def test_a_heading_in_code_is_no_heading_and_edits_are_followed(vault: Path, config: Config) -> None:
    reactivity(vault)
    write_file(vault / "code.md", "# Shell\n\n```\n## Reactive Props Destructure\n```\n" + "reactive props " * 3)
    first = search(config, "Reactive Props Destructure", explain=True)
    bonus = {hit["id"]: hit["explain"].get("headingBonus") for hit in first["hits"]}
    assert bonus["guide/props.md"] and bonus.get("code.md") is None and bonus["blog/notes.md"] is None
    # The heading moves to the other page: the index of headings follows, with no rebuild.
    write_file(vault / "guide/props.md", "# Props\n\nDestructured props stay reactive.\n")
    text = (vault / "blog/notes.md").read_text(encoding="utf-8")
    write_file(vault / "blog/notes.md", text + "\n### Reactive props destructure\n")
    moved = search(config, "Reactive Props Destructure", explain=True)
    assert [hit["id"] for hit in moved["hits"] if "headingBonus" in hit["explain"]] == ["blog/notes.md"]
    (vault / "blog/notes.md").unlink()
    gone = search(config, "Reactive Props Destructure", explain=True)
    assert all("headingBonus" not in hit["explain"] for hit in gone["hits"])


def test_a_filter_that_excludes_the_page_with_the_heading_leaves_the_others_as_they_were(
    vault: Path, config: Config
) -> None:
    reactivity(vault)
    only = search(config, "Reactive Props Destructure", folder="blog")
    assert ids(only) == ["blog/notes.md"] and only["total"] == 1
    kept = search(config, "Reactive Props Destructure", tags=["guide"])
    assert ids(kept) == ["guide/props.md"] and kept["total"] == 1


def test_explain_shows_the_tier_s_part_of_the_score(vault: Path, config: Config, amem: Any) -> None:
    reactivity(vault)
    done = amem("search", "--explain", "Reactive", "Props", "Destructure")
    assert done.exit_code == 0, done.stderr
    hits = done.json["hits"]
    assert [hit["id"] for hit in hits] == ["guide/props.md", "blog/notes.md"]
    headed, other = (hit["explain"] for hit in hits)
    assert "headingBonus" not in other and "titleBonus" not in headed
    # H × ΣIDF, IDF = ln(1 + (N − df + 0.5)/(df + 0.5)) of each word: 8 notes, each word in 2 (`props`
    # in the title of one: its prefix `props*` too, as the last word is a prefix).
    idf = math.log(1 + (8 - 2 + 0.5) / (2 + 0.5))
    assert headed["headingBonus"] == float(f"{rank.EXACT_HEADING * 3 * idf:.6g}")
    assert hits[0]["score"] == headed["keywordScore"] and hits[0]["score"] > headed["headingBonus"] > 0
    plain = amem("search", "Reactive", "Props", "Destructure").json
    assert [hit["score"] for hit in plain["hits"]] == [hit["score"] for hit in hits]


def test_a_heading_written_with_markup_is_found_by_its_visible_text(vault: Path, config: Config) -> None:
    """Code marks, emphasis, a link's address and backslash escapes are how a heading is written, not what
    a reader sees nor what a user types: `` ## `Reactive` Props **Destructure** `` is the heading "Reactive
    Props Destructure", and outranks the page that says it more often as the unmarked heading does."""
    reactivity(vault)
    text = (vault / "guide/props.md").read_text(encoding="utf-8")
    marked = text.replace("## Reactive Props Destructure", "## `Reactive` Props **Destructure**")
    marked += "\n## See [the API](../api/sfc-script-setup.md#define-props)\n\nMore.\n"
    marked += "\n## Escaped \\*Stars\\*\n\nText.\n"
    write_file(vault / "guide/props.md", marked)
    assert ids(search(config, "Reactive Props Destructure")) == ["guide/props.md", "blog/notes.md"]
    for query in ("Reactive Props Destructure", "see the API", "escaped stars"):
        hits = search(config, query, explain=True)["hits"]
        assert hits[0]["id"] == "guide/props.md" and hits[0]["explain"]["headingBonus"] > 0, query
    # Only the key drops the markup: the search row still holds every word the note says.
    assert ids(search(config, "sfc script setup")) == ["guide/props.md"]
