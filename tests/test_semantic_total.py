"""A fused search's `total`: the keyword matches and the notes only the semantic ranking found, each once,
within the search's filters, over random vaults; and the keyword matches are walked once for it, as a
keyword search walks them."""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import Config, load_config
from amem.index.index import VaultIndex
from amem.notes.tokenize import Query
from amem.report import Reporter
from amem.search import fused
from amem.search.query import note_filter, search
from amem.semantic import semantic
from tests.conftest import write_file

pytestmark = pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")

WORDS = ["auth", "token", "tokens", "deploy", "server", "retry", "backoff", "session", "coffee", "night"]
FOLDERS = ["", "ops/", "docs/"]
TAGS = ["red", "blue"]

notes = st.lists(
    st.tuples(
        st.sampled_from(FOLDERS),
        st.lists(st.sampled_from(TAGS), max_size=2, unique=True),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    ),
    min_size=1,
    max_size=90,
)
queries = st.lists(st.sampled_from([*WORDS, "tok", "missing"]), min_size=1, max_size=3).map(" ".join)
filters = st.tuples(st.sampled_from([None, "ops", "docs/"]), st.lists(st.sampled_from(TAGS), max_size=1))


def ids(result: Any) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def write_vault(vault: Path, drawn: list[tuple[str, list[str], list[str]]]) -> None:
    for i, (folder, tags, words) in enumerate(drawn):
        front = f"---\ntags: [{', '.join(tags)}]\n---\n" if tags else ""
        write_file(vault / f"{folder}n{i:03}.md", f"{front}# Note {i}\n\n{' '.join(words)}\n")


def semantic_notes(config: Any, query: str, tags: list[str], folder: str | None) -> set[str]:
    """The notes the semantic ranking hands to fusion for this search, found by the model directly."""
    index = VaultIndex(config, Reporter())
    try:
        conn = index.conn
        among = fused._among(conn, note_filter(tags, folder))
        embedder = semantic.load_embedder(config.semantic_model)
        return {note_id for note_id, _ in semantic.rank(conn, embedder, query, among=among)}
    finally:
        index.close()


