"""`amem mcp`: the vault as Model Context Protocol tools, served on stdio with the official `mcp` SDK.

Each tool is a plain function in `TOOLS` that takes the server's Config and the tool's arguments (named as
the model sees them) and returns exactly what the matching command prints, typed by its TypedDict in
`results`. `mcp_declare` derives from each declaration its strict argument check, its input and output
schemas and its annotations; the server here lists them and runs each call: the result is the tool's
structured content (and the same JSON as text, for clients that read only text), and an AmemError, a
refused argument included, becomes a tool error whose structured content is the command's error object,
`{"error": {code, message, …}}`. Nothing a call does can stop the server: an unexpected exception is an
`internal` tool error too, its traceback logged on stderr. stdout is the protocol; logs go to stderr.

A new tool is one more decorated function here calling a library function and returning its shape.
"""

from __future__ import annotations

import functools
import inspect
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
from .config import MAX_INTEGER, Config
from .errors import AmemError, InternalError, WatchError
from .keeper.keeper import Keeper
from .mcp_declare import Declared, declare, unknown_tool
from .opspec import REQUIRED, Param
from .report import CollectingReporter, Reporter
from .results import (
    CheckResult,
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
    Field(description="Note id ('projects/auth', .md optional)."),
]
Version = Annotated[str, Field(description="The `version` your last wiki_read or wiki_write of it gave.")]
Folder = Annotated[str | None, Field(description="Only notes under this folder.")]


@tool(read_only=True)
def memory_runtime_info(
    config: Config,
    expectedCwd: Annotated[str | None, Field(description="Your working directory.")] = None,
    expectedVaultRoot: Annotated[str | None, Field(description="The vault expected.")] = None,
    expectedModuleRoot: Annotated[str | None, Field(description="Folder amem must run from.")] = None,
    expectedProfile: Annotated[str | None, Field(description="The profile expected.")] = None,
) -> InfoResult:
    """Which amem, config and vault this server uses, and whether it is safe to write.

    Call it first in a new vault, with expectedCwd and expectedVaultRoot."""
    from .info import Expectations, build_info

    return build_info(
        config,
        Expectations(cwd=expectedCwd, vault=expectedVaultRoot, module_root=expectedModuleRoot, profile=expectedProfile),
    )


def _declared(op: str, name: str, returns: Any, doc: str) -> ToolFunction:
    """The tool of operation `op`: its arguments are the parameters `opspec.OPS` offers over MCP, checked
    as declared there, and it runs the operation with the code the command and the keeper run."""
    from .opspec import OPS

    offered = [p for p in OPS[op] if p.mcp is not None]
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter("config", keyword, annotation=Config)]
    annotations: dict[str, Any] = {"config": Config, "return": returns}
    for param in offered:
        assert param.mcp is not None
        annotations[param.mcp] = _argument_type(param)
        default = inspect.Parameter.empty if param.mcp_default is REQUIRED else param.mcp_default
        parameters.append(inspect.Parameter(param.mcp, keyword, default=default, annotation=annotations[param.mcp]))

    def run_operation(config: Config, **given: Any) -> Any:
        from .ops.answers import run
        from .opspec import request

        values = {p.name: given.get(p.mcp or "") for p in offered}
        words = {p.name: (values[p.name],) for p in offered if p.kind == "words" and values[p.name] is not None}
        args, _ = request(op, {**values, **words})
        result, _ = run(config, op, args, _reporter())
        return result

    run_operation.__name__ = run_operation.__qualname__ = name
    run_operation.__doc__ = doc
    run_operation.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run_operation.__annotations__ = annotations
    return run_operation


def _argument_type(param: Param) -> Any:
    """The type an MCP argument of this kind has, its bounds and its description in the schema."""
    optional = param.mcp_default is None
    if param.kind in ("count", "number"):
        bounds = Field(ge=1 if param.kind == "count" else 0, le=MAX_INTEGER, description=param.brief)
        return Annotated[int | None, bounds] if optional else Annotated[int, bounds]
    described = Field(description=param.brief)
    if param.kind == "flag":
        return Annotated[bool, described]
    if param.kind == "texts":
        return Annotated[list[str] | None, described]
    if param.kind == "choice":
        return Annotated[typing.Literal[param.choices] | None, described]
    return Annotated[str, described] if param.mcp_default is REQUIRED else Annotated[str | None, described]


tool(read_only=True)(
    _declared(
        "read",
        "wiki_read",
        ReadResult,
        """Read a note and the notes its [[links]] reach, to a depth.

    `id` may be a [[link]]'s name or an alias. Bodies total at most maxChars (default 20,000, about 5,000
    tokens), nearest first; `omitted` names the rest. Pass `version` as baseVersion to change the note.""",
    )
)
tool(read_only=True)(
    _declared(
        "search",
        "wiki_search",
        SearchResult,
        """Search notes by title, id and body keywords, ranked by relevance.

    Words match as prefixes. `total` counts every match; `truncated`: cut by maxResults. Cheap: use before
    wiki_read.""",
    )
)
tool(read_only=True)(
    _declared(
        "list",
        "wiki_list",
        ListResult,
        """List notes with titles, tags, sizes and times.

    With since='2d': what changed lately, newest first (ask it first in a session).""",
    )
)


