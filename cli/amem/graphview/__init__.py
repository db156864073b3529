"""The graph `amem graph` prints, in the formats other tools read: Graphviz DOT, GraphML (Gephi, yEd),
Mermaid (GitHub, Obsidian) and one self-contained interactive HTML page (`html`, loaded only for it).
Pure: a graph in, text out."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..errors import IoError

if TYPE_CHECKING:
    from ..results import GraphResult

#: The formats besides json, each rendered by `render`.
FORMATS = ("dot", "graphml", "mermaid", "html")


def render(graph: GraphResult, fmt: str) -> str:
    """`graph` as the text of format `fmt` (json or one of FORMATS)."""
    if fmt == "json":
        import json

        return json.dumps(graph, ensure_ascii=False, separators=(",", ":")) + "\n"
    if fmt == "html":
        from .html import html_page

        return html_page(graph)
    from . import text

    renderers = {"dot": text.dot, "graphml": text.graphml, "mermaid": text.mermaid}
    return renderers[fmt](graph)


def print_text(text: str) -> None:
    """The graph's text on stdout; an `io` error when stdout is closed or refuses it (a reader that went
    away, EPIPE, propagates as is)."""
    out = sys.stdout
    if out is None:
        raise IoError("cannot print the graph: stdout is closed")
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise IoError(f"cannot print the graph: {exc.strerror or type(exc).__name__}") from None
    except ValueError:
        raise IoError("cannot print the graph: stdout is closed") from None


def save_text(path: str, text: str) -> None:
    """Write the graph's text to `path`, replacing it atomically: a reader sees the old file or the whole
    new one. The message of a failure names no host path."""
    import os

    from ..atomicfile import atomic_replace

    try:
        atomic_replace(os.path.abspath(path), text.encode("utf-8"), None)
    except OSError as exc:
        raise IoError(f"cannot write the graph to --output FILE: {exc.strerror or type(exc).__name__}") from None
