"""How deep a fused search ranks its keywords: to `SearchRanker.depth` (FUSION_DEPTH), whatever the limit.

Fusion reads the keyword rank of each of its hits (and `--explain` shows it), the notes its semantic
ranking found among them, so a fused search ranked only as deep as its limit would answer differently."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.config import load_config
from amem.index.index import VaultIndex
from amem.notes.tokenize import Query
from amem.report import Reporter
from amem.search.query import search
from amem.search.rank import Filter, Ranker
from amem.semantic import semantic
from tests.conftest import write_file

pytestmark = pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")


def tied_vault(vault: Path) -> None:
    """60 notes alike, saying `auth` three times: one more word ten times, `login` in n45.md and `coffee`
    in the others. Their keyword scores are nearly equal; the semantic ranking puts n45.md first."""
    for i in range(60):
        filler = "login" if i == 45 else "coffee"
        write_file(vault / f"n{i:02}.md", f"# Note {i}\n\n{'auth ' * 3}{(filler + ' ') * 10}\n")


def keyword_ids(depth: int) -> list[str]:
    index = VaultIndex(load_config(), Reporter())
    try:
        index.refresh()
        ids = dict(index.conn.execute("SELECT rowid, id FROM notes"))
        return [ids[doc] for doc, _ in Ranker(index.conn, Query("auth"), Filter()).rank(depth)]
    finally:
        index.close()


def test_a_fused_search_reads_its_keyword_ranks_from_the_full_depth(vault: Path) -> None:
    tied_vault(vault)
    config = load_config()
    fused = search(config, "auth", limit=20, semantic=True, explain=True)
    assert fused["fused"] is True and fused["fusion"]["weight"] > 0
    explained = {hit["id"]: hit["explain"] for hit in fused["hits"]}
    deep = keyword_ids(semantic.FUSION_DEPTH)
    lifted = explained["n45.md"]["keywordRank"]  # found by its meaning, far down the keyword ranking
    assert lifted is not None and 20 < lifted <= semantic.FUSION_DEPTH
    for note_id, explain in explained.items():
        rank = deep.index(note_id) + 1 if note_id in deep else None
        assert explain["keywordRank"] == rank, note_id
