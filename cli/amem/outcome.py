"""A command-line run's outcome: every failure as amem's own error on stderr with its exit code, never a
traceback, and the warnings met on the way (held until the run ends) folded into it. The root group runs
every command through `run_translating_errors`, adding Click's own exceptions (`cli`); the console script's
shim (`shim`) prints a keeper's answer through it alone."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from typing import Any

from .errors import AmemError, InternalError, Interrupted, IoError
from .output import emit_error, silence_stdout

#: Turns an exception of a caller's own kind into (exit code, the error to report or None); None when it
#: is not one of them.
Translate = Callable[[BaseException], "tuple[int, AmemError | None] | None"]

#: An absolute path inside a message from Python or a library, which amem must not show.
_HOST_PATH = re.compile(r"(?<![\w./-])/[^\s'\"]*")
#: errno values that mean the file system refused; anything else unexpected is an internal error.
_IO_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EIO}


def run_translating_errors(invoke: Callable[[], object], translate: Translate | None = None) -> int:
    """Run `invoke`; its exit code. On failure the error object goes to stderr with the warnings met
    before it folded in (stderr holds one JSON document); on success they are printed as lines."""
    code, document = run_outcome(invoke, translate)
    if document is not None:
        emit_error(document)
    return code


def run_outcome(invoke: Callable[[], object], translate: Translate | None = None) -> tuple[int, dict[str, Any] | None]:
    """`run_translating_errors` without printing the failure: the exit code and the error document it
    would print (`{"error": …}`, the held warnings folded in), or None on success."""
    from .report import end_run, start_run

    reporter = start_run()
    try:
        code, error = _outcome(invoke, translate)
    finally:
        end_run()
    if error is None:
        reporter.release()
        return code, None
    document = error.to_json()
    warnings = reporter.take_held()
    if warnings:
        document["error"]["warnings"] = warnings
    return code, document


def _outcome(invoke: Callable[[], object], translate: Translate | None) -> tuple[int, AmemError | None]:
    """(exit code, the error to report or None): every failure as amem's own error, never a traceback."""
    try:
        invoke()
    except (Exception, KeyboardInterrupt) as exc:
        translated = translate(exc) if translate is not None else None
        return translated if translated is not None else failure(exc)
    return 0, None


def failure(exc: Exception | KeyboardInterrupt) -> tuple[int, AmemError | None]:
    """What a run that raised `exc` ends with: amem's own error as it is; a Ctrl-C as `interrupted`; a
    reader of stdout that went away as exit 1 with nothing more said; anything else as an I/O or internal
    error whose message names no host path (AMEM_DEBUG=1 lets it through instead, traceback and all)."""
    if isinstance(exc, AmemError):
        return exc.exit_code, exc
    if isinstance(exc, BrokenPipeError):  # a reader such as `head` went away: nothing more can be said
        silence_stdout()
        return 1, None
    if interrupted(exc):
        return Interrupted.exit_code, Interrupted("interrupted (Ctrl-C)")
    if os.environ.get("AMEM_DEBUG"):
        raise exc
    assert isinstance(exc, Exception)
    error = unexpected(exc)
    return error.exit_code, error


def unexpected(exc: Exception) -> AmemError:
    """An exception amem did not expect, as its error: the file system's refusals as `io_error`, anything
    else as `internal_error`."""
    if isinstance(exc, OSError):
        reason = exc.strerror or type(exc).__name__  # never str(exc): it names the host's files
        if exc.errno in _IO_ERRNOS:
            return IoError(f"the file system refused: {reason}")
        return InternalError(f"unexpected {type(exc).__name__}: {reason}")
    return InternalError(f"unexpected {type(exc).__name__}: {_HOST_PATH.sub('<path>', str(exc))}")


def interrupted(exc: BaseException) -> bool:
    """Whether a Ctrl-C caused `exc`: one that lands while Python runs an import's class body comes out
    wrapped (a RuntimeError from __set_name__, say), and is still the user's interrupt, not amem's failure."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
