"""amem search: ranking (against a brute-force model and as properties), a golden vault in English and
Chinese, exact-title checks, snippets, expiry, skipped notes, excluded folders and the command line."""

from __future__ import annotations

import itertools
import json
import math
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
from amem.index.fts import head_text, headings_text, links_text
from amem.notes.tokenize import Query, field_text, is_cjk, title_key
from amem.search.query import is_expired, search
from tests.conftest import write_file
from tests.installed import installed_runner


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def note(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n{body}\n"


# --- a brute-force model of the ranking ---------------------------------------------------------------
#
# Computes every note's score from scratch, field by field, with none of the engine's machinery (no
# FTS5, no SQL, no candidate cut), so that matching, BM25 as FTS5 defines it, the phrase bonus and the
# graph boost are checked against their definition (see amem.search.rank). Fields are turned into terms
# by the same functions the index uses; the tokenizer has tests of its own.

K1, B = 1.2, 0.75
WEIGHTS = (5.0, 4.0, 1.0, 1.0)  # head, headings, links, body
PHRASE_SHARES = (1.05, 1.0, 0.5)  # of ΣIDF, for a phrase in the head, else a heading, else the body
EXACT_TITLE = 0.5  # of ΣIDF, for a note whose whole title (folded, `{#anchor}` aside) is the query
EXACT_HEADING = 0.25  # of ΣIDF, for a note with a heading (folded, `{#anchor}` aside) that is the query
HEADING_LINE = re.compile(r"^#{1,6} +(.*?)(?: *\{#[^}]*\})?$")


def heading_keys(body: str) -> set[str]:
    """The folded headings of a body (the model's bodies have no code fences)."""
    return {title_key(m.group(1)) for line in body.split("\n") if (m := HEADING_LINE.match(line))}


def occurrences(terms: list[str], prefix: bool, tokens: list[str]) -> int:
    n = len(terms)
    found = 0
    for i in range(len(tokens) - n + 1):
        window = tokens[i : i + n]
        if window[:-1] == terms[:-1] and (window[-1].startswith(terms[-1]) if prefix else window[-1] == terms[-1]):
            found += 1
    return found


def model(
    notes: dict[str, tuple[str, str]], links: dict[str, set[str]], query: str, limit: int
) -> tuple[list[tuple[str, float]], int]:
    """notes: id → (title, body); links: id → ids it links to. Returns ranked (id, score) and total."""
    rows: dict[str, list[list[str]]] = {}
    for note_id, (title, body) in notes.items():
        sources = sorted(src for src in notes if src != note_id and note_id in links.get(src, set()))
        rows[note_id] = [
            text.split()
            for text in (head_text(note_id, title), headings_text(body), links_text(sources), field_text(body))
        ]
    n = len(notes)
    avgdl = sum(sum(map(len, cols)) for cols in rows.values()) / n
    parsed = Query(query)
    base: dict[str, float] = {}
    for word in parsed.words:
        f = {}
        for note_id, cols in rows.items():
            counts = [occurrences(word.terms, word.prefix, col) for col in cols]
            if any(counts):
                f[note_id] = sum(w * c for w, c in zip(WEIGHTS, counts, strict=True))
        idf = math.log((n - len(f) + 0.5) / (len(f) + 0.5))
        idf = idf if idf > 0 else 1e-6
        for note_id, value in f.items():
            length = sum(map(len, rows[note_id]))
            base[note_id] = base.get(note_id, 0.0) + idf * (value * (K1 + 1)) / (
                value + K1 * (1 - B + B * length / avgdl)
            )
    bonus = 0.0
    key = title_key(query)
    exact = any(title_key(title) == key or key in heading_keys(body) for title, body in notes.values())
    if parsed.phrases or exact:
        for word in parsed.words:
            dfs = []
            for i, term in enumerate(word.terms):
                if word.prefix and i == len(word.terms) - 1:
                    vocab = {t for cols in rows.values() for col in cols for t in col if t.startswith(term)}
                    df = sum(1 for cols in rows.values() for t in vocab if any(t in col for col in cols))
                else:
                    df = sum(1 for cols in rows.values() if any(term in col for col in cols))
                dfs.append(min(n, df))
            df = min(dfs)
            bonus += math.log(1 + (n - df + 0.5) / (df + 0.5))
    phrases = [(p.strip("*").strip('"').split(), p.endswith("*")) for p in parsed.phrases]
    scored = {}
    for note_id, score in base.items():
        head, headings, _linking, body_terms = rows[note_id]
        for field, share in zip((head, headings, body_terms), PHRASE_SHARES, strict=True):
            if any(occurrences(terms, prefix, field) for terms, prefix in phrases):
                score += bonus * share
                break
        if title_key(notes[note_id][0]) == key:
            score += bonus * EXACT_TITLE
        if key in heading_keys(notes[note_id][1]):
            score += bonus * EXACT_HEADING
        scored[note_id] = score
    final = {}
    for note_id, score in scored.items():
        linking = [scored[src] for src in scored if src != note_id and note_id in links.get(src, set())]
        final[note_id] = score + 0.15 * max(linking) if linking else score
    ranked = sorted(final.items(), key=lambda item: (-float(f"{item[1]:.9g}"), item[0]))
    return [(note_id, float(f"{score:.6g}")) for note_id, score in ranked[:limit]], len(final)


VOCABULARY = [
    "alpha",
    "alphabet",
    "al",
    "beta",
    "betamax",
    "gamma",
    "delta",
    "认证",
    "用户认证令牌",
    "令牌",
    "认",
    "证令",
    "token",
    "tokens",
]
IDS = ["a.md", "b.md", "x/c.md", "x/y/d.md", "alpha.md", "beta/gamma.md", "认证.md", "token-store.md"]
_made = itertools.count()


@st.composite
def vaults(draw: st.DrawFn) -> tuple[dict[str, tuple[str, str]], dict[str, set[str]]]:
    chosen = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=7, unique=True))
    words = st.sampled_from(VOCABULARY)
    notes, links = {}, {}
    for note_id in chosen:
        title = " ".join(draw(st.lists(words, min_size=1, max_size=3)))
        body = draw(st.sampled_from([" ", "", ". "])).join(draw(st.lists(words, max_size=25)))
        if draw(st.booleans()):  # a heading of one or two words, some with an anchor, some the title
            heading = draw(st.one_of(st.just(title), st.lists(words, min_size=1, max_size=2).map(" ".join)))
            anchor = draw(st.sampled_from(["", " {#a}", " {#a-b}"]))
            body = f"{draw(st.sampled_from(['#', '##', '###']))} {heading}{anchor}\n{body}"
        notes[note_id] = (title, body)
        links[note_id] = set(draw(st.lists(st.sampled_from(chosen), max_size=3)))
    return notes, links


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    vault=vaults(),
    query=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(" ".join),
    limit=st.integers(1, 5),
)
def test_ranking_equals_the_brute_force_model(
    isolated_env: Path, vault: tuple[dict[str, tuple[str, str]], dict[str, set[str]]], query: str, limit: int
) -> None:
    notes, links = vault
    root = isolated_env / f"model-{next(_made)}"
    for note_id, (title, body) in notes.items():
        targets = "".join(f" [[{target[:-3]}]]" for target in sorted(links[note_id]))
        # Links go in a paragraph of their own: their targets are words of the body too.
        write_file(root / note_id, note(title, f"{body}\n\n{targets}" if targets else body))
    bodies = {
        note_id: (title, f"{body}\n\n{''.join(f' [[{t[:-3]}]]' for t in sorted(links[note_id]))}")
        for note_id, (title, body) in notes.items()
    }
    result = search(load_config(vault=root), query, limit=limit)
    expected, total = model(bodies, links, query, limit)
    assert [hit["id"] for hit in result["hits"]] == [note_id for note_id, _ in expected]
    assert [hit["score"] for hit in result["hits"]] == pytest.approx([score for _, score in expected], rel=1e-5)
    assert (result["total"], result["truncated"]) == (total, total > limit)


