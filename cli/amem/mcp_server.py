"""`amem mcp`: the vault as Model Context Protocol tools, served on stdio with the official `mcp` SDK.

Each tool is a plain function in `TOOLS` that takes the server's Config and the tool's arguments (named as
the model sees them) and returns exactly what the matching command prints, typed by its TypedDict in
`shapes`. `mcp_declare` derives from each declaration its strict argument check, its input and output
schemas and its annotations; the server here lists them and runs each call: the result is the tool's
structured content (and the same JSON as text, for clients that read only text), and an AmemError, a
refused argument included, becomes a tool error whose structured content is the command's error object,
`{"error": {code, message, …}}`. Nothing a call does can stop the server: an unexpected exception is an
`internal` tool error too, its traceback logged on stderr. stdout is the protocol; logs go to stderr.

A new tool is one more decorated function here calling a library function and returning its shape.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import typing
from collections.abc import Callable
from typing import Annotated, Any

import anyio
import anyio.to_thread
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import CallToolRequestParams, CallToolResult, ContentBlock, ListToolsResult, TextContent
from pydantic import Field

from . import __version__
from .config import Config
from .errors import AmemError, InternalError, WatchError
from .keeper.keeper import Keeper
from .mcp_declare import Declared, declare, unknown_tool
from .report import CollectingReporter, Reporter
from .shapes import (
    DeleteResult,
    EditResult,
    HistoryResult,
    InfoResult,
    ListResult,
    MoveResult,
    ReadResult,
    RestoreResult,
    SearchResult,
    WriteResult,
)

logger = logging.getLogger("amem.mcp")

ToolFunction = Callable[..., Any]


class Tool(typing.NamedTuple):
    function: ToolFunction
    read_only: bool
    destructive: bool
    idempotent: bool


#: The tools, in the order a client lists them.
TOOLS: list[Tool] = []

INSTRUCTIONS = (
    "A memory kept as a vault of Markdown notes with YAML frontmatter and Obsidian-style [[links]]. "
    "Note ids are vault-relative paths with '/' separators; the extension may be left out. "
    "Search before you read, read before you write, and pass the `version` a read or write returned as "
    "`baseVersion` on your next write so that a change made meanwhile by someone else is not overwritten."
)


def tool(
    *, read_only: bool, destructive: bool = False, idempotent: bool = True
) -> Callable[[ToolFunction], ToolFunction]:
    """Register a tool. Its docstring is the description the model reads; its first parameter receives
    the server's Config, the others are the tool's arguments; its return type is the result's shape. The
    hints say whether it only reads, may change or remove what is there, and whether calling it again with
    the same arguments changes nothing more."""

    def register(function: ToolFunction) -> ToolFunction:
        TOOLS.append(Tool(function, read_only, destructive, idempotent))
        return function

    return register


# --- the tools ---------------------------------------------------------------------------------------

NoteId = Annotated[
    str,
    Field(description="Vault-relative note id with '/' separators, e.g. 'projects/auth.md' (the .md may be left out)."),
]
Version = Annotated[str, Field(description="The note's `version` from your last wiki_read or wiki_write of it.")]
Folder = Annotated[str | None, Field(description="Only notes in this folder or below it, e.g. 'projects/'.")]


@tool(read_only=True)
def memory_runtime_info(
    config: Config,
    expectedCwd: Annotated[str | None, Field(description="Absolute path the working directory must be.")] = None,
    expectedVaultRoot: Annotated[str | None, Field(description="Absolute path the vault must be.")] = None,
    expectedModuleRoot: Annotated[str | None, Field(description="Folder the running amem package must lie in.")] = None,
    expectedProfile: Annotated[str | None, Field(description="Profile name that must be in effect.")] = None,
) -> InfoResult:
    """Report which amem, config and vault this server uses, read-only, and whether it is safe to write.

    preflight.safeToWrite is true only when absolute expectedCwd and expectedVaultRoot are given, match
    after resolving symlinks, and nothing mismatches. Call it first, with the paths you expect, before
    writing into a vault you have not used before."""
    from .info import Expectations, build_info

    return build_info(
        config,
        Expectations(cwd=expectedCwd, vault=expectedVaultRoot, module_root=expectedModuleRoot, profile=expectedProfile),
    )


@tool(read_only=True)
def wiki_read(
    config: Config,
    id: NoteId,
    depth: Annotated[
        int | None,
        Field(
            ge=0,
            description="Follow [[links]] this many levels deep (default: the vault's maxLinkDepth, usually 1; "
            "0 reads only this note).",
        ),
    ] = None,
) -> ReadResult:
    """Read one Markdown note from the vault, following its Obsidian-style [[link]] references to a depth.

    `linkedNotes` holds the notes its links reach (to `depth`), `backlinks` the ids of notes linking here,
    `version` what to pass as `baseVersion` when you write this note; `modifiedExternally` is true when the
    file changed on disk since amem last saw it, `conflict` while a sync's conflict copy
    (NOTE.conflict-COMMIT.md) lies beside it: read both and merge by hand. Every linked note's whole body
    is returned, so a densely linked note costs many tokens: use depth=0 for this note only, and
    wiki_search first when you do not know which note to read."""
    from .ops.read import read_note

    return read_note(config, id, depth, reporter=_reporter())


@tool(read_only=True)
def wiki_search(
    config: Config,
    query: Annotated[str, Field(description="Words to look for; any of them may match (OR).")],
    exactTitle: Annotated[
        str | None,
        Field(
            description="Instead of ranking, list every note whose title equals this, ignoring case, Unicode "
            "form and space/-/_ differences: a check for an existing note before creating one."
        ),
    ] = None,
    maxResults: Annotated[
        int | None, Field(ge=1, description="Return at most this many hits (default: maxSearchResults, 20).")
    ] = None,
    tags: Annotated[
        list[str] | None,
        Field(
            description="Only notes carrying every one of these tags (frontmatter tags or #tag in the body; "
            "with or without #, any case; nested tags count)."
        ),
    ] = None,
    folder: Folder = None,
) -> SearchResult:
    """Search the vault's notes by title, id and body keywords.

    Words are OR-matched, a word also matches longer words it begins, and Chinese, Japanese and Korean need
    no spaces. Hits are ranked by relevance: title and id matches outrank body matches, rare words weigh
    more, the whole query as a phrase scores extra, and notes linked from strong hits get a boost. `total`
    counts every match before the cap, and `truncated` is true when the cap cut the list (raise maxResults
    or refine the query). Cheap: use it before wiki_read, and before asking the user which note they
    mean."""
    from .index.search import search

    return search(
        config, query, limit=maxResults, exact_title=exactTitle, tags=tags or (), folder=folder, reporter=_reporter()
    )


@tool(read_only=True)
def wiki_list(
    config: Config,
    folder: Folder = None,
    tags: Annotated[
        list[str] | None,
        Field(description="Only notes carrying every one of these tags (with or without #, any case)."),
    ] = None,
    sort: Annotated[
        typing.Literal["id", "modified", "created"] | None,
        Field(
            description="id (default; modified with since), or newest first by modification time or by "
            "frontmatter `created`."
        ),
    ] = None,
    maxResults: Annotated[int | None, Field(ge=1, description="Return at most this many notes.")] = None,
    since: Annotated[
        str | None,
        Field(
            description="Only notes modified since then: a duration back from now ('30m', '12h', '2d', '1w') "
            "or an ISO date or time ('2026-11-30', '2026-11-30T09:00+01:00'); newest first unless sort is given."
        ),
    ] = None,
) -> ListResult:
    """List the vault's notes, or those of a folder, with their titles, tags, sizes and times.

    `total` counts every note that matched before the cap. Use it to see what a folder holds, or with
    since='2d' what changed lately (newest first), at the start of a session; use wiki_search to find notes
    by what they say."""
    from .index.listing import list_notes

    return list_notes(config, folder, tags=tags or (), sort=sort, limit=maxResults, since=since, reporter=_reporter())


@tool(read_only=False, destructive=True, idempotent=False)
def wiki_write(
    config: Config,
    id: NoteId,
    content: Annotated[str, Field(description="Markdown to append, or the note's new content for overwrite.")],
    mode: Annotated[
        typing.Literal["append", "overwrite"],
        Field(
            description="append (default): add content at the end under a timestamp heading, keeping the "
            "rest. overwrite: replace the body; frontmatter keys you leave out are kept and `updated` is "
            "stamped."
        ),
    ] = "append",
    baseVersion: Annotated[
        str | None,
        Field(
            description="Write only if the note's version is still this (from wiki_read or a previous "
            "wiki_write); otherwise the write fails with code `conflict` and changes nothing."
        ),
    ] = None,
    requireExisting: Annotated[
        bool, Field(description="Fail instead of creating a new note, so a mistyped id creates nothing.")
    ] = False,
) -> WriteResult:
    """Create a note, or append to or overwrite one, atomically. The id is relative to the vault root.

    `version` fingerprints what was written (`commit` is there when the vault commits writes): pass it
    as baseVersion on your next write of this note, without reading it again. Pass the version from
    wiki_read as baseVersion whenever you change a note someone else may edit; on `conflict`, read the
    note again and redo your change on its new content."""
    from .ops.write import write_note

    return write_note(
        config,
        id,
        content,
        mode=mode,
        base_version=baseVersion,
        require_existing=requireExisting,
        reporter=_reporter(),
    )


@tool(read_only=False, destructive=True, idempotent=False)
def wiki_edit(
    config: Config,
    id: NoteId,
    find: Annotated[
        str | None,
        Field(description="Exact text in the body to replace (may span lines); it must occur exactly once."),
    ] = None,
    replace: Annotated[str | None, Field(description="What replaces `find` (may be empty).")] = None,
    all: Annotated[bool, Field(description="Replace every occurrence of `find` (at least one) instead.")] = False,
    section: Annotated[
        str | None,
        Field(
            description="A heading, e.g. 'Status' (any case, any level) or '## Status' (that level): what lies "
            "under it, up to the next heading of the same or a higher level, is replaced by `content`."
        ),
    ] = None,
    content: Annotated[str | None, Field(description="The new text under `section`.")] = None,
    prepend: Annotated[
        str | None, Field(description="Markdown to insert at the start of the body, after the frontmatter.")
    ] = None,
    baseVersion: Annotated[
        str | None,
        Field(
            description="Edit only if the note's version is still this (from wiki_read or wiki_write); "
            "otherwise the call fails with code `conflict` and changes nothing."
        ),
    ] = None,
) -> EditResult:
    """Change part of an existing note without sending it all back: one of find+replace, section+content,
    or prepend per call.

    The frontmatter stays as written but for `updated`, which is stamped; everything you do not name
    stays byte for byte. Nothing is written, and the error says how many matches there were, when `find`
    occurs 0 or several times (give more surrounding text, or all=true) or the heading is missing or
    repeated. Pass the `version` it returns as baseVersion on your next change."""
    from .ops.edit import Edit, edit_note

    edit = Edit(find=find, replace=replace, all=all, section=section, content=content, prepend=prepend)
    return edit_note(config, id, edit, base_version=baseVersion, reporter=_reporter())


@tool(read_only=False, destructive=True)
def wiki_delete(
    config: Config,
    id: NoteId,
    baseVersion: Annotated[
        str | None,
        Field(
            description="Delete only if the note's version is still this (from wiki_read or wiki_write); "
            "otherwise the call fails with code `conflict` and nothing is removed."
        ),
    ] = None,
) -> DeleteResult:
    """Remove a note from the vault. Links to it in other notes become unresolved; nothing else changes.

    `version` is the removed content's (wiki_restore can bring it back from git when the vault commits
    writes), `commit` the new commit's hash, or null. Pass baseVersion whenever
    someone else may have changed the note since you read it."""
    from .ops.ops import delete_note

    return delete_note(config, id, baseVersion, _reporter())


@tool(read_only=False, destructive=True)
def wiki_move(
    config: Config,
    id: NoteId,
    newId: Annotated[str, Field(description="The note's new id, which must not exist yet; its folder is created.")],
    baseVersion: Annotated[
        str | None,
        Field(
            description="Move only if the note's version is still this; otherwise the call fails with code "
            "`conflict` and nothing changes."
        ),
    ] = None,
) -> MoveResult:
    """Rename a note and rewrite every [[link]] in the vault that pointed at it, so that none breaks.

    Aliases, #headings, #^blocks and ! embeds are kept, and each link's style where it still resolves
    uniquely; links in code are never touched; each rewritten note gets `updated`. If the call is
    interrupted, the same call again finishes the rewriting."""
    from .ops.ops import move_note

    return move_note(config, id, newId, baseVersion, _reporter())


@tool(read_only=True)
def wiki_history(
    config: Config,
    id: NoteId,
    limit: Annotated[int | None, Field(ge=1, description="Return at most this many commits.")] = None,
) -> HistoryResult:
    """List the git commits that changed a note, newest first, following renames.

    Needs the vault to be in a git repository.
    A hash from this list can be given to wiki_restore."""
    from .gitvault.git import note_history
    from .notes.ids import resolve_note

    return note_history(config, resolve_note(config, id), limit)


@tool(read_only=False, destructive=True)
def wiki_restore(
    config: Config,
    id: NoteId,
    hash: Annotated[str, Field(description="The commit to take the content from (from wiki_history).")],
    baseVersion: Version,
) -> RestoreResult:
    """Roll a note forward to the content it had at a commit, without rewriting history.

    baseVersion is required: the note's current version from wiki_read; a stale one fails with code
    `conflict` and changes nothing. `version` is the note's new version, `commit` the new commit's hash
    when the vault commits writes to git, else null."""
    from .notes.ids import resolve_note
    from .ops.restore import restore_note

    return restore_note(config, resolve_note(config, id), hash, baseVersion, False, reporter=_reporter())


# --- the server --------------------------------------------------------------------------------------

#: The reporter of the tool call running on this thread, whose warnings go out with its result.
_calls = threading.local()


def _reporter() -> CollectingReporter:
    reporter: CollectingReporter | None = getattr(_calls, "reporter", None)
    if reporter is None:
        reporter = _calls.reporter = CollectingReporter()
    return reporter


def _result(data: dict[str, Any], warnings: list[str], *, error: bool = False) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    blocks: list[ContentBlock] = [TextContent(type="text", text=text)]
    blocks += [TextContent(type="text", text=f"warning: {message}") for message in warnings]
    return CallToolResult(content=blocks, structured_content=data, is_error=error)


class _LogReporter(Reporter):
    """The keeper's warnings, in the server's log on stderr."""

    def warn(self, message: str) -> None:
        logger.warning("%s", message)


#: How long a tool call waits for the keeper's first build of the index before it looks for itself.
START_WAIT = 120.0


class _VaultKeeper:
    """The index keeper this server runs for its vault, started as soon as the vault exists (the first
    write may create it), so that tool calls never walk the vault. When another process keeps the vault's
    index already, that one answers instead."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.keeper: Keeper | None = None
        self.settled = False
        self._lock = threading.Lock()
        #: set whenever no start is under way: a call waits for the first build rather than answer from
        #: the empty index that build is filling
        self.ready = threading.Event()

    def ensure(self) -> None:
        """Start the keeper if the vault exists and none runs yet, then wait (bounded by START_WAIT) for a
        start under way in another thread."""
        if not self.settled and self._lock.acquire(blocking=False):
            try:
                self._start()
            finally:
                self.ready.set()
                self._lock.release()
        self.ready.wait(START_WAIT)

    def _start(self) -> None:
        if self.settled or not os.path.isdir(self.config.vault_root):
            return
        self.settled = True
        keeper = Keeper(self.config, _LogReporter())
        try:
            keeper.start()
        except WatchError as exc:
            logger.warning("not keeping the index: %s", exc.message)
            return
        except Exception:  # the server works without a keeper, only slower
            logger.exception("the index keeper did not start")
            return
        self.keeper = keeper

    def stop(self) -> None:
        with self._lock:
            if self.keeper is not None:
                self.keeper.stop()
                self.keeper = None


