"""JSON on stdout for data, JSON on stderr for errors, plain lines on stderr for diagnostics."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from contextlib import suppress
from typing import Any, TextIO

from .errors import IoError


def quote(text: str) -> str:
    """A name as error messages show it: in double quotes, escapes visible, never a host path."""
    return json.dumps(text, ensure_ascii=False)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def silence_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's last flush of what could not be
    written does not complain about it on stderr."""
    with suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def emit(data: Any, stream: TextIO | None = None) -> None:
    """Print one JSON document: indented on a terminal, one line otherwise. When stdout is closed or
    refuses the text (a full disk), an `io` error; a reader that went away (EPIPE) propagates as is."""
    out = stream or sys.stdout
    if out is None:
        raise IoError("cannot print the result: stdout is closed")
    emit_text(json.dumps(data, ensure_ascii=False, indent=2) if _is_tty(out) else one_line(data), out)


def one_line(data: Any) -> str:
    """The JSON document as emit() prints it when stdout is not a terminal."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def stdout_is_terminal() -> bool:
    return sys.stdout is not None and _is_tty(sys.stdout)


def emit_text(text: str, stream: TextIO | None = None) -> None:
    """Print a document emit() rendered (`one_line`, or indented for a terminal), with emit()'s errors."""
    out = stream or sys.stdout
    if out is None:
        raise IoError("cannot print the result: stdout is closed")
    try:
        out.write(text + "\n")
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        silence_stdout()
        raise IoError(f"cannot print the result: {exc.strerror or type(exc).__name__}") from None
    except ValueError:  # the stream was closed
        raise IoError("cannot print the result: stdout is closed") from None
    from .report import release_warnings

    release_warnings()  # the result is out: what was held is said now, as plain lines


def emit_one_line(text: str) -> None:
    """Print a document already rendered on one line (`one_line`, as a keeper answers) as emit() prints it:
    indented on a terminal."""
    if stdout_is_terminal():
        emit(json.loads(text))
    else:
        emit_text(text)


def emit_written(data: Mapping[str, Any]) -> None:
    """emit() for a command that changed a note (`id` and `version` in `data`): when the result cannot
    be printed, the error says the note was written and carries `written: {id, version}`, so that a
    caller that retries can tell and does not write twice."""
    try:
        emit(data)
    except (IoError, BrokenPipeError) as exc:
        silence_stdout()
        if isinstance(exc, IoError):
            reason = exc.message.removeprefix("cannot print the result: ")
        else:
            reason = "the reader of stdout went away"
        raise IoError(
            f"wrote note {quote(data['id'])} (version {data['version']}), but could not print the result: {reason}",
            written={"id": data["id"], "version": data["version"]},
        ) from None


def emit_line(data: Any, stream: TextIO | None = None) -> None:
    """Print one NDJSON record and flush it, for streams such as `watch --sink stdout`."""
    out = stream or sys.stdout
    out.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    out.flush()
    from .report import release_warnings

    release_warnings()


def emit_error(error: dict[str, Any]) -> None:
    """The error object on stderr; when stderr is closed or refuses it, nothing (the exit code still
    tells the kind of failure)."""
    if sys.stderr is None:
        return
    with suppress(OSError, ValueError):
        sys.stderr.write(json.dumps(error, ensure_ascii=False) + "\n")
        sys.stderr.flush()


def warn(message: str) -> None:
    """A diagnostic for humans on stderr; never on stdout."""
    info(f"warning: {message}")


def info(message: str) -> None:
    if sys.stderr is None:
        return
    with suppress(OSError, ValueError):
        sys.stderr.write(f"amem: {message}\n")
        sys.stderr.flush()
