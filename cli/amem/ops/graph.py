"""`amem graph`: the notes and their resolved links as nodes and edges, from the index.

Which notes: every readable note, or those under a PREFIX, with every --tag; with --from, only those
within --depth links of one note (either way along a link, as Obsidian's local graph shows them). Edges
join two chosen notes; a link to a note left out is not drawn. With --missing, each unresolved target of a
chosen note is a node too (`missing: true`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ..errors import NotFound, UsageError
from ..notes.links import PATH_MARK
from ..output import quote

if TYPE_CHECKING:
    from ..config import Config
    from ..index.index import VaultIndex
    from ..report import Reporter
    from ..results import GraphEdge, GraphNode, GraphResult

#: (from, to, kind) -> how many times it is written
_Edges = dict[tuple[str, str, str], int]


def vault_graph(
    config: Config,
    prefix: str | None = None,
    *,
    tags: Sequence[str] = (),
    start: str | None = None,
    depth: int = 1,
    missing: bool = False,
    reporter: Reporter | None = None,
) -> GraphResult:
    """{nodes: [{id, title, tags, in, out, missing?}], edges: [{from, to, kind, count}]}: `in` and `out`
    count the distinct notes of the graph that link here and that this note links to. While another
    process's build has the index half done, `incomplete: true` and a warning say so."""
    from ..index.index import VaultIndex
    from ..notes.ids import normalise_prefix
    from ..notes.tags import notes_where

    if depth < 0:
        raise UsageError(f"--depth must be at least 0, got {depth}")
    where, params = notes_where(normalise_prefix(prefix or ""), tags)
    index = VaultIndex(config, reporter)

    def query() -> GraphResult:
        stats = index.refresh(thorough=False)  # never waits for another process's build: says so instead
        incomplete = stats.busy and not index.complete()
        rows = index.conn.execute(f"SELECT id, title, tags FROM notes WHERE {where} ORDER BY id", params).fetchall()
        tag_lists = json.loads("[" + ",".join(row[2] for row in rows) + "]")  # one parse, not one a note
        chosen = {row[0]: (row[1], tags) for row, tags in zip(rows, tag_lists, strict=True)}
        edges, unresolved = _links(index, where, params, missing)
        edges = {key: count for key, count in edges.items() if key[1] in chosen}
        if start is not None:
            keep = _neighbourhood(_start_id(config, index, start, chosen), edges, depth)
            chosen = {note_id: chosen[note_id] for note_id in sorted(keep)}
            edges = {key: n for key, n in edges.items() if key[0] in keep and key[1] in keep}
            unresolved = {key: n for key, n in unresolved.items() if key[0] in keep}
        result = _result(chosen, edges, unresolved)
        if incomplete:
            index.reporter.warn(
                "another amem process is building the vault's index: the graph holds only the notes and links "
                "indexed so far (incomplete)"
            )
            result["incomplete"] = True
        return result

    try:
        return index.repairing(query)
    finally:
        index.close()


def _links(index: VaultIndex, where: str, params: list[str], missing: bool) -> tuple[_Edges, _Edges]:
    """The links of the chosen notes: those that resolve, and (with `missing`) those that do not, keyed
    (from, to, kind); a note's links to one note under several spellings add up."""
    resolved: _Edges = {}
    unresolved: _Edges = {}
    # summed in SQLite, one row per linking note and note linked (or, unresolved, target as stored)
    rows = index.conn.execute(
        "SELECT n.id, l.resolved, CASE WHEN l.resolved IS NULL THEN l.target END AS t, sum(l.count - l.embeds), "
        "sum(l.embeds) FROM links l JOIN notes n ON n.rowid = l.src "
        f"WHERE l.src IN (SELECT rowid FROM notes WHERE {where})"
        + ("" if missing else " AND l.resolved IS NOT NULL")
        + " GROUP BY l.src, l.resolved, t",
        params,
    )
    for src, to, target, links, embeds in rows:
        into = resolved if to is not None else unresolved
        to = to if to is not None else target.removeprefix(PATH_MARK)
        for kind, n in (("link", links), ("embed", embeds)):
            if n > 0:
                into[src, to, kind] = into.get((src, to, kind), 0) + n
    return resolved, unresolved


def _start_id(config: Config, index: VaultIndex, start: str, chosen: Collection[str]) -> str:
    """The note --from names: its exact id, else as `[[start]]` resolves (as `read` takes a name)."""
    from ..notes.ids import normalise_id
    from .names import find_by_name

    note_id = normalise_id(start, config.extensions, hidden_dirs=config.index_hidden_dirs)
    if note_id not in chosen:
        found = find_by_name(index, index.resolver(), start)
        note_id = found[0] if found else note_id
    if note_id not in chosen:
        raise NotFound(f"cannot graph from note {quote(start)}: no such note among those chosen")
    return note_id


def _neighbourhood(start: str, edges: _Edges, depth: int) -> set[str]:
    """The notes within `depth` links of `start`, following links either way."""
    near: dict[str, set[str]] = {}
    for src, to, _ in edges:
        near.setdefault(src, set()).add(to)
        near.setdefault(to, set()).add(src)
    seen, ring = {start}, {start}
    for _ in range(depth):
        ring = {other for note_id in ring for other in near.get(note_id, ()) if other not in seen}
        if not ring:
            break
        seen |= ring
    return seen


def _result(chosen: dict[str, tuple[str, list[str]]], edges: _Edges, unresolved: _Edges) -> GraphResult:
    from collections import Counter

    pairs = {(src, to) for src, to, _ in edges} | {(src, to) for src, to, _ in unresolved}
    outs = Counter(src for src, _ in pairs)
    ins = Counter(to for _, to in pairs)
    nodes: list[GraphNode] = [
        {"id": note, "title": title, "tags": tags, "in": ins[note], "out": outs[note]}
        for note, (title, tags) in chosen.items()
    ]
    for target in sorted({to for _, to, _ in unresolved}):
        nodes.append({"id": target, "title": target, "tags": [], "in": ins[target], "out": 0, "missing": True})
    links: list[GraphEdge] = [
        {"from": src, "to": to, "kind": kind, "count": count}
        for (src, to, kind), count in sorted({**edges, **unresolved}.items())
    ]
    return {"nodes": nodes, "edges": links}