def call(function: ToolFunction, config: Config, arguments: dict[str, Any]) -> CallToolResult:
    """Run one tool: its result, or its failure as a tool error; never an exception."""
    _calls.reporter = reporter = CollectingReporter()
    try:
        data = function(config, **arguments)
    except AmemError as exc:
        return _result(exc.to_json(), reporter.warnings, error=True)
    except Exception as exc:  # the server outlives any one call
        logger.exception("tool %s failed unexpectedly", function.__name__)
        return _result(
            InternalError(f"unexpected {type(exc).__name__}: {exc}").to_json(), reporter.warnings, error=True
        )
    finally:
        _calls.reporter = None
    for message in reporter.warnings:
        logger.warning("%s: %s", function.__name__, message)
    return _result(data, reporter.warnings)


def declared_tools() -> dict[str, Declared]:
    """Every tool in TOOLS as the server offers it, by name."""
    declared = (
        declare(t.function, read_only=t.read_only, destructive=t.destructive, idempotent=t.idempotent) for t in TOOLS
    )
    return {entry.name: entry for entry in declared}


def run_call(
    tools: dict[str, Declared], config: Config, keeper: _VaultKeeper | None, name: str, arguments: dict[str, Any]
) -> CallToolResult:
    """One tools/call: an unknown tool or an argument its declaration refuses is a `usage` tool error and
    nothing runs; otherwise the tool, once the keeper has the index."""
    entry = tools.get(name)
    try:
        if entry is None:
            raise unknown_tool(name, list(tools))
        checked = entry.check(arguments)
    except AmemError as exc:
        return _result(exc.to_json(), [], error=True)
    if keeper is not None:
        keeper.ensure()
    return call(entry.function, config, checked)


