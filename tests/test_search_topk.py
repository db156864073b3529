"""The ranking's top k equals the full ranking: every matching note scored and sorted, the best BOOSTED
of them boosted and sorted again, the rest after them, cut to the limit, written here plainly (one SQL row
per match, the rest in Python) and compared exactly, ids, scores and total, over random vaults and
queries: phrases, prefixes, CJK, notes titled as the query (with and without an `{#anchor}`), tag and
folder filters, ties and graph boosts. And: a search scores the matching notes in one pass, however many
notes link to its hits, and a smaller limit gives the first of a larger one's hits."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import load_config
from amem.index.index import VaultIndex
from amem.notes.tokenize import Query, title_key
from amem.search import rank
from amem.search.query import note_filter, search
from tests.conftest import write_file
from tests.installed import installed_runner

WORDS = ["alpha", "alphabet", "al", "beta", "gamma", "token", "tokens", "the", "认证", "用户认证令牌", "令牌", "证"]
FOLDERS = ["", "x/", "x/y/", "z/"]
TAGS = ["red", "blue", "red/dark"]
#: The phrase bonus's share of ΣIDF by the first field holding the phrase: id and title, headings, body.
FIELDS, SHARES = ("head", "headings", "body"), (1.05, 1.0, 0.5)


def reference(
    conn: sqlite3.Connection, root: Path, text: str, tags: list[str], folder: str | None, limit: int
) -> tuple[list[tuple[str, float]], int]:
    """The ranking as its definition reads (see amem.search.rank), computed over every matching note (the
    vault at `root`)."""
    query = Query(text)
    expression = query.expression()
    if expression is None:
        return [], 0
    where = note_filter(tags, folder)
    clause, params = where.clause("rowid")
    weights = f"{rank.HEAD_WEIGHT}, {rank.HEADINGS_WEIGHT}, {rank.LINKS_WEIGHT}, {rank.BODY_WEIGHT}"
    sql = f"SELECT rowid, -bm25(search_fts, {weights}) FROM search_fts WHERE search_fts MATCH ?{clause}"
    scores = dict(conn.execute(sql, [expression, *params]).fetchall())
    bonus = idf_sum(conn, query)
    if query.phrases:
        either = " OR ".join(query.phrases)
        match = "SELECT rowid FROM search_fts WHERE search_fts MATCH ?"
        holding = [{row[0] for row in conn.execute(match, [f"{field} : ({either})"])} for field in FIELDS]
        for doc in scores:
            share = next((share for found, share in zip(holding, SHARES, strict=True) if doc in found), 0.0)
            scores[doc] += bonus * share
    # The exact-title tier: every matching note whose title, its `{#anchor}` dropped, folds to the query's.
    for doc, title in conn.execute("SELECT rowid, title FROM notes").fetchall():
        if doc in scores and title_key(ANCHOR.sub("", title)) == title_key(text):
            scores[doc] += bonus * rank.EXACT_TITLE
    # The exact-heading tier: every matching note with a heading, its `{#anchor}` dropped, that folds so.
    for doc, note_id in conn.execute("SELECT rowid, id FROM notes").fetchall():
        lines = (root / note_id).read_text(encoding="utf-8").splitlines()
        keys = {title_key(ANCHOR.sub("", m.group(1))) for line in lines if (m := HEADING.match(line))}
        if doc in scores and title_key(text) in keys:
            scores[doc] += bonus * rank.EXACT_HEADING
    ids = dict(conn.execute("SELECT rowid, id FROM notes"))
    best = sorted(scores.items(), key=lambda item: (-item[1], ids[item[0]]))  # equal scores: the smaller id
    final, below = dict(best[: rank.BOOSTED]), dict(best[rank.BOOSTED : limit])  # the boost's pool, whatever the limit
    for target in list(final):
        note_id = conn.execute("SELECT id FROM notes WHERE rowid = ?", (target,)).fetchone()[0]
        sources = {row[0] for row in conn.execute("SELECT src FROM links WHERE resolved = ?", (note_id,))}
        found = [scores[src] for src in sources if src != target and src in scores]
        if found:
            final[target] += rank.GRAPH_BOOST * max(found)
    ordered = [
        *sorted(final.items(), key=lambda item: (-float(f"{item[1]:.9g}"), ids[item[0]])),
        *sorted(below.items(), key=lambda item: (-float(f"{item[1]:.9g}"), ids[item[0]])),
    ]
    return [(ids[doc], float(f"{score:.6g}")) for doc, score in ordered[:limit]], len(scores)


ANCHOR = re.compile(r"\s*\{#[^}]*\}$")
HEADING = re.compile(r"^#{1,6} +(.+)$")  # the vaults made here have no code fences


def idf_sum(conn: sqlite3.Connection, query: Query) -> float:
    """ΣIDF of the query's words: a word's df is its rarest term's, a prefix's the sum over the terms it
    begins, at most N."""
    n = conn.execute("SELECT count(*) FROM notes WHERE problem IS NULL").fetchone()[0]
    vocab = dict(conn.execute("SELECT term, doc FROM search_vocab"))
    total = 0.0
    for word in query.words:
        dfs = []
        for i, term in enumerate(word.terms):
            last_prefix = word.prefix and i == len(word.terms) - 1
            df = sum(d for t, d in vocab.items() if t.startswith(term)) if last_prefix else vocab.get(term, 0)
            dfs.append(min(n, df))
        df = min(dfs)
        total += math.log(1 + (n - df + 0.5) / (df + 0.5))
    return total


#: In every note of a vault made `common`: each word, never beside another, so that every word matches
#: (nearly) every note, as common words do, BM25 weighs next to nothing and the phrase bonus decides.
FILLER = " zz ".join(WORDS)


def make_vault(root: Path, rng: random.Random, count: int, common: bool = False, words: list[str] = WORDS) -> None:
    names = [f"{rng.choice(FOLDERS)}{rng.choice(WORDS[:7])}-{i}.md" for i in range(count)]
    twin = " ".join(rng.choices(words, k=6))  # notes alike but for their ids: equal scores, ties by id
    for i, name in enumerate(names):
        title = " ".join(rng.choices(words, k=rng.randint(1, 3)))
        body = twin if i % 4 == 0 else " ".join(rng.choices(words, k=rng.randint(0, 20)))
        if common and rng.random() < 0.9:
            body += f"\n\n{FILLER}"
        heading = f"## {' '.join(rng.choices(words, k=2))}\n" if rng.random() < 0.4 else ""
        links = " ".join(f"[[{target[:-3]}]]" for target in rng.sample(names, rng.randint(0, min(3, len(names)))))
        tags = rng.sample(TAGS, rng.randint(0, 2))
        if rng.random() < 0.3:  # a title as the first heading, with an anchor
            front, heading = "", f"# {title.upper()} {{#{title.replace(' ', '-')}}}\n{heading}"
        else:
            front = f"title: {title}\n"
        front += f"tags: [{', '.join(tags)}]\n" if tags else ""
        write_file(root / name, f"---\n{front}---\n{heading}{body}\n\n{links}\n")


queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
_made = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10**6),
    count=st.integers(1, 40),
    texts=st.lists(queries, min_size=1, max_size=4),
    limit=st.integers(1, 6),
    boosted=st.sampled_from([0, 1, 3, 8, 40]),
    tags=st.sampled_from([[], ["red"], ["blue", "red"]]),
    folder=st.sampled_from([None, "x", "z/"]),
    common=st.booleans(),
)
def test_the_top_k_equals_the_full_ranking(
    isolated_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    count: int,
    texts: list[str],
    limit: int,
    boosted: int,
    tags: list[str],
    folder: str | None,
    common: bool,
) -> None:
    make = make_vault_of(seed, count, common)
    check_searches(isolated_env, monkeypatch, make, texts, limit, boosted, tags, folder)


def make_vault_of(seed: int, count: int, common: bool, words: list[str] = WORDS) -> Callable[[Path], None]:
    return lambda root: make_vault(root, random.Random(seed), count, common, words)


def check_searches(
    isolated_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[Path], None],
    texts: list[str],
    limit: int,
    boosted: int,
    tags: list[str],
    folder: str | None,
) -> None:
    monkeypatch.setattr(rank, "BOOSTED", boosted)
    root = isolated_env / f"vault-{next(_made)}"
    make(root)
    config = load_config(vault=root)
    index = VaultIndex(config)
    try:
        index.refresh()  # and one note's title is searched for too: the exact-title tier
        titles = [row[0] for row in index.conn.execute("SELECT title FROM notes ORDER BY rowid")]
    finally:
        index.close()
    # and one note's `## ` heading: the exact-heading tier
    headings = [
        line[3:] for path in sorted(root.rglob("*.md")) for line in path.read_text().splitlines() if line[:3] == "## "
    ]
    searched = [*texts, ANCHOR.sub("", titles[len(texts) % len(titles)])]
    searched += [headings[len(texts) % len(headings)].upper()] if headings else []
    for text in searched:
        result = search(config, text, limit=limit, tags=tags, folder=folder)
        index = VaultIndex(config)
        try:
            expected, total = reference(index.conn, root, text, tags, folder, limit)
        finally:
            index.close()
        assert [(hit["id"], hit["score"]) for hit in result["hits"]] == expected, text
        assert (result["total"], result["truncated"]) == (total, total > len(expected))


#: Few words, so that their phrases are common too: most searches of a `common` vault end in the phrase
#: tiers, with linking notes outside them.
FEW = ["alpha", "beta", "token", "认证"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10**6),
    count=st.integers(20, 90),
    texts=st.lists(st.lists(st.sampled_from(FEW), min_size=2, max_size=3).map(" ".join), min_size=1, max_size=3),
    limit=st.integers(1, 6),
    boosted=st.sampled_from([0, 1, 3, 10, 40]),
    tags=st.sampled_from([[], ["red"]]),
    folder=st.sampled_from([None, "x"]),
)
def test_the_top_k_of_common_words_equals_the_full_ranking(
    isolated_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    count: int,
    texts: list[str],
    limit: int,
    boosted: int,
    tags: list[str],
    folder: str | None,
) -> None:
    make = make_vault_of(seed, count, True, FEW)
    check_searches(isolated_env, monkeypatch, make, texts, limit, boosted, tags, folder)


def test_the_installed_amem_ranks_a_larger_vault_as_the_full_ranking(isolated_env: Path) -> None:
    """Hundreds of notes, more than the candidates the boost may lift, through the installed command."""
    root = isolated_env / "vault"
    make_vault(root, random.Random(7), 300)
    run = installed_runner(isolated_env, root)
    config = load_config(vault=root)
    for text, tags, folder in [
        ("alpha beta", [], None),
        ("token", [], "x"),
        ("用户认证令牌", [], None),
        ("认证 token gamma", ["red"], None),
        ("the al", [], None),
        ("alpha", ["blue"], "x/y"),
    ]:
        options = [arg for tag in tags for arg in ("--tag", tag)] + (["--folder", folder] if folder else [])
        done = run("--vault", str(root), "search", text, "--limit", "7", *options)
        assert done.code == 0, done.stderr
        index = VaultIndex(config)
        try:
            expected, total = reference(index.conn, root, text, tags, folder, 7)
        finally:
            index.close()
        assert [(hit["id"], hit["score"]) for hit in done.json["hits"]] == expected, text
        assert done.json["total"] == total


def test_a_smaller_limit_gives_the_first_hits_of_a_larger_one(vault: Path, amem: Any) -> None:
    """60 notes saying `auth` three times, longer and longer; `hub.md`, titled Auth, links to `x.md`, which
    says it once in a long body, and to the 45th of them: by base score x.md ranks last, below the boost's
    pool, and stays there; the 45th stays 46th. Whatever the limit, the hits are the first of the deepest
    ranking's (a pool of limit + 30 lifted x.md to second with `--limit 40`, not with `--limit 2`)."""
    for i in range(60):
        write_file(vault / f"n{i:02}.md", f"# Note {i}\n\n{'auth ' * 3}{'coffee ' * i}\n")
    write_file(vault / "hub.md", "# Auth\n\nauth auth auth see [[x]] and [[n44]]\n")
    write_file(vault / "x.md", f"# X\n\nauth {'coffee ' * 60}\n")
    ranked = {}
    for limit in (1, 2, 5, 31, 40, 41, 50, 80):
        done = amem("search", "auth", "--limit", str(limit))
        assert done.exit_code == 0, done.stderr
        ranked[limit] = [(hit["id"], hit["score"]) for hit in done.json["hits"]]
    deepest = [note_id for note_id, _ in ranked[80]]
    assert len(deepest) == 62
    assert (deepest[0], deepest.index("n44.md"), deepest[-1]) == ("hub.md", 45, "x.md")
    for limit, hits in ranked.items():
        assert hits == ranked[80][:limit], limit


