"""amem memory-tool: one command of Claude's memory tool, as JSON on stdin, run on the vault."""

from __future__ import annotations

import sys

import click

from ..cli import AppContext, pass_app
from ..errors import UsageError
from ..output import emit_text
from . import Command


@click.command(
    "memory-tool",
    cls=Command,
    epilog="""
    echo '{"command": "view", "path": "/memories"}' | amem memory-tool
    echo '{"command": "create", "path": "/memories/p.md", "file_text": "- tabs\\n"}' | amem memory-tool
    echo '{"command":"str_replace","path":"/memories/p.md","old_str":"tabs","new_str":"spaces"}' | amem memory-tool
    """,
)
@pass_app
def command(app: AppContext) -> None:
    """Run one command of Claude's memory tool (memory_20250818) on the vault folder that /memories names
    (memoryTool.folder, default memories/).

    Reads the tool call's input, a JSON object, on stdin: view (path, view_range), create (path, file_text),
    str_replace (path, old_str, new_str), insert (path, insert_line, insert_text), delete (path) or rename
    (old_path, new_path). Prints the tool result's text, worded as the anthropic SDK's own memory tool
    words it; a failure is amem's JSON error, its message the text for the model. A file holds exactly the
    bytes the model wrote; a rename rewrites the links to it; paths that leave /memories are refused.
    """
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError('pipe one memory command as JSON on stdin, e.g. {"command": "view", "path": "/memories"}')
    from ..interrupt import read_stdin
    from ..memorytool.store import run_input

    data = read_stdin()
    emit_text(run_input(app.config, data, app.reporter))
