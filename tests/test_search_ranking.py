"""What a search ranks first, and why: a title above a body, a title's phrase above a heading's, a rarer word
above a common one, the phrase bonus by field, the exact-title and exact-heading tiers (above pages that say
the words more often, for one word and in Chinese too, within filters, followed as notes change, with their
part of the score in --explain), the graph boost, ties by id, CJK runs, plain questions, and a golden vault
in English and Chinese. That the ranking equals its definition is test_search_ranking_model's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config
from amem.search import rank
from amem.search.query import search
from tests.conftest import write_file
from tests.installed import installed_runner


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def note(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n{body}\n"


FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"


def test_a_title_hit_outranks_a_body_hit(vault: Path, config: Config) -> None:
    write_file(vault / "one.md", note("Kubernetes", FILLER))
    write_file(vault / "two.md", note("Other", FILLER.replace("lorem", "kubernetes")))
    assert ids(search(config, "kubernetes")) == ["one.md", "two.md"]


def test_a_title_phrase_outranks_the_same_phrase_in_a_heading(isolated_env: Path) -> None:
    """The page titled with the query comes before a page with a heading of the same words, even when that
    page says the words more often (the title tier of the phrase bonus); through the installed amem."""
    root = isolated_env / "vault"
    for i in range(12):
        write_file(root / f"f{i}.md", note(f"filler {i}", f"lorem ipsum dolor sit amet {i}"))
    write_file(
        root / "computed.md",
        note("Computed Properties", "A page about values derived from state, kept in sync by the framework."),
    )
    write_file(
        root / "options.md",
        note(
            "Options API",
            "## Typing Computed Properties\n\nComputed properties are typed; computed properties, computed.",
        ),
    )
    done = installed_runner(isolated_env, root)("--vault", str(root), "search", "computed properties")
    assert done.code == 0, done.stderr
    assert ids(done.json) == ["computed.md", "options.md"]


def test_a_rarer_word_outranks_a_common_one(vault: Path, config: Config) -> None:
    write_file(vault / "a.md", note("A", f"{FILLER} common"))
    write_file(vault / "z.md", note("Z", f"{FILLER} rare"))
    for i in range(5):
        write_file(vault / f"f{i}.md", note(f"F{i}", f"{FILLER} common"))
    assert ids(search(config, "common rare"))[0] == "z.md"


def test_the_phrase_bonus_is_the_sum_of_idfs_in_the_title_and_half_in_the_body(vault: Path, config: Config) -> None:
    body_words = "token and then rotation"
    write_file(vault / "apart.md", note("Apart", body_words))
    write_file(vault / "body.md", note("Body", "token rotation and then"))
    write_file(vault / "title.md", note("Token rotation", "and then nothing"))
    write_file(vault / "other.md", note("Other", "unrelated words only"))
    hits: dict[str, Any] = {hit["id"]: hit["score"] for hit in search(config, "token rotation")["hits"]}
    n, df = 4, 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    assert hits["body.md"] - hits["apart.md"] == pytest.approx(idf, abs=1e-5)  # half of 2·idf
    assert list(hits) == ["title.md", "body.md", "apart.md"]


def test_a_note_linked_from_a_strong_hit_gains_a_share_of_its_score(vault: Path, config: Config) -> None:
    write_file(vault / "strong.md", note("Deploy", "deploy deploy deploy [[linked]]"))
    write_file(vault / "linked.md", note("L", "we deploy once"))
    write_file(vault / "plain.md", note("P", "we deploy once"))
    write_file(vault / "unrelated.md", note("U", "nothing here [[linked]]"))
    hits: dict[str, Any] = {hit["id"]: hit["score"] for hit in search(config, "deploy")["hits"]}
    assert list(hits) == ["strong.md", "linked.md", "plain.md"]
    assert hits["linked.md"] - hits["plain.md"] == pytest.approx(0.15 * hits["strong.md"], abs=1e-5)


def test_the_graph_boost_adds_no_note_that_does_not_match(vault: Path, config: Config) -> None:
    write_file(vault / "strong.md", note("Deploy", "deploy [[unrelated]]"))
    write_file(vault / "unrelated.md", note("U", "nothing here"))
    result = search(config, "deploy")
    assert ids(result) == ["strong.md"] and result["total"] == 1


def test_a_long_cjk_run_matches_its_pairs_and_ranks_the_whole_run_first(vault: Path, config: Config) -> None:
    # Chinese is written unspaced, so a run is often a whole question: each pair counts, the run as a
    # phrase ranks first.
    write_file(vault / "split.md", note("认证", "证令"))  # 认证 in the title, 证令 in the body
    write_file(vault / "whole.md", note("W", "认证令牌"))
    write_file(vault / "none.md", note("N", "令牌"))
    result = search(config, "认证令")
    assert ids(result) == ["whole.md", "split.md"] and result["total"] == 2


def test_backlinking_notes_ids_count_for_the_note_they_link_to(vault: Path, config: Config) -> None:
    write_file(vault / "kubernetes-notes.md", note("K", "see [[target]]"))
    write_file(vault / "target.md", note("Target", "nothing about it"))
    write_file(vault / "other.md", note("Other", "nothing about it"))
    assert ids(search(config, "kubernetes")) == ["kubernetes-notes.md", "target.md"]


def test_equal_scores_are_ordered_by_id(vault: Path, config: Config) -> None:
    for name in ("c", "a", "d", "b"):
        write_file(vault / f"{name}.md", note("Same", "identical body text"))
    result = search(config, "identical")
    assert ids(result) == ["a.md", "b.md", "c.md", "d.md"]
    assert len({hit["score"] for hit in result["hits"]}) == 1


def test_a_plain_question_finds_its_note_and_counts_only_real_matches(vault: Path, config: Config) -> None:
    write_file(vault / "embed-files.md", note("Embed files", "Use ![[picture.png]] to show a picture inline."))
    write_file(vault / "links.md", note("Internal links", "Linking notes: write [[note]] to link to a note."))
    write_file(vault / "attach.md", note("Attachments", "An attachment is a file kept beside the notes."))
    for i in range(6):  # every note is full of stop words and one-letter words
        write_file(vault / f"filler{i}.md", note(f"Filler {i}", "a to how the of it is I as an at on"))
    result = search(config, "how to embed a file")
    assert ids(result)[0] == "embed-files.md"
    assert sorted(ids(result)) == ["attach.md", "embed-files.md"] and result["total"] == 2
    assert ids(search(config, "linking"))[0] == "links.md"  # linking / links / link meet
    assert search(config, "at")["total"] == 6  # alone, a stop word matches exactly: no "attachment"


# --- the exact-title tier ----------------------------------------------------------------------------
#
# A note whose whole title (its `{#anchor}` aside, folded as --exact-title folds) is the query ranks above a
# note that only holds the query in a heading and says it more often.


def unrelated(vault: Path, text: str = "# Other {i}\n\nA page about something else, number {i}.\n") -> None:
    """Six pages about something else, in other/: the query's words are rare, as in a real vault."""
    for i in range(6):
        write_file(vault / f"other/o{i}.md", text.format(i=i))


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