def traced_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement the indexes opened from now on run, in order."""
    statements: list[str] = []
    real_open = VaultIndex._open

    def traced(self: VaultIndex) -> sqlite3.Connection:
        conn = real_open(self)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(VaultIndex, "_open", traced)
    return statements


def test_a_search_scores_the_matching_notes_once(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """However many of the hits' linking notes lie outside the best ones, BM25 runs once over the matches
    of a query of several words: the notes the boost needs are looked up, not scored in another pass."""
    root = isolated_env / "vault"
    for i in range(60):
        body = f"alpha beta {'gamma ' * (i % 7)}\n[[n{(i + 1) % 60}]]"
        write_file(root / f"n{i}.md", f"---\ntitle: note {i}\n---\n{body}\n")
    config = load_config(vault=root)
    search(config, "alpha beta")  # the build
    statements = traced_statements(monkeypatch)
    result = search(config, "alpha beta", limit=3)
    assert len(result["hits"]) == 3 and result["total"] == 60
    scoring = [sql for sql in statements if "bm25(" in sql]
    assert len(scoring) == 1, json.dumps(scoring, ensure_ascii=False)


def test_common_words_are_scored_only_where_they_may_rank(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Words in every note, a phrase of them in a few: BM25 runs on the notes holding the phrase (and the
    linking notes the boost may need), not on every match; the result is still the full ranking's."""
    root = isolated_env / "vault"
    for i in range(300):
        title = "auth token" if i % 50 == 0 else f"note {i}"
        phrase = "the auth token again" if i % 4 == 0 else ""
        body = f"token words and auth words {phrase}\n[[n{(i * 7) % 300}]]"
        write_file(root / f"n{i}.md", f"---\ntitle: {title}\n---\n{body}\n")
    config = load_config(vault=root)
    search(config, "auth token")  # the build
    scored = [0]

    def counted(weight: float) -> float:
        scored[0] += 1  # BM25's weights are evaluated once per note it scores
        return weight

    real_open = VaultIndex._open

    def counting(self: VaultIndex) -> sqlite3.Connection:
        conn = real_open(self)
        conn.create_function("counted", 1, counted)
        return conn

    monkeypatch.setattr(VaultIndex, "_open", counting)
    monkeypatch.setattr(rank, "HEAD_WEIGHT", "counted(5.0)")
    for text, limit in [("auth token", 5), ("auth token", 20), ("auth tokens", 1)]:
        scored[0] = 0
        result = search(config, text, limit=limit)
        count = scored[0]
        index = VaultIndex(config)
        try:
            expected, total = reference(index.conn, root, text, [], None, limit)
        finally:
            index.close()
        assert [(hit["id"], hit["score"]) for hit in result["hits"]] == expected, text
        assert result["total"] == total == 300
        assert 0 < count <= 150, (text, count)


