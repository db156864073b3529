"""The keeper's side of the commands it answers (`amem.keeperproto.ask` says the protocol): `search`, `read`
and `list` run here, in the keeper's process, with the very functions the commands call in their own, so
the answer is the one the command would have printed.

What a request may steer is checked here, key by key: the operation's arguments (their types, and numbers
bounded as the keeper's rankings are), and the few config values the answer uses; the vault is always the
keeper's own, and a note's id or a folder is checked by the same code as in the command's process. A
request of another amem, of other index settings or of another local zone is not answered, nor is any
operation that fails: the command then answers, or fails, in its own process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import AmemError
from ..keeperproto.ask import answer_settings, local_zone
from ..opspec import MAX_NUMBER, OPS, TYPES
from ..output import one_line
from ..report import CollectingReporter, Reporter

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable

    from ..config import Config
    from ..keeper.requests import After, CommandRequest

_OPTIONAL_TEXT = (str, type(None))
#: Each operation's arguments: name → the types it may have (a list is a list of strings), as declared.
_ARGS: dict[str, dict[str, tuple[type, ...]]] = {
    op: {p.name: TYPES[p.kind] for p in params if p.kind != "switch"} for op, params in OPS.items()
}
_CONFIG: dict[str, tuple[type, ...]] = {
    "maxLinkDepth": (int,),
    "maxSearchResults": (int,),
    "semantic": (bool,),
    "timezone": _OPTIONAL_TEXT,
}


class NotAnswered(ValueError):
    """A request the keeper leaves to the command."""


def answer(
    config: Config, request: CommandRequest, ranking: threading.Lock
) -> tuple[dict[str, Any], str | None, After]:
    """The answer line's object for `request` (`{"warnings": […]}`), the result as the command prints it
    on one line, and what to run once the client has them (a read's record of what it saw);
    `{"error": …}` and None for a request the command must answer itself."""
    try:
        ours = _config_for(config, request)
        args = _checked(request.args, _ARGS[request.op])
    except NotAnswered as exc:
        return {"error": str(exc)}, None, None
    reporter = CollectingReporter()
    try:
        if request.op == "search" and ours.semantic:
            with ranking:  # the model and its vectors are shared with the keeper's rankings
                result, after = run(ours, request.op, args, reporter, answering=True)
        else:
            result, after = run(ours, request.op, args, reporter, answering=True)
    except AmemError as exc:  # the command raises it itself, as it always does
        return {"error": "refused", "code": exc.code}, None, None
    return {"warnings": reporter.warnings}, one_line(result), after


def _config_for(config: Config, request: CommandRequest) -> Config:
    """The keeper's config with the command's own values for what the answer uses; NotAnswered when the
    request is of another amem, vault, index or zone, or its values are of wrong types."""
    if request.amem != __version__:
        raise NotAnswered("another amem version")
    if request.settings != answer_settings(config) or request.tz != local_zone():
        raise NotAnswered("other settings")
    view = _checked(request.config, _CONFIG)
    if view["maxLinkDepth"] < 0 or view["maxSearchResults"] < 1:
        raise NotAnswered("bad config values")
    return config._replace(
        max_link_depth=view["maxLinkDepth"],
        max_search_results=view["maxSearchResults"],
        semantic=view["semantic"],
        timezone_name=view["timezone"],
    )


def _checked(given: dict[str, Any], kinds: dict[str, tuple[type, ...]]) -> dict[str, Any]:
    """`given`, when it holds exactly these keys with values of these types (numbers 0..MAX_NUMBER, never
    a bool, lists of strings only); NotAnswered otherwise."""
    if set(given) != set(kinds):
        raise NotAnswered("unexpected or missing keys")
    for key, value in given.items():
        allowed = kinds[key]
        if isinstance(value, bool) and bool not in allowed:
            raise NotAnswered(f"{key} is of a wrong type")
        if not isinstance(value, allowed):
            raise NotAnswered(f"{key} is of a wrong type")
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_NUMBER:
            raise NotAnswered(f"{key} is out of bounds")
        if isinstance(value, list) and not all(isinstance(item, str) for item in value):
            raise NotAnswered(f"{key} must be a list of strings")
    return given


def run(
    config: Config,
    op: str,
    args: dict[str, Any],
    reporter: Reporter,
    long_lived: bool = True,
    *,
    answering: bool = False,
) -> tuple[Any, After]:
    """Operation `op` with checked `args`: its result, and what to run once the result is out. A process
    that is not `long_lived` (a command's own) keeps neither a search's index open nor the vectors in
    memory. A read records what it saw in the index it read, unless the keeper is `answering` a command:
    then only once the command has the answer (what is returned to run)."""
    if long_lived:
        from ..index import kept

        kept.KEEP_INDEX = True  # its operations reuse their open index
    if op == "search":
        return _search(config, args, reporter, long_lived), None
    if op == "read":
        return _read(config, args, reporter, answering)
    from ..search.listing import list_notes

    result = list_notes(
        config,
        args["prefix"],
        tags=tuple(args["tags"]),
        sort=args["sort"],
        limit=args["limit"],
        since=args["since"],
        reporter=reporter,
    )
    return result, None


def _search(config: Config, args: dict[str, Any], reporter: Reporter, long_lived: bool) -> Any:
    from ..search.query import search

    if long_lived and config.semantic:
        from ..semantic import semantic

        semantic.KEEP_VECTORS = True  # the vectors stay in memory between searches
    return search(
        config,
        args["query"],
        also=args["also"],
        limit=args["limit"],
        exact_title=args["exactTitle"],
        tags=tuple(args["tags"]),
        folder=args["folder"],
        explain=args["explain"],
        reporter=reporter,
    )


def _read(config: Config, args: dict[str, Any], reporter: Reporter, answering: bool) -> tuple[Any, After]:
    from .read import read_note

    # The read records what it saw in the index it read, unless the command must have the answer first.
    result = read_note(
        config,
        args["id"],
        args["depth"],
        max_chars=args["maxChars"],
        lines=args["lines"],
        section=args["section"],
        reporter=reporter,
        mark_seen=not answering,
    )
    return result, _seen(config, result["id"], result["version"]) if answering else None


def _seen(config: Config, note_id: str, version: str) -> Callable[[], None]:
    """Record `version` as what amem last saw of `note_id`, as the command's own read would have."""

    def record() -> None:
        from ..index import kept

        index = kept.take_index(config)
        try:
            index.mark_seen(note_id, version)
        finally:
            kept.give_back(index)

    return record
