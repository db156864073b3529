"""What a query's words match: words folded (NFKC, case), letters and digits only, inflections meeting at
their stem, CJK runs as pairs, Japanese and Korean as CJK, stop words and one-letter words only when the query
has nothing else, a word as the prefix of longer ones, titles folded for --exact-title."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amem.config import Config
from amem.notes.tokenize import Query, field_text, terms_of, title_key, word_runs
from amem.search.query import search
from tests.conftest import write_file


def note(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n{body}\n"


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def terms(text: str) -> list[str]:
    return terms_of(word_runs(text))


def test_words_are_folded_with_nfkc_and_case_folding() -> None:
    assert terms("Ｔｏｋｅｎ STRASSE Straße Ǆemal") == ["token", "strasse", "strasse", "džemal"]


def test_words_are_letters_and_digits_only() -> None:
    assert terms("snake_case kebab-case a.b v2 [[link|alias]]") == [
        "snake",
        "case",
        "kebab",
        "case",
        "a",
        "b",
        "v2",
        "link",
        "alia",
    ]


def test_inflected_english_words_meet_at_their_stem() -> None:
    assert terms("files file linking links linked embedding embeds queries query making make") == [
        "file",
        "file",
        "link",
        "link",
        "link",
        "embed",
        "embed",
        "queri",
        "queri",
        "make",
        "make",
    ]
    assert terms("status process analysis bus") == ["status", "process", "analysis", "bus"]


def test_cjk_runs_give_each_character_with_its_successor_then_the_last_alone() -> None:
    assert terms("用户认证令牌") == ["用户", "户认", "认证", "证令", "令牌", "牌"]


def test_cjk_is_split_from_latin_in_one_run() -> None:
    assert terms("token认证v2") == ["token", "认证", "证", "v2"]


def test_japanese_and_korean_are_cjk() -> None:
    assert "検索" in terms("全文検索エンジン")
    assert "ンジ" in terms("全文検索エンジン")
    assert "검색" in terms("전문검색")


def test_combining_marks_stay_in_their_word() -> None:
    assert terms("हिन्दी") == ["हिन्दी"]


def test_the_stored_field_is_the_terms_in_order() -> None:
    for text in ["Hello_world files 用户认证令牌 token认证v2 全文検索エンジン", "plain ascii Files", "", "。、"]:
        assert field_text(text) == " ".join(terms(text))


def test_stop_words_and_one_letter_words_do_not_match_when_the_query_has_others() -> None:
    query = Query("how to embed a file")
    assert [w.expression() for w in query.words] == ['"embed"*', '"file"*']
    assert query.count == 2
    assert '"how to embed a file"*' in query.phrases and '"embed file"*' in query.phrases
    only_stop = Query("the a")
    assert [w.expression() for w in only_stop.words] == ['"the"', '"a"']  # exact, never a prefix
    assert Query("认").words[0].expression() == '"认"*'
    run = Query("用户认证")
    assert [w.expression() for w in run.words] == ['"用户"', '"户认"', '"认证"']
    assert run.phrases == ['"用户 户认 认证 证"*']  # the run as stored: its last character a prefix


def test_title_key_folds_form_case_and_separators() -> None:
    assert title_key("Cafe\u0301") == title_key("Café") == title_key("CAFÉ")
    assert title_key("a-b_c") == title_key("A B C") == title_key("a  --__ b c ")
    assert title_key("ab c") != title_key("a bc")


def test_a_query_word_matches_longer_words_it_starts(vault: Path, config: Config) -> None:
    write_file(vault / "a.md", note("A", "Authentication happens here."))
    write_file(vault / "b.md", note("B", "OAuth is not a prefix match."))
    assert ids(search(config, "auth")) == ["a.md"]
