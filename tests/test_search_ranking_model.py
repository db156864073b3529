"""The ranking equals its definition (see amem.search.rank), written out plainly and compared exactly:
ids, scores, total and truncation, through the library and the installed command.

- A brute-force model computes every note's score from its terms, field by field, with no FTS5 and no SQL
  (matching, BM25 as FTS5 defines it, the phrase bonus, the title and heading tiers, the graph boost), on
  small random vaults and on one of hundreds of notes.
- A reference scores every match with FTS5's own BM25, one SQL row per match and the rest in Python, and
  is the full ranking cut to the limit: the search's top k must equal it over random vaults and queries
  (phrases, prefixes, CJK, notes titled as the query with and without an `{#anchor}`, tag and folder
  filters, ties and the graph boost's pool of any size), over vaults of common words, and on shapes that
  a top k may get wrong (hits linked from notes outside the best, phrases in titles and headings of common
  words). A smaller limit gives the first hits of a larger one."""

from __future__ import annotations

import itertools
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

from amem.config import Config, load_config
from amem.index.fts import head_text, headings_text, links_text
from amem.index.index import VaultIndex
from amem.notes.tokenize import Query, field_text, title_key
from amem.search import rank
from amem.search.query import note_filter, search
from tests.conftest import write_file
from tests.installed import installed_runner

# --- a brute-force model of the ranking --------------------------------------------------------------
#
# Computes every note's score from scratch, field by field, with none of the engine's machinery (no
# FTS5, no SQL, no candidate cut), so that matching, BM25 as FTS5 defines it, the phrase bonus and the
# graph boost are checked against their definition. Fields are turned into terms by the same functions
# the index uses; the tokenizer has tests of its own (test_search_matching).


def note(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n{body}\n"


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


# --- the top k against the full ranking, scored by FTS5 ----------------------------------------------
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


def assert_ranks_as_the_reference(
    config: Config, root: Path, text: str, limit: int, tags: list[str] | None = None, folder: str | None = None
) -> None:
    """`search` gives the reference's hits, scores, total and truncation."""
    result = search(config, text, limit=limit, tags=tags or [], folder=folder)
    index = VaultIndex(config)
    try:
        expected, total = reference(index.conn, root, text, tags or [], folder, limit)
    finally:
        index.close()
    assert [(hit["id"], hit["score"]) for hit in result["hits"]] == expected, text
    assert (result["total"], result["truncated"]) == (total, total > len(expected)), text


def test_hits_linked_from_notes_outside_the_best_rank_as_the_full_ranking(isolated_env: Path) -> None:
    """A ring of links: every hit's linking note matches the query too, most of them outside the best ones;
    the boost lifts each hit by its best linking note as the full ranking does."""
    root = isolated_env / "vault"
    for i in range(60):
        body = f"alpha beta {'gamma ' * (i % 7)}\n[[n{(i + 1) % 60}]]"
        write_file(root / f"n{i}.md", f"---\ntitle: note {i}\n---\n{body}\n")
    config = load_config(vault=root)
    for limit in (3, 10, 60):
        assert_ranks_as_the_reference(config, root, "alpha beta", limit)
    assert search(config, "alpha beta", limit=3)["total"] == 60


def test_common_words_with_a_rarer_phrase_rank_as_the_full_ranking(isolated_env: Path) -> None:
    """Words in every note, a phrase of them in a quarter, the title in a few: the phrase tiers decide, and
    the result is the full ranking's, every note counted in the total."""
    root = isolated_env / "vault"
    for i in range(300):
        title = "auth token" if i % 50 == 0 else f"note {i}"
        phrase = "the auth token again" if i % 4 == 0 else ""
        body = f"token words and auth words {phrase}\n[[n{(i * 7) % 300}]]"
        write_file(root / f"n{i}.md", f"---\ntitle: {title}\n---\n{body}\n")
    config = load_config(vault=root)
    for text, limit in [("auth token", 5), ("auth token", 20), ("auth tokens", 1)]:
        assert_ranks_as_the_reference(config, root, text, limit)
        assert search(config, text, limit=limit)["total"] == 300


def test_notes_titled_as_the_query_rank_first_as_the_full_ranking(isolated_env: Path) -> None:
    """Two notes titled as the query (one with an `{#anchor}`) among sixty that say its words: both first,
    the rest as the full ranking orders them."""
    root = isolated_env / "vault"
    for i in range(60):
        title = "Alpha Beta {#alpha-beta}" if i in (3, 40) else f"note {i}"
        body = f"alpha beta {'gamma ' * (i % 7)}\n[[n{(i + 1) % 60}]]"
        write_file(root / f"n{i}.md", f"---\ntitle: {title}\n---\n{body}\n")
    config = load_config(vault=root)
    assert {hit["id"] for hit in search(config, "alpha beta", limit=3)["hits"][:2]} == {"n3.md", "n40.md"}
    assert_ranks_as_the_reference(config, root, "alpha beta", 3)


def test_phrases_in_titles_and_headings_of_common_words_rank_as_the_full_ranking(isolated_env: Path) -> None:
    """The query's words in every body, as a phrase in a few titles, a few headings and a quarter of the
    bodies: each phrase tier counts where the full ranking counts it, a prefix's too."""
    root = isolated_env / "vault"
    for i in range(80):
        title = "auth token" if i % 20 == 0 else f"note {i}"
        heading = "## the auth token\n" if i % 20 == 5 else ""
        body = f"{heading}token words and auth words {'the auth token again' if i % 4 == 0 else ''}\n"
        write_file(root / f"n{i}.md", f"---\ntitle: {title}\n---\n{body}[[n{(i * 7) % 80}]]\n")
    config = load_config(vault=root)
    for text, limit in [("auth token", 3), ("auth tok", 5), ("auth token", 40)]:
        assert_ranks_as_the_reference(config, root, text, limit)


def test_words_of_one_term_and_prefixes_are_counted_as_the_full_ranking_counts_them(isolated_env: Path) -> None:
    """A word of one term, a CJK run of several pairs and a prefix of several terms: their document
    frequencies, and so ΣIDF and the scores, are the full ranking's."""
    root = isolated_env / "vault"
    for i in range(40):
        write_file(root / f"n{i}.md", f"# note {i}\nalpha beta {'gamma ' * (i % 3)}认证令牌\n")
    config = load_config(vault=root)
    for text in ["alpha beta", "认证令牌 beta", "alpha gam"]:
        assert_ranks_as_the_reference(config, root, text, 5)