def test_explain_shows_the_title_tier_s_part_of_the_score(vault: Path, config: Config, amem: Any) -> None:
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


# --- the exact-heading tier --------------------------------------------------------------------------
#
# A note with a heading that is the whole query (its `{#anchor}` aside, folded as a title) ranks above notes
# that say the query's words more often, and below a note titled as the query.


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


def test_explain_shows_the_heading_tier_s_part_of_the_score(vault: Path, config: Config, amem: Any) -> None:
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


# --- a golden vault ----------------------------------------------------------------------------------


GOLDEN = {
    "auth/oauth-flow.md": note(
        "OAuth flow",
        "How the authorization code flow works. The client exchanges the "
        "code for an access token.\n\nSee [[auth/token-rotation]].",
    ),
    "auth/token-rotation.md": note(
        "Token rotation", "Rotate the refresh token every day. Auth token rotation keeps sessions safe."
    ),
    "notes/session-cache.md": note("Session cache", "The session cache stores tokens in memory for fast lookup."),
    "zh/用户认证.md": note("用户认证", "用户认证令牌在登录后签发。令牌过期后需要重新认证。"),
    "zh/搜索索引.md": note("搜索索引", "中文搜索需要分词，我们用二元组建立索引。参见 [[用户认证]]。"),
    "mixed/auth-zh.md": note(
        "Auth 认证 notes", "The auth token（认证令牌）is issued by the login service. 中英文混合的笔记。"
    ),
    "daily/2026-11-29.md": note("2026-11-29", "Met about search index performance. Auth token bug fixed."),
    "archive/old-auth.md": note("Old auth", "auth token auth token auth token"),
}


