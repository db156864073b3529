"""The JSON each command prints, as types: the library functions return them (mypy holds the dicts they
build to these keys and types), and `amem mcp` derives every tool's outputSchema from them.

Pure typing, imported by the library only under TYPE_CHECKING: a command pays nothing for it at start-up
(only `amem mcp` loads it, with the SDK that brings typing_extensions).
A key that is not always there is NotRequired; a value that may be null says `| None`.
"""

from __future__ import annotations

from typing import Any, NotRequired

# pydantic, which reads these types to write the MCP schemas, needs typing_extensions' TypedDict before 3.12.
from typing_extensions import TypedDict

# --- read ----------------------------------------------------------------------------------------------


class LinkRecord(TypedDict):
    target: str
    alias: str | None
    heading: str | None
    block: str | None
    embed: bool
    #: `wiki` for [[links]], `markdown` for [text](note.md), `frontmatter` for [[links]] in frontmatter values
    kind: str
    resolved: str | None
    #: a link that names no note but a file of the vault (`![[diagram.png]]`): that file's vault path
    attachment: NotRequired[str]


class LinkedNote(TypedDict):
    id: str
    title: str
    frontmatter: dict[str, Any]
    body: str
    links: list[LinkRecord]
    #: `links` lists the first 10,000 links and this is true when the note holds more
    linksTruncated: bool
    version: str
    linkedNotes: list[LinkedNote]
    #: a read with a budget cut this body at a line
    truncated: NotRequired[bool]


#: A part read (`--lines`, `--section`): its first and last lines in the file, and the file's line count.
LineSpan = TypedDict("LineSpan", {"from": int, "to": int, "total": int})


class ReadResult(TypedDict):
    id: str
    title: str
    frontmatter: dict[str, Any]
    body: str
    links: list[LinkRecord]
    linksTruncated: bool
    linkedNotes: list[LinkedNote]
    backlinks: list[str]
    version: str
    mtime: str
    modifiedExternally: bool
    conflict: bool
    #: what a read beside another process's index build could not know (`backlinks`)
    incomplete: NotRequired[list[str]]
    #: the name the note was asked for, when it was not its id; the other notes that name matched
    resolvedFrom: NotRequired[str]
    alternatives: NotRequired[list[str]]
    #: with a budget: whether anything was cut, and the linked notes left out
    truncated: NotRequired[bool]
    omitted: NotRequired[list[str]]
    #: with --lines or --section: where the body's lines lie in the file
    lines: NotRequired[LineSpan]


# --- search and list -----------------------------------------------------------------------------------


#: With explain: the hit's keyword score and rank, the exact-title and exact-heading tiers' parts of that
#: score (only when its title, or one of its headings, is the query), its semantic similarity and rank
#: (null: not in that ranking); with several queries, those of the first, and its rank in each query's.
#: (Comments, not docstrings: a docstring would go into the MCP schema, and cost every model's context.)
class HitExplain(TypedDict):
    keywordScore: float | None
    keywordRank: int | None
    titleBonus: NotRequired[float]
    headingBonus: NotRequired[float]
    similarity: float | None
    semanticRank: int | None
    queryRanks: NotRequired[list[int | None]]


#: backlinks: the first 5 (by id) of the backlinkCount notes linking here; line: the file's line (1-based,
#: frontmatter included) the snippet's match is on (null: the note could not be read).
class SearchHit(TypedDict):
    id: str
    title: str
    score: float | None
    backlinks: list[str]
    backlinkCount: int
    expired: bool
    snippet: str
    line: int | None
    explain: NotRequired[HitExplain]


#: With explain: the semantic ranking's weight for this query (keywords weigh 1; 0: keywords alone), the RRF
#: constant, and why: script, phrase, margin, question or words (amem.search.fusion), or when nothing was
#: fused off, unavailable, error or exactTitle; then the evidence.
class Fusion(TypedDict):
    weight: float
    k: int
    why: str
    script: str
    #: where the top keyword hit holds the query as a phrase: head (id, title, heading), body
    phrase: str | None
    #: top keyword score / second's
    margin: float | None
    question: bool


class SearchResult(TypedDict):
    hits: list[SearchHit]
    total: int
    truncated: bool
    fused: bool
    #: "ok", "partial" (the vectors cover only part of the vault yet), "error" or "unavailable"
    semantic: str
    #: with semantic ranking: the share of the notes (0..1) whose vectors are up to date
    semanticCoverage: NotRequired[float]
    fusion: NotRequired[Fusion]


