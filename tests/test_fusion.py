"""Fusion per query and `amem search --explain`: the semantic ranking moves the keyword ranking as far as the
query's own evidence allows (an exact title or heading, a sure keyword margin, a question, the query's
script), and --explain (MCP `explain`) shows per hit where its rank came from and per result why."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from amem.config import load_config
from amem.search import fusion
from amem.search.query import search
from amem.semantic import semantic
from tests.conftest import write_file
from tests.installed import installed_runner
from tests.test_mcp import TOOL_LIST_CHARS, Client, serve, tool_list_chars

needs_model = pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")

NOTES = {
    "auth.md": "---\ntitle: Token lifetime\n---\nAccess tokens expire after fifteen minutes; refresh tokens after "
    "thirty days.\n\n## Refresh tokens\n\nA refresh token buys a new access token.\n",
    "ops/deploy.md": "# Deploy\n\nThe staging server is rebuilt every night from the main branch.\n",
    "coffee.md": "# Coffee\n\nThe espresso machine on the third floor needs descaling each month.\n",
    "zh/auth.md": "# 认证令牌\n\n访问令牌在十五分钟后过期，刷新令牌在三十天后过期。\n",
    "zh/deploy.md": "# 部署\n\n预发布服务器每天晚上从主分支重新构建。\n",
}
QUESTION = "how long do credentials stay valid"


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


@pytest.fixture
def notes(vault: Path) -> Path:
    for name, text in NOTES.items():
        write_file(vault / name, text)
    return vault


def check_explained(result: Mapping[str, Any]) -> None:
    """Every hit's fused score is what its two sources and the fusion say: keywords at 1 / (k + rank), the
    semantic ranking at weight / (k + rank); a keyword-only search keeps its keyword scores."""
    plan = result["fusion"]
    for hit in result["hits"]:
        explain = hit["explain"]
        if not result["fused"]:
            assert explain["similarity"] is None and explain["semanticRank"] is None
            assert hit["score"] == explain["keywordScore"]
            continue
        expected = 0.0
        if explain["keywordRank"] is not None:
            expected += 1 / (plan["k"] + explain["keywordRank"])
        if explain["semanticRank"] is not None and plan["weight"] > 0:
            expected += plan["weight"] / (plan["k"] + explain["semanticRank"])
        assert hit["score"] == pytest.approx(expected, abs=1e-6), hit


# --- evidence (no model needed) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "script", "question"),
    [
        ("how long do credentials stay valid", "latin", True),
        ("Refresh tokens", "latin", False),
        ("can I change the brackets?", "latin", True),
        ("run some code after my component appears on the page", "latin", False),
        ("怎么拿到真实的输入框元素", "cjk", True),
        ("认证令牌", "cjk", False),
        ("v-model 的修饰符", "cjk", False),  # two words of each: a Chinese word is two characters
        ("v-model modifiers 的修饰符", "latin", False),
    ],
)
def test_a_querys_shape_and_script(text: str, script: str, question: bool) -> None:
    assert fusion.script_of(text) == script
    assert fusion.is_question(text) is question


def test_the_evidence_picks_the_weight_in_order() -> None:
    latin = fusion.Profile(fusion.DEFAULT_PROFILE.weights, {"latin": fusion.FULLY})

    def why(script: str, phrase: str | None, margin: float | None, question: bool, words: int = 2) -> str:
        return fusion.decide(fusion.Evidence(script, phrase, margin, question, words), latin).why

    assert why("cjk", "head", 9.0, True) == "script"  # a script the model does not read: keywords alone
    assert why("latin", "head", 9.0, True) == "phrase"
    assert why("latin", "body", fusion.MARGIN, True) == "question"  # a question is not silenced by a margin
    assert why("latin", "body", fusion.MARGIN, False) == "margin"
    assert why("latin", None, None, True) == "question"
    assert why("latin", None, 1.0, False) == "words"
    assert why("latin", None, 1.0, False, fusion.LONG_WORDS) == "question"  # a sentence reads as one
    both = fusion.Profile({**latin.weights, "question": 2.0}, {"latin": fusion.FULLY, "cjk": 0.2})
    cjk = fusion.decide(fusion.Evidence("cjk", None, None, True, 1), both)
    assert (cjk.why, cjk.weight) == ("question", 0.2)  # a script read weakly caps the weight
    assert all(profile.weights["script"] == 0 for profile in fusion.PROFILES.values())


def test_at_weight_zero_the_semantic_ranking_adds_and_moves_nothing() -> None:
    plan = fusion.Plan(0.0, 5, "script", fusion.Evidence("cjk", None, None, False, 1))
    keyword = [("b", 3.0), ("a", 2.0)]
    fused = fusion.fuse(plan, keyword, [("c", 0.9), ("a", 0.8)])
    assert [note_id for note_id, _, _ in fused] == ["b", "a"]
    assert fused[1][2] == fusion.Explained(2.0, 2, None, None)


def test_a_model_declares_the_scripts_it_reads() -> None:
    class Multilingual:
        scripts = ("latin", "cjk")

    assert set(fusion.profile_of("my-folder", Multilingual()).scripts) == {"latin", "cjk"}
    assert set(fusion.profile_of("my-folder", object()).scripts) == {"latin"}  # undeclared: Latin only
    assert set(fusion.profile_of("minilm", None).scripts) == {"latin"}


# --- explain without the model -----------------------------------------------------------------------


def test_explain_gives_keyword_scores_and_ranks_and_says_nothing_was_fused(notes: Path, amem: Any) -> None:
    done = amem("search", "--explain", "refresh", "tokens")
    assert done.exit_code == 0, done.stderr
    result = done.json
    assert ids(result)[0] == "auth.md"
    assert [hit["explain"]["keywordRank"] for hit in result["hits"]] == list(range(1, len(result["hits"]) + 1))
    assert result["fusion"]["why"] == "off" and result["fusion"]["weight"] == 0
    assert result["fusion"]["phrase"] == "head"  # "Refresh tokens" is auth.md's heading
    check_explained(result)
    plain = amem("search", "refresh", "tokens").json
    assert "fusion" not in plain and all("explain" not in hit for hit in plain["hits"])
    assert ids(plain) == ids(result) and [h["score"] for h in plain["hits"]] == [h["score"] for h in result["hits"]]


def test_explain_with_an_exact_title_says_so(notes: Path, amem: Any) -> None:
    done = amem("search", "--explain", "--exact-title", "token lifetime")
    assert done.exit_code == 0, done.stderr
    assert ids(done.json) == ["auth.md"]
    assert done.json["fusion"]["why"] == "exactTitle"
    assert done.json["hits"][0]["explain"] == {
        "keywordScore": None,
        "keywordRank": None,
        "similarity": None,
        "semanticRank": None,
    }


# --- with the model ----------------------------------------------------------------------------------


@needs_model
def test_a_question_gets_the_semantic_weight_and_explain_traces_every_score(notes: Path) -> None:
    config = load_config()
    result = search(config, QUESTION, semantic=True, explain=True)
    assert result["fused"] and result["fusion"]["why"] == "question"
    weights = fusion.PROFILES[semantic.DEFAULT_MODEL].weights
    assert result["fusion"]["weight"] == weights["question"] > weights["phrase"]
    assert ids(result)[0] == "auth.md"
    top = result["hits"][0]["explain"]
    assert top["keywordRank"] is None and top["semanticRank"] == 1
    assert top["similarity"] is not None and top["similarity"] > 0
    check_explained(result)
    assert ids(search(config, QUESTION, semantic=True)) == ids(result)


@needs_model
def test_an_exact_heading_keeps_its_page_first_at_the_phrase_weight(notes: Path) -> None:
    config = load_config()
    result = search(config, "refresh tokens", semantic=True, explain=True)
    weights = fusion.PROFILES[semantic.DEFAULT_MODEL].weights
    assert result["fusion"]["why"] == "phrase" and result["fusion"]["weight"] == weights["phrase"]
    assert ids(result)[0] == "auth.md"
    check_explained(result)


@needs_model
def test_a_question_keywords_are_sure_of_still_gets_the_semantic_weight(notes: Path) -> None:
    """A keyword margin says keywords agree with themselves, not that they are right: a question is fused."""
    result = search(
        load_config(), "how often is the espresso machine on the staging floor descaled", semantic=True, explain=True
    )
    first, second = (hit["explain"]["keywordScore"] for hit in result["hits"][:2])
    assert first is not None and second is not None
    assert first >= fusion.MARGIN * second  # keywords are sure of their answer
    weights = fusion.PROFILES[semantic.DEFAULT_MODEL].weights
    assert result["fusion"]["why"] == "question" and result["fusion"]["weight"] == weights["question"]
    check_explained(result)


@needs_model
def test_a_query_that_is_a_pages_whole_title_is_protected_as_a_phrase(notes: Path) -> None:
    """One meaningful word and a question word: no phrase, but the page titled so keeps the phrase weight."""
    write_file(notes / "why.md", "# Why amem?\n\nNotes that scripts and agents share, kept as plain Markdown.\n")
    result = search(load_config(), "Why amem?", semantic=True, explain=True)
    weights = fusion.PROFILES[semantic.DEFAULT_MODEL].weights
    assert result["fusion"]["why"] == "phrase" and result["fusion"]["weight"] == weights["phrase"]
    assert ids(result)[0] == "why.md"


@needs_model
def test_a_chinese_query_with_a_latin_only_model_stays_keyword_only(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = fusion.PROFILES[semantic.DEFAULT_MODEL].weights
    monkeypatch.setitem(fusion.PROFILES, semantic.DEFAULT_MODEL, fusion.Profile(weights, {"latin": fusion.FULLY}))
    config = load_config()
    keyword = search(config, "令牌多久过期", semantic=False, explain=True)
    fused = search(config, "令牌多久过期", semantic=True, explain=True)
    assert fused["fused"] and fused["fusion"]["why"] == "script" and fused["fusion"]["weight"] == 0
    assert fused["fusion"]["script"] == "cjk"
    assert ids(fused) == ids(keyword) and fused["total"] == keyword["total"]
    assert all(hit["explain"]["semanticRank"] is None for hit in fused["hits"])
    check_explained(fused)
    # the same model, declared as reading Chinese, lets the semantic ranking in
    both = fusion.Profile(weights, {"latin": fusion.FULLY, "cjk": fusion.FULLY})
    monkeypatch.setitem(fusion.PROFILES, semantic.DEFAULT_MODEL, both)
    opened = search(config, "令牌多久过期", semantic=True, explain=True)
    assert opened["fusion"]["why"] != "script" and opened["fusion"]["weight"] > 0
    check_explained(opened)


@needs_model
def test_the_installed_amem_explains_the_same_way_every_time(notes: Path, tmp_path: Path) -> None:
    run = installed_runner(tmp_path, notes)  # AMEM_VAULT names the vault
    first = run("search", "--semantic", "--explain", QUESTION)
    second = run("search", "--semantic", "--explain", QUESTION)
    assert first.code == 0, first.stderr
    assert first.stdout == second.stdout  # byte for byte: a keeper answering it must give the same
    result = first.json
    assert result["fusion"]["why"] == "question" and ids(result)[0] == "auth.md"
    check_explained(result)
    bad = run("search", "--explain", "--limit", "0", QUESTION)
    assert bad.code != 0 and "error" in json.loads(bad.stderr) and "Traceback" not in bad.stderr


# --- over MCP ----------------------------------------------------------------------------------------


def test_wiki_search_explains_and_its_schema_says_how(notes: Path, isolated_env: Path) -> None:
    seen: dict[str, Any] = {}

    async def test(client: Client) -> None:
        result = await client.session.list_tools()
        seen["tools"] = {tool.name: tool for tool in result.tools}
        seen["size"] = tool_list_chars(result)
        seen["explained"] = await client.ok("wiki_search", query="refresh tokens", explain=True)
        seen["plain"] = await client.ok("wiki_search", query="refresh tokens")

    serve(isolated_env, test)
    schema = seen["tools"]["wiki_search"].output_schema
    assert "explain" in seen["tools"]["wiki_search"].input_schema["properties"]
    explained = seen["explained"]
    jsonschema.validate(explained, schema)
    jsonschema.validate(seen["plain"], schema)
    assert explained["fusion"]["phrase"] == "head" and explained["hits"][0]["explain"]["keywordRank"] == 1
    assert "fusion" not in seen["plain"]
    assert ids(explained) == ids(seen["plain"])
    wrong = dict(explained, fusion="heavy")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, schema)
    assert seen["size"] <= TOOL_LIST_CHARS, seen["size"]