@tool(read_only=False, destructive=True, idempotent=False)
def wiki_write(
    config: Config,
    id: NoteId,
    content: Annotated[str, Field(description="Markdown to append, or the note's new content for overwrite.")],
    mode: Annotated[
        typing.Literal["append", "overwrite"],
        Field(
            description="append: under a timestamp heading. overwrite: the whole note (frontmatter keys you omit stay)."
        ),
    ] = "append",
    baseVersion: Annotated[
        str | None,
        Field(description="Only if the note's version is this, else `conflict`."),
    ] = None,
    requireExisting: Annotated[bool, Field(description="Fail rather than create the note.")] = False,
) -> WriteResult:
    """Create a note, or append to or overwrite one, atomically.

    Pass your last `version` as baseVersion; on `conflict`, read again and redo. For part of a note, use
    wiki_edit."""
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
        Field(description="Exact body text to replace; it must occur once."),
    ] = None,
    replace: Annotated[str | None, Field(description="What replaces `find` (may be empty).")] = None,
    all: Annotated[bool, Field(description="Replace every occurrence (at least one).")] = False,
    section: Annotated[
        str | None,
        Field(description="A heading ('## Status'): its section becomes `content`."),
    ] = None,
    content: Annotated[str | None, Field(description="The new text under `section`.")] = None,
    prepend: Annotated[str | None, Field(description="Markdown to put at the body's start.")] = None,
    baseVersion: Annotated[
        str | None,
        Field(description="Only if the note's version is this, else `conflict`."),
    ] = None,
) -> EditResult:
    """Change part of a note: find+replace, section+content, or prepend.

    Every other byte stays (but `updated`). A `find` or heading found 0 or several times writes nothing.
    Pass your last `version` as baseVersion."""
    from .ops.edit import Edit, edit_note

    edit = Edit(find=find, replace=replace, all=all, section=section, content=content, prepend=prepend)
    return edit_note(config, id, edit, base_version=baseVersion, reporter=_reporter())


@tool(read_only=False, destructive=True)
def wiki_delete(
    config: Config,
    id: NoteId,
    baseVersion: Annotated[
        str | None,
        Field(description="Only if the note's version is this, else `conflict`."),
    ] = None,
) -> DeleteResult:
    """Remove a note; links to it become unresolved.

    `version` is the removed content's."""
    from .ops.delete import delete_note

    return delete_note(config, id, baseVersion, _reporter())


@tool(read_only=False, destructive=True)
def wiki_move(
    config: Config,
    id: NoteId,
    newId: Annotated[str, Field(description="The new id (must not exist).")],
    baseVersion: Annotated[
        str | None,
        Field(description="Only if the note's version is this, else `conflict`."),
    ] = None,
) -> MoveResult:
    """Rename a note and rewrite every [[link]] to it.

    Interrupted, the same call again finishes it."""
    from .ops.move import move_note

    return move_note(config, id, newId, baseVersion, _reporter())


@tool(read_only=True)
def wiki_history(
    config: Config,
    id: NoteId,
    limit: Annotated[int | None, Field(ge=1, le=MAX_INTEGER, description="At most this many commits.")] = None,
) -> HistoryResult:
    """List the git commits that changed a note, newest first, following renames.

    Needs git; `id` may be a name."""
    from .ops.names import note_history_by_name

    return note_history_by_name(config, id, limit)


@tool(read_only=False, destructive=True)
def wiki_restore(
    config: Config,
    id: NoteId,
    hash: Annotated[str, Field(description="The commit, from wiki_history.")],
    baseVersion: Version,
) -> RestoreResult:
    """Roll a note forward to the content it had at a commit, without rewriting history."""
    from .notes.ids import resolve_note
    from .ops.restore import restore_note

    return restore_note(config, resolve_note(config, id), hash, baseVersion, False, reporter=_reporter())


@tool(read_only=True)
def wiki_check(
    config: Config,
    folder: Folder = None,
) -> CheckResult:
    """Find broken or ambiguous [[links]], case twins, bad frontmatter, orphans… in the vault."""
    from .ops.check import check_vault

    return check_vault(config, folder, reporter=_reporter())


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
        from .ops.answers import answer

        keeper = Keeper(self.config, _LogReporter(), answer)
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


#: What may stand around every tool call (the HTTP server's scopes and audit): it gets the request's
#: context, the tool's name and arguments and the call itself, and returns the call's result or its own.
Gate = Callable[[Any, str, dict[str, Any], Callable[[], CallToolResult]], CallToolResult]


def build_server(config: Config, keeper: _VaultKeeper | None = None, gate: Gate | None = None) -> Server[Any]:
    """An MCP server offering every tool in TOOLS on the vault of `config`, each call through `gate`."""
    tools = declared_tools()
    listing = ListToolsResult(tools=[entry.listing for entry in tools.values()])

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        arguments = dict(params.arguments or {})
        work = functools.partial(run_call, tools, config, keeper, params.name, arguments)
        if gate is not None:
            work = functools.partial(gate, ctx, params.name, arguments, work)
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
        from .semantic import semantic

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
