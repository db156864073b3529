"""`amem mcp`: the vault as Model Context Protocol tools, served on stdio with the official `mcp` SDK.

Each tool is a plain function in `TOOLS` that takes the server's Config and the tool's arguments (named as
the model sees them) and returns exactly what the matching command prints. `build_server` wraps every one
so that the result is the tool's structured content (and the same JSON as text, for clients that read only
text), and so that an AmemError becomes a tool error whose structured content is the command's error
object, `{"error": {code, message, …}}`. Nothing a call does can stop the server: an unexpected exception
is an `internal` tool error too, its traceback logged on stderr. stdout is the protocol; logs go to stderr.

A new tool is one more decorated function here calling a library function.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import threading
import typing
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import Field

from . import __version__
from .config import Config
from .errors import AmemError, InternalError, UsageError, WatchError
from .keeper.keeper import Keeper
from .report import CollectingReporter, Reporter

logger = logging.getLogger("amem.mcp")

ToolFunction = Callable[..., dict[str, Any]]


class Tool(typing.NamedTuple):
    function: ToolFunction
    read_only: bool


#: The tools, in the order a client lists them.
TOOLS: list[Tool] = []

INSTRUCTIONS = (
    "A memory kept as a vault of Markdown notes with YAML frontmatter and Obsidian-style [[links]]. "
    "Note ids are vault-relative paths with '/' separators; the extension may be left out. "
    "Search before you read, read before you write, and pass the `version` a read or write returned as "
    "`baseVersion` on your next write so that a change made meanwhile by someone else is not overwritten."
)


def tool(*, read_only: bool) -> Callable[[ToolFunction], ToolFunction]:
    """Register a tool. Its docstring is the description the model reads; its first parameter receives
    the server's Config, the others are the tool's arguments."""

    def register(function: ToolFunction) -> ToolFunction:
        TOOLS.append(Tool(function, read_only))
        return function

    return register


# --- the tools ---------------------------------------------------------------------------------------

NoteId = Annotated[
    str,
    Field(description="Vault-relative note id with '/' separators, e.g. 'projects/auth.md' (the .md may be left out)."),
]
Version = Annotated[str, Field(description="The note's `version` from your last wiki_read or wiki_write of it.")]


@tool(read_only=True)
def memory_runtime_info(
    config: Config,
    expectedCwd: Annotated[str | None, Field(description="Absolute path the working directory must be.")] = None,
    expectedVaultRoot: Annotated[str | None, Field(description="Absolute path the vault must be.")] = None,
    expectedModuleRoot: Annotated[str | None, Field(description="Folder the running amem package must lie in.")] = None,
    expectedProfile: Annotated[str | None, Field(description="Profile name that must be in effect.")] = None,
) -> dict[str, Any]:
    """Report which amem, config and vault this server uses, read-only, and whether it is safe to write.

    Returns an identity envelope: version, module root, bundle, profile, working directory, vault (and
    whether it and a git repository exist), a stable fingerprint, `warnings`, `mismatches` and
    `preflight.safeToWrite`. safeToWrite is true only when absolute expectedCwd and expectedVaultRoot are
    given, match after resolving symlinks, and nothing mismatches. Call it first, with the paths you expect,
    before writing fixtures or notes into a vault you have not used before."""
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
    maxChars: Annotated[
        int,
        Field(
            ge=0,
            description="Bound the characters of all bodies returned (default 20000, about 5,000 tokens): the "
            "note first, then linked notes nearest first, cut at line ends.",
        ),
    ] = 20_000,
) -> dict[str, Any]:
    """Read one Markdown note from the vault, following its Obsidian-style [[link]] references to a depth.

    Returns {id, title, frontmatter, body, links, linkedNotes, backlinks, version, mtime,
    modifiedExternally, conflict}: `linkedNotes` holds the full notes its links reach (each with its own links and
    linkedNotes, to `depth`), `backlinks` the ids of notes linking here, `version` a fingerprint of the
    content to pass as `baseVersion` when you write this note, and `modifiedExternally` is true when the
    file changed on disk since amem last saw it (edited by a person or another program). `conflict` is
    true while a conflict copy left by a sync (NOTE.conflict-COMMIT.md) lies beside the note: read both and
    merge them by hand. `id` may also be a note's name as a [[link]] would give it (any case, a path
    suffix, the base name) or one of its frontmatter aliases: `id` is then the real id, `resolvedFrom` the
    name you gave, `alternatives` the other notes that name matched.

    Following links costs tokens, so the bodies returned total at most maxChars characters (default 20,000,
    about 5,000 tokens): this note's body first, then linked notes nearest first, a body cut short ending
    at a line with `truncated: true` on its record; linked notes that did not fit are listed by id in
    `omitted` (read them on their own), and the top level says `truncated: true` when anything was cut.
    `version` is always the whole note's. Use depth=0 when you need only this note, and wiki_search first
    when you do not know which note to read."""
    from .ops.read import read_note

    return read_note(config, id, depth, max_chars=maxChars, reporter=_reporter())


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
    folder: Annotated[str | None, Field(description="Only notes in this folder or below it, e.g. 'projects/'.")] = None,
) -> dict[str, Any]:
    """Search the vault's notes by title, id and body keywords.

    Words are OR-matched, a word also matches longer words it begins, and Chinese, Japanese and Korean need
    no spaces. Hits are ranked by relevance: title and id matches outrank body matches, rare words weigh
    more, the whole query as a phrase scores extra, and notes linked from strong hits get a boost. Returns
    {hits, total, truncated, fused, semantic}: each hit has the note's id, title, score, backlinks, an
    `expired` flag and a short snippet; `total` counts every match before the cap, and `truncated` is true
    when the cap cut the list (raise maxResults or refine the query). Cheap: use it before wiki_read, and
    before asking the user which note they mean."""
    from .index.search import search

    return search(
        config, query, limit=maxResults, exact_title=exactTitle, tags=tags or (), folder=folder, reporter=_reporter()
    )


@tool(read_only=True)
def wiki_list(
    config: Config,
    prefix: Annotated[
        str | None, Field(description="Only notes whose id starts with this: a folder such as 'projects/'.")
    ] = None,
    tags: Annotated[
        list[str] | None,
        Field(description="Only notes carrying every one of these tags (with or without #, any case)."),
    ] = None,
    sort: Annotated[
        typing.Literal["id", "modified", "created"],
        Field(description="id (default), or newest first by modification time or by frontmatter `created`."),
    ] = "id",
    limit: Annotated[int | None, Field(ge=1, description="Return at most this many notes.")] = None,
) -> dict[str, Any]:
    """List the vault's notes, or those of a folder, with their titles, tags, sizes and times.

    Returns {notes: [{id, title, tags, bytes, mtime, created}], total, truncated}: `total` counts every note
    that matched before the limit. Use it to see what a folder holds or what was changed lately
    (sort=modified); use wiki_search to find notes by what they say."""
    from .index.listing import list_notes

    return list_notes(config, prefix, tags=tags or (), sort=sort, limit=limit, reporter=_reporter())


@tool(read_only=False)
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
) -> dict[str, Any]:
    """Create a note, or append to or overwrite one, atomically. The id is relative to the vault root.

    Returns {id, mode, bytes, version, created} (and `commit` when the vault commits writes to git).
    `version` fingerprints what was written: pass it as baseVersion on your next write of this note,
    without reading it again. Pass the version from wiki_read as baseVersion whenever you change a note
    someone else may edit; on `conflict`, read the note again and redo your change on its new content."""
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


@tool(read_only=False)
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
) -> dict[str, Any]:
    """Remove a note from the vault. Links to it in other notes become unresolved; nothing else changes.

    Returns {id, version, commit}: `version` is the removed content's (wiki_restore can bring it back from
    git when the vault commits writes), `commit` the new commit's hash, or null. Pass baseVersion whenever
    someone else may have changed the note since you read it."""
    from .ops.ops import delete_note

    return delete_note(config, id, baseVersion, _reporter())


@tool(read_only=False)
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
) -> dict[str, Any]:
    """Rename a note and rewrite every [[link]] in the vault that pointed at it, so that none breaks.

    Aliases, #headings, #^blocks and ! embeds are kept, and each link's style where it still resolves
    uniquely; links in code are never touched; each rewritten note gets `updated`. Returns {id, from,
    version, rewritten: [{id, links}], commit}. If the call is interrupted, the same call again finishes the
    rewriting."""
    from .ops.ops import move_note

    return move_note(config, id, newId, baseVersion, _reporter())


@tool(read_only=True)
def wiki_history(
    config: Config,
    id: NoteId,
    limit: Annotated[int | None, Field(ge=1, description="Return at most this many commits.")] = None,
) -> dict[str, Any]:
    """List the git commits that changed a note, newest first, following renames.

    Returns {id, commits: [{hash, date, message, author}]}. Needs the vault to be in a git repository.
    `id` may be a note's name, resolved as wiki_read resolves it (`resolvedFrom`, `alternatives`).
    A hash from this list can be given to wiki_restore."""
    from .ops.names import note_history_by_name

    return note_history_by_name(config, id, limit)


@tool(read_only=False)
def wiki_restore(
    config: Config,
    id: NoteId,
    hash: Annotated[str, Field(description="The commit to take the content from (from wiki_history).")],
    baseVersion: Version,
) -> dict[str, Any]:
    """Roll a note forward to the content it had at a commit, without rewriting history.

    baseVersion is required: the note's current version from wiki_read; a stale one fails with code
    `conflict` and changes nothing. Returns {id, hash, version, commit}: `version` is the note's new
    version, `commit` the new commit's hash when the vault commits writes to git, else null."""
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


