"""How deep a fused search ranks its keywords: to `SearchRanker.depth` (FUSION_DEPTH), whatever the limit.

A shallower keyword ranking is not a prefix of the deeper one: the graph boost re-ranks the best depth +
CANDIDATES notes by base score, so a note below a shallow ranking's pool can be lifted to the top of a deep
one by a note linking to it. Fusion reads the keyword ranks of its hits (and `--explain` shows them), so a
fused search ranked only as deep as its limit would answer differently."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.config import load_config
from amem.index import semantic
from amem.index.index import VaultIndex
from amem.index.rank import Filter, Ranker
from amem.index.search import search
from amem.index.tokenize import Query
from amem.report import Reporter
from tests.conftest import write_file

pytestmark = pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")


def lifted_vault(vault: Path) -> None:
    """60 notes saying `auth` three times, longer and longer; `hub.md`, titled Auth, links to `x.md`, which
    says it once in a long body: by base score x.md ranks below the best 10 + CANDIDATES, boosted second."""
    for i in range(60):
        write_file(vault / f"n{i:02}.md", f"# Note {i}\n\n{'auth ' * 3}{'coffee ' * i}\n")
    write_file(vault / "hub.md", "# Auth\n\nauth auth auth see [[x]]\n")
    write_file(vault / "x.md", f"# X\n\nauth {'coffee ' * 60}\n")


def keyword_ids(depth: int) -> list[str]:
    index = VaultIndex(load_config(), Reporter())
    try:
        index.refresh()
        ids = dict(index.conn.execute("SELECT rowid, id FROM notes"))
        return [ids[doc] for doc, _ in Ranker(index.conn, Query("auth"), Filter()).rank(depth)]
    finally:
        index.close()


def test_a_shallow_keyword_ranking_is_no_prefix_of_the_deep_one(vault: Path) -> None:
    lifted_vault(vault)
    deep = keyword_ids(semantic.FUSION_DEPTH)
    assert deep.index("x.md") == 1
    assert "x.md" not in keyword_ids(10)


def test_a_fused_search_reads_its_keyword_ranks_from_the_full_depth(vault: Path) -> None:
    lifted_vault(vault)
    config = load_config()
    fused = search(config, "auth", limit=10, semantic=True, explain=True)
    assert fused["fused"] is True and fused["fusion"]["weight"] > 0
    explained = {hit["id"]: hit["explain"] for hit in fused["hits"]}
    deep = keyword_ids(semantic.FUSION_DEPTH)
    assert "x.md" in explained
    for note_id, explain in explained.items():
        rank = deep.index(note_id) + 1 if note_id in deep else None
        assert explain["keywordRank"] == rank, note_id
