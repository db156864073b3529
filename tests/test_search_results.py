"""What a search returns besides its order: the limit and the total of every match (truncated), the
default limit, a hit's fields, snippets, expiry, --exact-title's list, which files are searched (excluded
and hidden folders, extensions, notes not UTF-8 or unreadable), an empty vault, and the command line: one
JSON document, usage errors, the installed command."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.cli import run
from amem.config import Config, load_config
from amem.notes.tokenize import Query, is_cjk
from amem.search.query import is_expired, search
from tests.conftest import write_file
from tests.test_search_ranking import GOLDEN_ORDER, write_golden


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def note(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n{body}\n"


def test_limit_cuts_the_list_and_total_counts_every_match(vault: Path, config: Config) -> None:
    for i in range(7):
        write_file(vault / f"n{i}.md", note(f"N{i}", "match " * (i + 1)))
    write_file(vault / "miss.md", note("Miss", "nothing"))
    limited = search(config, "match", limit=3)
    assert (len(limited["hits"]), limited["total"], limited["truncated"]) == (3, 7, True)
    assert ids(limited) == ids(search(config, "match"))[:3]
    whole = search(config, "match", limit=7)
    assert (len(whole["hits"]), whole["total"], whole["truncated"]) == (7, 7, False)


def test_the_default_limit_is_max_search_results(vault: Path, isolated_env: Path) -> None:
    for i in range(5):
        write_file(vault / f"n{i}.md", note(f"N{i}", "match"))
    write_file(isolated_env / ".amem" / "config.yaml", "maxSearchResults: 2\n")
    result = search(load_config(), "match")
    assert (len(result["hits"]), result["total"], result["truncated"]) == (2, 5, True)


# --- a golden vault (test_search_ranking) ------------------------------------------------------------


@pytest.fixture
def golden(vault: Path, config: Config) -> Config:
    write_golden(vault)
    return config


def test_golden_hit_shape_and_snippet(golden: Config) -> None:
    result = search(golden, "令牌")
    assert result["fused"] is False and result["semantic"] == "unavailable"
    hit = result["hits"][0]
    assert set(hit) == {"id", "title", "score", "backlinks", "backlinkCount", "expired", "snippet", "line"}
    assert hit["title"] == "用户认证" and hit["backlinks"] == ["zh/搜索索引.md"] and hit["expired"] is False
    assert "令牌" in hit["snippet"]


# --- snippets and expiry -----------------------------------------------------------------------------


def test_the_snippet_is_a_short_excerpt_around_the_first_match(vault: Path, config: Config) -> None:
    words = " ".join(f"word{i}" for i in range(200))
    write_file(vault / "long.md", note("Long", f"{words} Needle in the middle {words}"))
    snippet = search(config, "needle")["hits"][0]["snippet"]
    assert "Needle in the middle" in snippet and snippet.startswith("…") and snippet.endswith("…")
    assert len(snippet) <= 170
    write_file(vault / "title-only.md", note("Haystack", "The body starts here."))
    assert search(config, "haystack")["hits"][0]["snippet"] == "The body starts here."


SNIPPET_ALPHABET = ["auth", "Auth", "ＡＵＴＨ", "authentication", "token", "word", " ", "\n", "---\n", "x: 1\n"]
SNIPPET_ALPHABET += ["认证", "书", "é", "\u0301", "_", "\ufeff"]


_made = itertools.count()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.tuples(
        st.sampled_from(["", "---\n", "\ufeff---\n"]),  # a frontmatter opened, closed or not within the start
        st.lists(st.sampled_from(SNIPPET_ALPHABET), min_size=30, max_size=150).map("".join),
    ).map("".join),
    st.sampled_from(["auth", "authentication", "token", "认证", "认证 证书"]),
    st.integers(8, 80),
)
def test_a_long_notes_snippet_read_from_its_start_is_the_whole_notes(
    isolated_env: Path, text: str, word: str, size: int
) -> None:
    """A hit's snippet reads a long note's first SNIPPET_READ characters only, and the rest only when they do
    not settle it (its first match near or past them, a frontmatter not closed there): the snippet is the
    one the whole note gives. Excerpts and reads the size of these texts stand for the real ones."""
    from amem.search import query

    root = isolated_env / f"snippet-{next(_made)}"
    write_file(root / "n.md", text)
    config = load_config(vault=root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(query, "SNIPPET_CHARS", 12)
        patch.setattr(query, "SNIPPET_BEFORE", 4)
        whole = [hit["snippet"] for hit in search(config, f"{word} other")["hits"]]
        patch.setattr(query, "SNIPPET_READ", size)
        assert [hit["snippet"] for hit in search(config, f"{word} other")["hits"]] == whole


def _pattern_per_word(query: Query) -> re.Pattern[str] | None:
    """The snippet's pattern as first written: each word its own alternative, a Latin one behind its own
    word-start test (re tries that test once per word at every position: a note without a match cost three
    times the search)."""
    parts = [
        re.escape(word.terms[0])
        if word.terms[0] and is_cjk(word.terms[0][0])
        else rf"(?<![^\W_]){re.escape(word.terms[0])}"
        for word in query.words
    ]
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(SNIPPET_ALPHABET + ["Token", "tokens", "xauth", "_auth", "retries", "Retry"]), max_size=60
    ).map("".join),
    st.lists(st.sampled_from(["auth", "token", "retry", "认证", "书", "x", "the", "é"]), min_size=1, max_size=4).map(
        " ".join
    ),
)
def test_the_snippets_pattern_finds_the_first_match_where_each_word_alone_would(text: str, query: str) -> None:
    parsed = Query(query)
    pattern, reference = parsed.pattern(), _pattern_per_word(parsed)
    assert (pattern is None) == (reference is None)
    if pattern is not None and reference is not None:
        for folded in (text, text.casefold()):
            found, expected = pattern.search(folded), reference.search(folded)
            assert (found and found.start()) == (expected and expected.start())
            assert len(pattern.pattern) >= max((len(m.group()) for m in reference.finditer(folded)), default=0)


def test_expired_is_true_only_for_a_past_expires(vault: Path, config: Config) -> None:
    write_file(vault / "past.md", note("Past", "memo", "expires: 2001-01-01\n"))
    write_file(vault / "future.md", note("Future", "memo", "expires: 2999-01-01\n"))
    write_file(vault / "none.md", note("None", "memo"))
    write_file(vault / "odd.md", note("Odd", "memo", "expires: someday\n"))
    expired = {hit["id"]: hit["expired"] for hit in search(config, "memo")["hits"]}
    assert expired == {"past.md": True, "future.md": False, "none.md": False, "odd.md": False}


def test_expiry_is_judged_in_the_configured_zone() -> None:
    plus14 = timezone(timedelta(hours=14))
    minus12 = timezone(timedelta(hours=-12))
    today_far_east = datetime.now(plus14).date()
    yesterday_there = (today_far_east - timedelta(days=1)).isoformat()
    assert is_expired(yesterday_there, plus14) is True
    assert is_expired(today_far_east.isoformat(), plus14) is False  # a date expires after its last day
    assert is_expired(today_far_east.isoformat(), minus12) is False
    assert is_expired("2001-01-01T00:00:00Z", None) is True
    assert is_expired("2999-01-01T00:00:00", plus14) is False
    assert is_expired(20010101, None) is False


# --- exact title -------------------------------------------------------------------------------------


def test_exact_title_folds_unicode_form_case_and_separators(vault: Path, config: Config) -> None:
    write_file(vault / "nfd.md", note("Cafe\u0301 Menu", "x"))
    write_file(vault / "seps.md", note("a-b_c", "x"))
    write_file(vault / "upper.md", note("ÉCOLE", "x"))
    write_file(vault / "heading.md", "# Cafe\u0301   menu\nbody\n")
    assert ids(search(config, None, exact_title="café menu")) == ["heading.md", "nfd.md"]
    assert ids(search(config, None, exact_title="A B C")) == ["seps.md"]
    assert ids(search(config, None, exact_title="a--b c")) == ["seps.md"]
    assert ids(search(config, None, exact_title="école")) == ["upper.md"]
    assert ids(search(config, None, exact_title="abc")) == []


def test_exact_title_lists_every_match_by_id_with_total_and_truncated(vault: Path, config: Config) -> None:
    for name in ("z", "m", "a", "q"):
        write_file(vault / f"{name}.md", note("Status Report", f"report {name}"))
    write_file(vault / "other.md", note("Status Reports", "report"))
    result = search(config, None, exact_title="status-report", limit=2)
    assert ids(result) == ["a.md", "m.md"]
    assert (result["total"], result["truncated"]) == (4, True)
    assert all(hit["score"] is None for hit in result["hits"])


# --- what is searched --------------------------------------------------------------------------------


def test_excluded_and_hidden_folders_are_not_searched(vault: Path, isolated_env: Path) -> None:
    for folder in ("", "archive/", "deep/archive/", ".hidden/", "node_modules/", ".git/", ".obsidian/", "drafts/"):
        write_file(vault / f"{folder}n.md", note("N", "findme"))
    assert sorted(ids(search(load_config(), "findme"))) == ["drafts/n.md", "n.md"]
    write_file(isolated_env / ".amem" / "config.yaml", "indexHiddenDirs: true\nexcludeDirs: [drafts]\n")
    found = sorted(ids(search(load_config(), "findme")))
    assert found == [".hidden/n.md", "archive/n.md", "deep/archive/n.md", "n.md"]


def test_only_configured_extensions_are_notes(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "a.md", note("A", "findme"))
    write_file(vault / "b.txt", "findme")
    write_file(vault / "c.markdown", "findme")
    assert ids(search(load_config(), "findme")) == ["a.md"]
    write_file(isolated_env / ".amem" / "config.yaml", "extensions: ['.md', '.markdown']\n")
    assert ids(search(load_config(), "findme")) == ["a.md", "c.markdown"]


def test_a_note_that_is_not_utf8_is_skipped_with_a_warning(vault: Path, amem: Any) -> None:
    write_file(vault / "good.md", note("Good", "findme"))
    write_file(vault / "bad.md", b"findme \xff\xfe\xfa")
    result = amem("search", "findme")
    assert result.exit_code == 0 and ids(result.json) == ["good.md"]
    assert "bad.md" in result.stderr and "UTF-8" in result.stderr


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_note_is_skipped_with_a_warning(vault: Path, amem: Any) -> None:
    write_file(vault / "good.md", note("Good", "findme"))
    locked = write_file(vault / "locked.md", note("Locked", "findme"))
    locked.chmod(0)
    try:
        result = amem("search", "findme")
    finally:
        locked.chmod(0o644)
    assert result.exit_code == 0 and ids(result.json) == ["good.md"] and "locked.md" in result.stderr


def test_an_empty_or_missing_vault_has_no_hits(vault: Path, config: Config) -> None:
    assert search(config, "anything") == {
        "hits": [],
        "total": 0,
        "truncated": False,
        "fused": False,
        "semantic": "unavailable",
    }
    write_file(vault / "a.md", "")
    assert search(config, "anything")["total"] == 0
    assert search(config, "!!! ...")["total"] == 0  # no words at all


# --- command line ------------------------------------------------------------------------------------


def test_cli_search_prints_one_json_document(golden: Config, amem: Any) -> None:
    result = amem("search", "auth", "token", "--limit", "2")
    assert result.exit_code == 0
    assert ids(result.json) == GOLDEN_ORDER["auth token"][:2] and result.json["truncated"] is True
    assert result.stdout.count("\n") == 1


def test_cli_exact_title_needs_no_query(golden: Config, amem: Any) -> None:
    result = amem("search", "--exact-title", "token-ROTATION")
    assert result.exit_code == 0 and ids(result.json) == ["auth/token-rotation.md"]


@pytest.mark.parametrize("args", [["search"], ["search", "x", "--limit", "0"], ["search", "x", "--limit", "many"]])
def test_cli_usage_errors(vault: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert json.loads(captured.err.strip().splitlines()[-1])["error"]["code"] == "usage"


def test_installed_amem_searches_in_a_real_process(golden: Config, isolated_env: Path) -> None:
    script = Path(sys.executable).parent / "amem"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "amem"]
    done = subprocess.run([*command, "search", "认证"], cwd=isolated_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert ids(json.loads(done.stdout)) == GOLDEN_ORDER["认证"]