def test_ranking_equals_the_model_on_a_larger_vault(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hundreds of notes over a small vocabulary: many near-equal scores and many links. With the graph
    boost's pool every match, the engine must agree with the model exactly."""
    import random

    from amem.search import rank

    monkeypatch.setattr(rank, "BOOSTED", 10**6)

    rng = random.Random(4)
    root = isolated_env / "large"
    chosen = [f"{rng.choice(['', 'alpha/', 'beta/x/'])}{rng.choice(VOCABULARY)}-{i}.md" for i in range(240)]
    notes, links = {}, {}
    for note_id in chosen:
        notes[note_id] = (" ".join(rng.choices(VOCABULARY, k=2)), " ".join(rng.choices(VOCABULARY, k=12)))
        links[note_id] = set(rng.sample(chosen, 3))
        targets = "".join(f" [[{target[:-3]}]]" for target in sorted(links[note_id]))
        notes[note_id] = (notes[note_id][0], f"{notes[note_id][1]}\n\n{targets}")
        write_file(root / note_id, note(*notes[note_id]))
    config = load_config(vault=root)
    for query in ["alpha", "beta gamma", "al", "认证 token", "用户认证令牌", "delta alphabet tokens"]:
        for limit in (1, 3, 10):
            result = search(config, query, limit=limit)
            expected, total = model(notes, links, query, limit)
            assert [hit["id"] for hit in result["hits"]] == [i for i, _ in expected], (query, limit)
            assert [hit["score"] for hit in result["hits"]] == pytest.approx([sc for _, sc in expected], rel=1e-5)
            assert result["total"] == total


# --- ranking properties ------------------------------------------------------------------------------

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


def test_a_query_word_matches_longer_words_it_starts(vault: Path, config: Config) -> None:
    write_file(vault / "a.md", note("A", "Authentication happens here."))
    write_file(vault / "b.md", note("B", "OAuth is not a prefix match."))
    assert ids(search(config, "auth")) == ["a.md"]


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


@pytest.fixture
def golden(vault: Path, config: Config) -> Config:
    for note_id, text in GOLDEN.items():
        write_file(vault / note_id, text)
    return config


@pytest.mark.parametrize("query", list(GOLDEN_ORDER))
def test_golden_vault_order(golden: Config, query: str) -> None:
    result = search(golden, query)
    assert ids(result) == GOLDEN_ORDER[query]
    assert result["total"] == len(GOLDEN_ORDER[query]) and result["truncated"] is False


def test_golden_hit_shape_and_snippet(golden: Config) -> None:
    result = search(golden, "令牌")
    assert result["fused"] is False and result["semantic"] == "unavailable"
    hit = result["hits"][0]
    assert set(hit) == {"id", "title", "score", "backlinks", "expired", "snippet"}
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


# --- what is indexed ---------------------------------------------------------------------------------


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


def test_search_loads_neither_watchdog_nor_requests(golden: Config, isolated_env: Path) -> None:
    code = (
        "import sys, amem.cli; amem.cli.run(['search', 'auth']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('watchdog', 'requests')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=isolated_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


# --- natural-language queries ------------------------------------------------------------------------


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


SNIPPET_ALPHABET = ["auth", "Auth", "ＡＵＴＨ", "authentication", "token", "word", " ", "\n", "---\n", "x: 1\n"]
SNIPPET_ALPHABET += ["认证", "书", "é", "\u0301", "_", "\ufeff"]


@settings(max_examples=300, deadline=None)
@given(
    st.tuples(
        st.sampled_from(["", "---\n", "\ufeff---\n"]),  # a frontmatter opened, closed or not within the start
        st.lists(st.sampled_from(SNIPPET_ALPHABET), min_size=30, max_size=150).map("".join),
    ).map("".join),
    st.sampled_from(["auth", "authentication", "token", "认证", "认证 证书", "missing"]),
    st.integers(8, 80),
)
def test_a_long_notes_snippet_read_from_its_start_is_the_whole_notes(
    tmp_path_factory: pytest.TempPathFactory, text: str, word: str, size: int
) -> None:
    """A hit's snippet reads a long note's first characters only, and the rest only when they do not settle
    it (its first match near or past them, no match, a frontmatter not closed there): the snippet is the one
    the whole note gives."""
    from amem.notes.tokenize import Query
    from amem.search import query as searching

    vault = tmp_path_factory.mktemp("snippet")
    (vault / "n.md").write_text(text, encoding="utf-8")
    readable = searching._Readable(vault)
    pattern = Query(f"{word} other").pattern()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(searching, "SNIPPET_CHARS", 12)  # excerpts the size of these texts
        patch.setattr(searching, "SNIPPET_BEFORE", 4)
        whole = searching._snippet(readable, "n.md", pattern)
        patch.setattr(searching, "SNIPPET_READ", size)
        assert searching._snippet(readable, "n.md", pattern) == whole


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