GOLDEN_ORDER = {
    # The id "auth/token-rotation" holds the phrase; oauth-flow has "auth" in its id and a token in its body.
    "auth token": [
        "auth/token-rotation.md",
        "auth/oauth-flow.md",
        "mixed/auth-zh.md",
        "daily/2026-11-29.md",
        "notes/session-cache.md",
    ],
    "认证": ["zh/用户认证.md", "mixed/auth-zh.md", "zh/搜索索引.md"],
    "令牌": ["zh/用户认证.md", "mixed/auth-zh.md"],
    # 用户认证 does not contain 索引, but 搜索索引, whose id does, links to it.
    "索引": ["zh/搜索索引.md", "zh/用户认证.md"],
    # Both words are rare, "index" the rarer (搜索 is also in 用户认证's backlinks field): BM25 puts the
    # note that has it first, though 搜索 is in 搜索索引's id and title.
    "搜索 index": ["daily/2026-11-29.md", "zh/搜索索引.md", "zh/用户认证.md"],
    # "auth" is in more than half the notes, so it adds almost nothing; the note with both words leads.
    "auth 认证": [
        "mixed/auth-zh.md",
        "zh/用户认证.md",
        "zh/搜索索引.md",
        "auth/token-rotation.md",
        "auth/oauth-flow.md",
        "daily/2026-11-29.md",
    ],
    # Natural-language queries: stop words and one-letter words neither match nor count.
    # ("token" is in more than half the notes: the rest tie near zero and go by length.)
    "how do I rotate a token": [
        "auth/token-rotation.md",
        "auth/oauth-flow.md",
        "notes/session-cache.md",
        "daily/2026-11-29.md",
        "mixed/auth-zh.md",
    ],
    "the session": ["notes/session-cache.md", "auth/token-rotation.md"],
    # Inflections meet: "sessions" finds "session", "rotating" finds "rotation" and "rotate".
    "sessions": ["notes/session-cache.md", "auth/token-rotation.md"],
    "rotation": ["auth/token-rotation.md", "auth/oauth-flow.md"],  # a link's target is text of the body
    "session": ["notes/session-cache.md", "auth/token-rotation.md"],
    "认": ["zh/用户认证.md", "mixed/auth-zh.md", "zh/搜索索引.md"],
}


def write_golden(vault: Path) -> None:
    for note_id, text in GOLDEN.items():
        write_file(vault / note_id, text)


@pytest.fixture
def golden(vault: Path, config: Config) -> Config:
    write_golden(vault)
    return config


@pytest.mark.parametrize("query", list(GOLDEN_ORDER))
def test_golden_vault_order(golden: Config, query: str) -> None:
    result = search(golden, query)
    assert ids(result) == GOLDEN_ORDER[query]
    assert result["total"] == len(GOLDEN_ORDER[query]) and result["truncated"] is False