class ListedNote(TypedDict):
    id: str
    title: str
    tags: list[str]
    bytes: int
    mtime: str
    created: str | None


class ListResult(TypedDict):
    notes: list[ListedNote]
    total: int
    truncated: bool


# --- graph ---------------------------------------------------------------------------------------------

#: A note of the graph (or, with `missing: true`, a link target no note answers). `in` and `out` count the
#: distinct nodes of the graph linking here and linked to. (Functional form: `in` is a Python keyword.)
GraphNode = TypedDict(
    "GraphNode",
    {"id": str, "title": str, "tags": list[str], "in": int, "out": int, "missing": NotRequired[bool]},
)
#: The links `from` writes to `to`: `kind` is `link` or `embed` (![[x]]), `count` how many times.
GraphEdge = TypedDict("GraphEdge", {"from": str, "to": str, "kind": str, "count": int})


class GraphResult(TypedDict):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    #: true while another process's build has the index half done: the graph holds what is indexed so far
    incomplete: NotRequired[bool]


# --- check ---------------------------------------------------------------------------------------------


class CheckProblem(TypedDict):
    #: broken-link, ambiguous-link, case-twin, malformed-frontmatter, not-utf8, not-utf8-name, unreadable,
    #: conflict-copy, stray-temporary, alias-collision, orphan, oversized
    kind: str
    #: error, warning or info
    severity: str
    #: the note (or, for a stray temporary, the file) by vault path; for not-utf8-name the file or folder
    #: (ending in `/`), each byte that is not UTF-8 as `\xNN`
    id: str
    #: where in the file, from 1, when the problem has a place (malformed frontmatter: the message says why)
    line: int | None
    message: str
    #: a link's target as written (its first line is `line`)
    target: NotRequired[str]
    #: an ambiguous link: every note of the tier that decides, best first (the first is what it resolves to)
    candidates: NotRequired[list[str]]
    #: the other notes involved: a case twin's other spellings, those a colliding alias collides with, the
    #: note a conflict copy is a copy of
    others: NotRequired[list[str]]


class CheckResult(TypedDict):
    problems: list[CheckProblem]
    #: how many problems of each kind
    counts: dict[str, int]
    #: how many notes were checked
    notes: int


# --- changes -------------------------------------------------------------------------------------------


class WriteResult(TypedDict):
    id: str
    mode: str
    bytes: int
    version: str
    created: bool
    commit: NotRequired[str]


class EditResult(TypedDict):
    id: str
    version: str
    bytes: int
    #: how many occurrences or sections changed
    replaced: int
    commit: NotRequired[str]


class DeleteResult(TypedDict):
    id: str
    version: str
    commit: str | None


class Rewritten(TypedDict):
    id: str
    links: int


#: `from` is a Python keyword, hence the functional form.
MoveResult = TypedDict(
    "MoveResult", {"id": str, "from": str, "version": str, "rewritten": list[Rewritten], "commit": str | None}
)


class RestoreResult(TypedDict):
    id: str
    hash: str
    version: str
    commit: str | None


# --- history and info ----------------------------------------------------------------------------------


class Commit(TypedDict):
    hash: str
    date: str
    message: str
    author: str


class HistoryResult(TypedDict):
    id: str
    commits: list[Commit]
    resolvedFrom: NotRequired[str]
    alternatives: NotRequired[list[str]]


class Bundle(TypedDict):
    name: str
    version: str


class Expected(TypedDict):
    cwd: str | None
    vaultRoot: str | None
    moduleRoot: str | None
    profile: str | None


class Mismatch(TypedDict):
    field: str
    expected: str
    actual: str


class Preflight(TypedDict):
    safeToWrite: bool
    reasons: list[str]


class ProjectTrust(TypedDict):
    #: whether the user trusts it as it is now (`amem trust`)
    trusted: bool
    #: its keys ignored because they reach outside the project and it is not trusted
    ignored: list[str]


class InfoResult(TypedDict):
    version: str
    moduleRoot: str
    bundle: Bundle
    profile: str | None
    cwd: str
    projectRoot: str
    vaultRoot: str
    vaultExists: bool
    gitRepository: bool
    configFiles: list[str]
    fingerprint: str
    expected: Expected
    mismatches: list[Mismatch]
    trust: ProjectTrust
    warnings: list[str]
    preflight: Preflight
