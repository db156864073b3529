"""The exact-title tier: a note whose whole title (without its `{#anchor}`, folded as --exact-title folds)
is the query ranks above a note that only holds the query in a heading and says it more often, for a
query of one word too; filters still apply, and --explain shows the tier's part of the score."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amem.config import Config
from amem.search import rank
from amem.search.query import search
from tests.conftest import write_file


def unrelated(vault: Path, text: str = "# Other {i}\n\nA page about something else, number {i}.\n") -> None:
    """Six pages about something else, in other/: the query's words are rare, as in a real vault."""
    for i in range(6):
        write_file(vault / f"other/o{i}.md", text.format(i=i))


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def typed_refs(vault: Path) -> None:
    """A long page titled "Template Refs" and a short one with the heading "Typing Template Refs" that says
    the words more often: BM25 and the phrase tiers alone put the second first."""
    filler = "A component may need direct access to the underlying element, for focusing an input. " * 10
    write_file(
        vault / "guide/template-refs.md",
        f"---\ntags: [guide]\n---\n# Template Refs {{#template-refs}}\n\nThe ref attribute. {filler}\n"
        "It is accessed through a template ref.\n",
    )
    repeated = "Template refs are typed here; template refs and again template refs. " * 3
    write_file(
        vault / "typescript/composition-api.md",
        f"# TypeScript with Composition API\n\n## Typing Template Refs\n\n{repeated}\n",
    )
    unrelated(vault)


def test_a_page_titled_as_the_query_outranks_a_heading_of_it(vault: Path, config: Config) -> None:
    typed_refs(vault)
    assert ids(search(config, "Template Refs")) == ["guide/template-refs.md", "typescript/composition-api.md"]
    # The title is compared as a whole, folded: case, separators and the anchor do not matter.
    assert ids(search(config, "template-refs"))[0] == "guide/template-refs.md"
    # A query that is not the whole title gets no tier: the page that says it most still wins.
    assert ids(search(config, "typing template refs"))[0] == "typescript/composition-api.md"


def test_a_one_word_title_outranks_a_page_that_says_it_more(vault: Path, config: Config) -> None:
    filler = "Animates one element or component entering and leaving the page, with classes and hooks. " * 10
    write_file(vault / "transition.md", f"# Transition\n\n{filler}\n")
    write_file(
        vault / "transition-group.md",
        "# TransitionGroup\n\n## Transition of a list\n\nEach transition of a list item: transition, transition.\n",
    )
    unrelated(vault)
    assert ids(search(config, "transition")) == ["transition.md", "transition-group.md"]
    assert ids(search(config, "Transition", folder="other")) == []


def test_a_chinese_title_outranks_a_heading_of_it(vault: Path, config: Config) -> None:
    filler = "模板中的表达式虽然方便，但也只能用来做简单的操作。" * 10
    write_file(vault / "computed.md", f"# 计算属性 {{#computed-properties}}\n\n{filler}\n")
    write_file(
        vault / "typescript.md",
        "# TypeScript 与组合式 API\n\n## 为计算属性标注类型\n\n计算属性会自动推导类型，计算属性的类型，计算属性。\n",
    )
    unrelated(vault, "# 其他 {i}\n\n无关的页面。\n")
    assert ids(search(config, "计算属性")) == ["computed.md", "typescript.md"]


def test_a_filter_that_excludes_the_titled_page_leaves_the_others_as_they_were(vault: Path, config: Config) -> None:
    typed_refs(vault)
    for result in (search(config, "Template Refs", folder="typescript"), search(config, "Template Refs", tags=["x"])):
        assert "guide/template-refs.md" not in ids(result)
    only = search(config, "Template Refs", folder="typescript")
    assert ids(only) == ["typescript/composition-api.md"] and only["total"] == 1
    kept = search(config, "Template Refs", tags=["guide"])
    assert ids(kept) == ["guide/template-refs.md"] and kept["total"] == 1


def test_explain_shows_the_tier_s_part_of_the_score(vault: Path, config: Config, amem: Any) -> None:
    typed_refs(vault)
    done = amem("search", "--explain", "Template", "Refs")
    assert done.exit_code == 0, done.stderr
    hits = done.json["hits"]
    assert [hit["id"] for hit in hits] == ["guide/template-refs.md", "typescript/composition-api.md"]
    titled, other = (hit["explain"] for hit in hits)
    assert "titleBonus" not in other
    # S × ΣIDF, IDF = ln(1 + (N − df + 0.5)/(df + 0.5)) of each word: 8 notes, both words in 2.
    idf = math.log(1 + (8 - 2 + 0.5) / (2 + 0.5))
    assert titled["titleBonus"] == float(f"{rank.EXACT_TITLE * 2 * idf:.6g}")
    assert hits[0]["score"] == titled["keywordScore"] and hits[0]["score"] > titled["titleBonus"] > 0
    plain = amem("search", "Template", "Refs").json
    assert [hit["score"] for hit in plain["hits"]] == [hit["score"] for hit in hits]
