"""JSON on stdout for data, JSON on stderr for errors, plain lines on stderr for diagnostics."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


def quote(text: str) -> str:
    """A name as error messages show it: in double quotes, escapes visible, never a host path."""
    return json.dumps(text, ensure_ascii=False)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def emit(data: Any, stream: TextIO | None = None) -> None:
    """Print one JSON document: indented on a terminal, one line otherwise."""
    out = stream or sys.stdout
    if _is_tty(out):
        text = json.dumps(data, ensure_ascii=False, indent=2)
    else:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    out.write(text + "\n")
    out.flush()


def emit_line(data: Any, stream: TextIO | None = None) -> None:
    """Print one NDJSON record and flush it, for streams such as `watch --sink stdout`."""
    out = stream or sys.stdout
    out.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    out.flush()


def emit_error(error: dict[str, Any]) -> None:
    sys.stderr.write(json.dumps(error, ensure_ascii=False) + "\n")
    sys.stderr.flush()


def warn(message: str) -> None:
    """A diagnostic for humans on stderr; never on stdout."""
    sys.stderr.write(f"amem: warning: {message}\n")
    sys.stderr.flush()


def info(message: str) -> None:
    sys.stderr.write(f"amem: {message}\n")
    sys.stderr.flush()
