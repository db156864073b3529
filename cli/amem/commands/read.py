"""amem read: one note with its links, linked notes, backlinks and version."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command, complete_note_id, integer, keeper_answered


@click.command(
    "read",
    cls=Command,
    epilog="""
    amem read notes/auth
    amem read "internal links" | jq -r '.id, .version'
    amem read decisions/keys --depth 2 --max-chars 20000 | jq '.linkedNotes[].id, .omitted'
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.option(
    "--depth",
    type=integer(0),
    metavar="N",
    help="Follow links this many levels deep (default: maxLinkDepth, 1).",
)
@click.option(
    "--max-chars",
    type=integer(0),
    metavar="N",
    help="Bound the characters of all bodies: the note first, then linked notes nearest first, cut at lines "
    "(truncated, omitted say what was left out). Default: no bound.",
)
@pass_app
def command(app: AppContext, note_id: str, depth: int | None, max_chars: int | None) -> None:
    """Read note ID: frontmatter, body, links, linked notes, backlinks, version, mtime, modifiedExternally.

    ID is vault-relative; the extension may be left out (notes/x means notes/x.md). When no note has that
    id, ID resolves as [[ID]] would (case ignored, path suffix, base name), then by frontmatter aliases:
    `id` is then the note's real id, `resolvedFrom` the name given, `alternatives` the other notes it
    matched. `conflict` is true while a conflict copy left by `amem sync` (NOTE.conflict-COMMIT.md) lies
    beside the note.
    """
    if keeper_answered(app, app.config, "read", {"id": note_id, "depth": depth, "maxChars": max_chars}):
        return
    from ..ops.read import read_note

    emit(read_note(app.config, note_id, depth, max_chars=max_chars, reporter=app.reporter))