@pytest.fixture
def fresh_vaults(vault: Path) -> Iterator[Path]:
    """A folder for one vault per example (the `vault` fixture only clears the environment)."""
    folder = Path(tempfile.mkdtemp(prefix="amem-total-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notes, queries, filters, st.sampled_from([1, 5, 60]))
def test_a_fused_total_counts_the_keyword_matches_and_the_semantic_notes_once(
    fresh_vaults: Path,
    drawn: list[tuple[str, list[str], list[str]]],
    query: str,
    where: tuple[str | None, list[str]],
    limit: int,
) -> None:
    folder, tags = where
    vault = Path(tempfile.mkdtemp(dir=fresh_vaults))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AMEM_VAULT", str(vault / "v"))
        patch.setenv("XDG_CACHE_HOME", str(vault / "cache"))
        write_vault(vault / "v", drawn)
        config = load_config()
        keyword = search(config, query, limit=1000, tags=tags, folder=folder, semantic=False)
        fused = search(config, query, limit=limit, tags=tags, folder=folder, semantic=True, explain=True)
        matches = set(ids(keyword))
        assert keyword["total"] == len(matches)
        assert fused["fused"] is True
        if fused["fusion"]["weight"] > 0:
            found = semantic_notes(config, query, tags, folder)
            assert fused["total"] == len(matches | found)
            assert set(ids(fused)) <= matches | found
        else:
            assert fused["total"] == len(matches)
            assert ids(fused) == ids(keyword)[:limit]
        assert fused["truncated"] == (fused["total"] > len(fused["hits"]))


def test_a_filtered_fused_total_leaves_out_the_notes_outside_the_filter(vault: Path) -> None:
    write_file(vault / "ops/a.md", "# Token\n\nauth token rotation\n")
    write_file(vault / "ops/b.md", "# Coffee\n\nthe espresso machine\n")
    write_file(vault / "docs/c.md", "# Token\n\nauth token rotation\n")
    write_file(vault / "docs/d.md", "# Coffee\n\nthe espresso machine\n")
    config = load_config()
    fused = search(config, "auth token", folder="ops", semantic=True, explain=True)
    assert {hit["id"] for hit in fused["hits"]} <= {"ops/a.md", "ops/b.md"}
    expected = 2 if fused["fusion"]["weight"] > 0 else 1
    assert fused["total"] == expected


def fts_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements every index connection opened from now on runs over the FTS5 table."""
    statements: list[str] = []
    opened = VaultIndex._open

    def tracing(self: VaultIndex) -> sqlite3.Connection:
        conn = opened(self)
        conn.set_trace_callback(lambda sql: statements.append(sql) if "search_fts MATCH" in sql else None)
        return conn

    monkeypatch.setattr(VaultIndex, "_open", tracing)
    return statements


@pytest.mark.parametrize("query", ["token", "auth token"])
def test_a_fused_search_walks_the_keyword_matches_no_more_often_than_a_keyword_search(
    vault: Path, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    for i in range(80):
        words = ["auth token", "token", "coffee machine", "deploy server"][i % 4]
        write_file(vault / f"n{i:02}.md", f"# Note {i}\n\n{words} {i}\n")
    config = load_config()
    search(config, query, semantic=True)  # the vectors made, outside the count
    statements = fts_walks(monkeypatch)
    count = len(Query(query).words)
    # the query's matches, a word that is a prefix of one term only spelled as that term (see rank.Ranker)
    walks = re.compile(r"search_fts MATCH '" + rf'(?:"[^"]+"\*? OR ){{{count - 1}}}"[^"]+"\*?' + "'")

    search(config, query, limit=semantic.FUSION_DEPTH, semantic=False)
    keyword = [sql for sql in statements if walks.search(sql)]
    statements.clear()
    fused = search(config, query, limit=semantic.FUSION_DEPTH, semantic=True, explain=True)
    assert fused["fused"] is True and fused["fusion"]["weight"] > 0
    assert [sql for sql in statements if walks.search(sql)] != []
    assert len([sql for sql in statements if walks.search(sql)]) == len(keyword), statements


@pytest.fixture
def snapshot_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Searches keep their index open, as the keeper and the MCP server do; each read of the index's
    snapshot (the fingerprint being taken) is counted in the list."""
    from amem.index import kept, snapshot

    monkeypatch.setattr(kept, "KEEP_INDEX", True)
    monkeypatch.setattr(kept, "_kept", [])
    read: list[int] = []
    stored = snapshot.stored_bytes

    def counting(conn: sqlite3.Connection) -> bytes | None:
        read.append(1)
        return stored(conn)

    monkeypatch.setattr(snapshot, "stored_bytes", counting)
    try:
        yield read
    finally:
        for index, _ in kept._kept:
            index.close()


def refresh_elsewhere(config: Config) -> None:
    """Another process's refresh: a commit by another connection."""
    other = VaultIndex(config, Reporter())
    try:
        other.refresh()
    finally:
        other.close()


def test_a_kept_index_is_not_fingerprinted_again_until_it_changes(vault: Path, snapshot_reads: list[int]) -> None:
    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "coffee.md", "# Coffee\n\nThe espresso machine needs descaling.\n")
    config = load_config()
    read = snapshot_reads
    search(config, "token", semantic=True)
    first = len(read)
    assert first >= 1
    search(config, "token", semantic=True)
    assert len(read) == first  # nothing changed: the fingerprint of the last search stands
    # a change made by another connection (another process's refresh) is seen, and embedded
    write_file(vault / "garden.md", "# Garden\n\nWater the tomatoes twice a week.\n")
    refresh_elsewhere(config)
    found = search(config, "tomatoes watering", semantic=True)
    assert len(read) > first
    assert "garden.md" in ids(found)
    # and one made through the kept connection itself
    write_file(vault / "ops.md", "# Deploy\n\nThe staging server is rebuilt every night.\n")
    again = len(read)
    assert "ops.md" in ids(search(config, "staging server rebuilt", semantic=True))
    assert len(read) > again


def test_a_search_that_stores_its_scores_leaves_the_kept_fingerprint_standing(
    vault: Path, monkeypatch: pytest.MonkeyPatch, snapshot_reads: list[int]
) -> None:
    """A query of several words scores its matches into a temporary table of the kept connection: that write
    changes nothing of the notes, so the next fused search reuses the fingerprint; another connection's
    refresh still makes it read the snapshot again."""
    from amem.search import rank

    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "keys.md", "# Keys\n\nA token per client, rotated monthly.\n")
    config = load_config()
    read = snapshot_reads
    scored: list[str] = []
    rank_others = rank.Ranker._rank_others

    def noting(self: rank.Ranker, *args: Any) -> Any:
        found = rank_others(self, *args)
        scored.append(str(self._stored))
        return found

    monkeypatch.setattr(rank.Ranker, "_rank_others", noting)
    first = search(config, "token lifetime", semantic=True)
    assert scored and scored[-1] != "None"  # its matches went through the temporary table
    before = len(read)
    assert before >= 1
    assert search(config, "token lifetime", semantic=True) == first
    search(config, "token", semantic=True)
    assert len(read) == before  # the temporary table's rows are no change of the index
    write_file(vault / "garden.md", "# Garden\n\nWater the tomatoes twice a week.\n")
    refresh_elsewhere(config)
    assert "garden.md" in ids(search(config, "tomatoes watering", semantic=True))
    assert len(read) > before


def test_temporary_writes_do_not_hide_another_connections_commit(vault: Path) -> None:
    """The fingerprint stands through this connection's temporary writes only while no other connection
    committed since it was taken: a refresh by another process in between makes it taken again."""
    from amem.semantic.vectors import index_fingerprint, temporary_writes_since

    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    config = load_config()
    mine, other = VaultIndex(config, Reporter()), VaultIndex(config, Reporter())
    try:
        mine.refresh()
        conn = mine.conn
        before = index_fingerprint(conn)
        changes = conn.total_changes
        write_file(vault / "garden.md", "# Garden\n\nWater the tomatoes twice a week.\n")
        other.refresh()
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS scratch (x)")
        conn.execute("INSERT INTO scratch VALUES (1)")
        temporary_writes_since(conn, changes)
        assert index_fingerprint(conn) != before
        # without another connection's commit, the same writes leave it standing
        again = index_fingerprint(conn)
        changes = conn.total_changes
        conn.execute("INSERT INTO scratch VALUES (2)")
        temporary_writes_since(conn, changes)
        write_file(vault / "garden.md", "# Garden\n\nWater the roses.\n")
        assert index_fingerprint(conn) == again  # the file changed, but no index has seen it yet
    finally:
        mine.close()
        other.close()