def test_notes_titled_as_the_query_are_scored_in_the_same_pass(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact-title tier's notes are looked up by title and scored with the others: BM25 still runs once
    over the matches, and the result is the full ranking's."""
    root = isolated_env / "vault"
    for i in range(60):
        title = "Alpha Beta {#alpha-beta}" if i in (3, 40) else f"note {i}"
        body = f"alpha beta {'gamma ' * (i % 7)}\n[[n{(i + 1) % 60}]]"
        write_file(root / f"n{i}.md", f"---\ntitle: {title}\n---\n{body}\n")
    config = load_config(vault=root)
    search(config, "alpha beta")  # the build
    statements = traced_statements(monkeypatch)
    result = search(config, "alpha beta", limit=3)
    assert {hit["id"] for hit in result["hits"][:2]} == {"n3.md", "n40.md"}
    assert len([sql for sql in statements if "bm25(" in sql]) == 1, json.dumps(statements, ensure_ascii=False)
    index = VaultIndex(config)
    try:
        expected, total = reference(index.conn, root, "alpha beta", [], None, 3)
    finally:
        index.close()
    assert [(hit["id"], hit["score"]) for hit in result["hits"]] == expected and result["total"] == total


def test_the_title_and_heading_tiers_walk_only_the_notes_with_the_words_there(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The phrase tiers of the id and title and of the headings look in `search_heads`, which holds those
    short fields alone: its postings list the notes with the query's words in a title or heading, not
    every note with them in its body (the whole vault, for common words). The full ranking's result."""
    root = isolated_env / "vault"
    for i in range(80):
        title = "auth token" if i % 20 == 0 else f"note {i}"
        heading = "## the auth token\n" if i % 20 == 5 else ""
        body = f"{heading}token words and auth words {'the auth token again' if i % 4 == 0 else ''}\n"
        write_file(root / f"n{i}.md", f"---\ntitle: {title}\n---\n{body}[[n{(i * 7) % 80}]]\n")
    config = load_config(vault=root)
    search(config, "auth token")  # the build
    statements = traced_statements(monkeypatch)
    for text, limit in [("auth token", 3), ("auth tok", 5), ("auth token", 40)]:
        statements.clear()
        result = search(config, text, limit=limit)
        short = [sql for sql in statements if re.search(r"MATCH '\{head(ings)?( headings)?\} :", sql)]
        assert short and all("search_heads MATCH" in sql for sql in short), json.dumps(statements)
        index = VaultIndex(config)
        try:
            expected, total = reference(index.conn, root, text, [], None, limit)
        finally:
            index.close()
        assert [(hit["id"], hit["score"]) for hit in result["hits"]] == expected and result["total"] == total


def test_a_word_of_one_term_is_counted_by_its_postings_not_the_vocabulary(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statistics count the notes holding a word of one term by matching it (its postings, without
    their positions), not by `search_vocab`, which reads each posting's positions to count them too; a
    prefix still sums the vocabulary's terms. The full ranking's result either way."""
    root = isolated_env / "vault"
    for i in range(40):
        write_file(root / f"n{i}.md", f"# note {i}\nalpha beta {'gamma ' * (i % 3)}认证令牌\n")
    config = load_config(vault=root)
    search(config, "alpha beta")  # the build
    statements = traced_statements(monkeypatch)
    for text in ["alpha beta", "认证令牌 beta", "alpha gam"]:
        statements.clear()
        result = search(config, text, limit=5)
        exact = [sql for sql in statements if "search_vocab WHERE term = " in sql]
        assert not exact, json.dumps(statements, ensure_ascii=False)
        index = VaultIndex(config)
        try:
            expected, total = reference(index.conn, root, text, [], None, 5)
        finally:
            index.close()
        assert [(hit["id"], hit["score"]) for hit in result["hits"]] == expected and result["total"] == total


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.integers(1, 10**6),
        st.sampled_from([0.0, -0.0, 1e-6, 0.5, 2.0]) | st.floats(allow_nan=False, allow_infinity=False),
        max_size=300,
    ),
    st.integers(1, 60),
)
def test_the_best_scored_notes_are_a_sort_s_first_ties_to_the_smaller_rowid(
    scores: dict[int, float], depth: int
) -> None:
    assert rank._top(scores, depth) == sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:depth]