def _handler(entry: Tool, config: Config, keeper: _VaultKeeper | None) -> Callable[..., CallToolResult]:
    """A function the SDK can describe: the tool's own parameters without `config`, returning the result."""
    function = entry.function
    hints = typing.get_type_hints(function, include_extras=True)
    parameters = list(inspect.signature(function).parameters.values())[1:]
    signature = inspect.Signature(
        [p.replace(annotation=hints[p.name]) for p in parameters], return_annotation=CallToolResult
    )

    def handler(**arguments: Any) -> CallToolResult:
        if keeper is not None:
            keeper.ensure()
        return call(function, config, arguments)

    handler.__name__ = function.__name__
    handler.__doc__ = function.__doc__
    handler.__signature__ = signature  # type: ignore[attr-defined]
    handler.__annotations__ = {p.name: hints[p.name] for p in parameters} | {"return": CallToolResult}
    return handler


async def _usage_errors(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Arguments the SDK rejects before a tool runs (a wrong type, a missing argument, an unknown tool)
    fail like every other call: a tool error carrying `{"error": {"code": "usage", "message"}}`."""
    result = await call_next(ctx)  # the wire form: a dict
    failed = isinstance(result, dict) and result.get("isError") and result.get("structuredContent") is None
    if ctx.method == "tools/call" and isinstance(result, dict) and failed:
        texts = [b.get("text", "") for b in result.get("content", ()) if isinstance(b, dict)]
        return _result(UsageError(" ".join(t for t in texts if t)).to_json(), [], error=True)
    return result


def build_server(config: Config, keeper: _VaultKeeper | None = None) -> MCPServer[Any]:
    """An MCP server offering every tool in TOOLS on the vault of `config`."""
    server: MCPServer[Any] = MCPServer(
        name="amem", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", middleware=[_usage_errors]
    )
    for entry in TOOLS:
        server.add_tool(
            _handler(entry, config, keeper),
            name=entry.function.__name__,
            description=inspect.getdoc(entry.function),
            annotations=ToolAnnotations(
                read_only_hint=entry.read_only, destructive_hint=not entry.read_only, idempotent_hint=entry.read_only
            ),
        )
    return server


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
        build_server(config, keeper).run("stdio")
    finally:
        keeper.stop()
        if terminated:
            # The transport's reader thread may sit in a read of stdin that only the client can end.
            logging.shutdown()
            os._exit(0)
