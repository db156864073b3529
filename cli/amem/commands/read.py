"""amem read: one note with its links, linked notes, backlinks and version."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command, complete_note_id


@click.command(
    "read",
    cls=Command,
    epilog="""
    amem read notes/auth
    amem read decisions/keys --depth 2 | jq '.linkedNotes[].id'
    amem read notes/auth | jq -r .version
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.option(
    "--depth",
    type=click.IntRange(min=0),
    metavar="N",
    help="Follow links this many levels deep (default: maxLinkDepth, 1).",
)
@pass_app
def command(app: AppContext, note_id: str, depth: int | None) -> None:
    """Read note ID: frontmatter, body, links, linked notes, backlinks, version, mtime, modifiedExternally.

    ID is vault-relative; the extension may be left out (notes/x means notes/x.md). `conflict` is true
    while a conflict copy left by `amem sync` (NOTE.conflict-COMMIT.md) lies beside the note.
    """
    from ..ops.read import read_note

    emit(read_note(app.config, note_id, depth, reporter=app.reporter))
