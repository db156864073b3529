"""A fused search's `total`: the keyword matches and the notes only the semantic ranking found, each once,
within the search's filters, over random vaults. And a process that keeps its index open between searches
(the keeper, `amem mcp`, `amem batch`) answers from what the index holds now: a note another process
indexed, or this one, is found by the next fused search, through searches that wrote temporary scores."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import Config, load_config
from amem.index.index import VaultIndex
from amem.report import Reporter
from amem.search.query import search
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


def within(drawn: list[tuple[str, list[str], list[str]]], tags: list[str], folder: str | None) -> set[str] | None:
    """The ids of the drawn notes within the search's filters (a folder and every tag), None without any."""
    if folder is None and not tags:
        return None
    prefix = None if folder is None else folder.rstrip("/") + "/"
    return {
        f"{note_folder}n{i:03}.md"
        for i, (note_folder, note_tags, _) in enumerate(drawn)
        if (prefix is None or note_folder == prefix) and set(tags) <= set(note_tags)
    }


def semantic_notes(config: Any, query: str, among: set[str] | None) -> set[str]:
    """The notes the semantic ranking finds for this search among `among`, asked of the model directly."""
    index = VaultIndex(config, Reporter())
    try:
        embedder = semantic.load_embedder(config.semantic_model)
        return {note_id for note_id, _ in semantic.rank(index.conn, embedder, query, among=among)}
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
            found = semantic_notes(config, query, within(drawn, tags, folder))
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


@pytest.fixture
def kept_index(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Searches keep their index open for the next one, as the keeper, `amem mcp` and `amem batch` do; the
    index kept last is closed at the end."""
    from amem.index import kept

    monkeypatch.setattr(kept, "KEEP_INDEX", True)
    try:
        yield
    finally:
        kept.take_index(load_config()).close()


def refresh_elsewhere(config: Config) -> None:
    """Another process's refresh: a commit by another connection."""
    other = VaultIndex(config, Reporter())
    try:
        other.refresh()
    finally:
        other.close()


def test_a_kept_index_answers_from_what_the_index_holds_now(vault: Path, kept_index: None) -> None:
    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "coffee.md", "# Coffee\n\nThe espresso machine needs descaling.\n")
    config = load_config()
    first = search(config, "token", semantic=True)
    assert first["fused"] is True and "auth.md" in ids(first)
    assert search(config, "token", semantic=True) == first  # nothing changed: the same answer
    # a note another process indexed (another connection's refresh) is embedded and ranked: the queries
    # below share no word with the notes, so only their vectors find them
    write_file(vault / "garden.md", "# Garden\n\nWater the tomatoes twice a week.\n")
    refresh_elsewhere(config)
    assert "garden.md" in ids(search(config, "vegetables irrigation", semantic=True))
    # and one the kept connection's own refresh finds
    write_file(vault / "ops.md", "# Deploy\n\nThe staging server is rebuilt every night.\n")
    assert "ops.md" in ids(search(config, "software release pipeline", semantic=True))


def test_searches_that_wrote_temporary_scores_still_see_another_processs_notes(vault: Path, kept_index: None) -> None:
    """A query of several words may score its matches into a temporary table of the kept connection: that
    write changes none of the notes, the next searches answer as before, and another connection's refresh
    is still seen."""
    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "keys.md", "# Keys\n\nA token per client, rotated monthly.\n")
    config = load_config()
    first = search(config, "token lifetime", semantic=True)
    assert first["fused"] is True and ids(first)[0] == "auth.md"
    assert search(config, "token lifetime", semantic=True) == first
    assert set(ids(search(config, "token", semantic=True))) >= {"auth.md", "keys.md"}
    write_file(vault / "garden.md", "# Garden\n\nWater the tomatoes twice a week.\n")
    refresh_elsewhere(config)
    assert "garden.md" in ids(search(config, "vegetables irrigation", semantic=True))
    assert search(config, "token lifetime", semantic=True)["total"] >= first["total"]


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
