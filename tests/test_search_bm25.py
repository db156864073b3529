"""BM25 outside FTS5: the ranking scores a few notes (the hits' linking notes) from the index's statistics and
their stored terms instead of another FTS5 pass over every match, and these scores are FTS5's own, to the
last bit, over random vaults, queries and filters, after notes were rewritten and deleted. A word that is a
prefix of one term only is matched as that term: the same notes, the same BM25."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import load_config
from amem.index.index import VaultIndex
from amem.notes.tokenize import Query
from amem.search import rank
from amem.search.query import note_filter, search
from tests.conftest import write_file
from tests.test_search_topk import WORDS, make_vault, reference, traced_statements

_WEIGHTS = f"{rank.HEAD_WEIGHT}, {rank.HEADINGS_WEIGHT}, {rank.LINKS_WEIGHT}, {rank.BODY_WEIGHT}"


def fts5_bm25(conn: object, expression: str) -> dict[int, float]:
    sql = f"SELECT rowid, -bm25(search_fts, {_WEIGHTS}) FROM search_fts WHERE search_fts MATCH ?"
    return dict(conn.execute(sql, (expression,)).fetchall())  # type: ignore[attr-defined]


def prefixes_of_several_terms(conn: object, query: Query) -> bool:
    """Whether a word of the query is a prefix that several stored terms begin with."""
    for word in query.words:
        if word.prefix:
            sql = "SELECT count(*) FROM search_vocab WHERE term >= ? AND term < ?"
            term = word.terms[-1]
            if conn.execute(sql, (term, rank._prefix_end(term))).fetchone()[0] > 1:  # type: ignore[attr-defined]
                return True
    return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10**6),
    count=st.integers(1, 40),
    common=st.booleans(),
    edits=st.integers(0, 10),
    texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), min_size=1, max_size=4),
    tags=st.sampled_from([[], ["red"]]),
    folder=st.sampled_from([None, "x"]),
    foreign=st.booleans(),
)
def test_bm25_outside_fts5_is_fts5s(
    isolated_env: Path,
    seed: int,
    count: int,
    common: bool,
    edits: int,
    texts: list[str],
    tags: list[str],
    folder: str | None,
    foreign: bool,
) -> None:
    """And when every note's terms count as read otherwise by FTS5's tokenizer (`foreign`), FTS5 scores
    them: the same."""
    rng = random.Random(seed)
    root = isolated_env / f"vault-{seed}-{count}-{edits}"
    make_vault(root, rng, count, common)
    config = load_config(vault=root)
    index = VaultIndex(config)
    try:
        index.refresh()
        notes = sorted(root.rglob("*.md"))
        for path in rng.sample(notes, min(edits, len(notes))):  # rewritten and deleted rows: FTS5's totals move
            if rng.random() < 0.4:
                path.unlink()
            else:
                write_file(
                    path, f"---\ntitle: {' '.join(rng.choices(WORDS, k=2))}\n---\n{' '.join(rng.choices(WORDS, k=9))}\n"
                )
        index.refresh()
        conn = index.conn
        rowids = [row[0] for row in conn.execute("SELECT rowid FROM notes")]
        where = note_filter(tags, folder)
        filtered = {
            row[0]
            for row in conn.execute(
                f"SELECT rowid FROM notes WHERE 1{where.clause('rowid')[0]}", where.clause("rowid")[1]
            )
        }
        for text in texts:
            query = Query(text)
            if query.expression() is None:
                continue
            expected = fts5_bm25(conn, query.expression() or "")
            ranker = rank.Ranker(conn, query, where)
            with pytest.MonkeyPatch.context() as patch:
                if foreign:
                    patch.setattr(rank, "_TERM_BYTES", b"")
                found = ranker.bm25_of(rowids)
            # matched as it was: the same notes, the same scores
            assert fts5_bm25(conn, ranker.expression or "") == expected, (text, ranker.expression)
            if found is None:  # hits or instances not known from the statistics
                assert prefixes_of_several_terms(conn, query) or not all(w.prefix for w in query.words), text
                continue
            assert found == {doc: score for doc, score in expected.items() if doc in filtered}, text
    finally:
        index.close()


def common_words_vault(root: Path) -> None:
    """Words in every note, their phrase in a few, each note linking to another: the hits' linking notes lie
    outside the notes holding the phrase."""
    for i in range(300):
        title = "auth token" if i % 50 == 0 else f"note {i}"
        phrase = "the auth token again" if i % 4 == 0 else ""
        body = f"token words and auth words {phrase}\n[[n{(i * 7 + 1) % 300}]]"
        write_file(root / f"n{i}.md", f"---\ntitle: {title}\n---\n{body}\n")


def test_the_hits_linking_notes_are_scored_without_another_pass(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FTS5 scores the notes holding the phrase in one pass; the hits' linking notes outside them are scored
    from the statistics, and the words, each a prefix of one term only, are matched as those terms."""
    root = isolated_env / "vault"
    common_words_vault(root)
    config = load_config(vault=root)
    search(config, "auth token")  # the build
    statements = traced_statements(monkeypatch)
    result = search(config, "auth token", limit=5)
    scoring = [sql for sql in statements if "bm25(" in sql]
    assert len(scoring) == 1, json.dumps(statements)
    assert [sql for sql in statements if 'MATCH \'"auth" OR "token"\'' in sql], json.dumps(statements)
    assert not [sql for sql in statements if '"auth"* OR' in sql], json.dumps(statements)
    index = VaultIndex(config)
    try:
        expected, total = reference(index.conn, root, "auth token", [], None, 5)
    finally:
        index.close()
    assert [(hit["id"], hit["score"]) for hit in result["hits"]] == expected
    assert result["total"] == total == 300