def build_server(config: Config, keeper: _VaultKeeper | None = None) -> Server[Any]:
    """An MCP server offering every tool in TOOLS on the vault of `config`."""
    tools = declared_tools()
    listing = ListToolsResult(tools=[entry.listing for entry in tools.values()])

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        work = functools.partial(run_call, tools, config, keeper, params.name, dict(params.arguments or {}))
        return await anyio.to_thread.run_sync(work)

    return Server(
        "amem", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool
    )


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(config: Config) -> None:
    """Serve the tools on stdin/stdout until the client closes the connection, keeping the index fresh."""
    import signal

    keeper = _VaultKeeper(config)
    terminated = False
    if config.semantic:
        from .index import semantic

        semantic.KEEP_VECTORS = True  # a long-lived process: the vectors stay in memory between searches

    def on_sigterm(signum: int, frame: object) -> None:
        nonlocal terminated
        terminated = True
        raise SystemExit(0)  # unwinds the server, so that the keeper below stops cleanly

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        # In the background: a first build of a large vault must not delay the client's handshake.
        threading.Thread(target=keeper.ensure, name="amem-keeper-start", daemon=True).start()
        logging.basicConfig(level=logging.WARNING, format="%(message)s")  # on stderr
        anyio.run(_serve_stdio, build_server(config, keeper))
    finally:
        keeper.stop()
        if terminated:
            # The transport's reader thread may sit in a read of stdin that only the client can end.
            logging.shutdown()
            os._exit(0)
