"""amem history: a note's git history, newest first, following renames."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command, complete_note_id, integer


@click.command(
    "history",
    cls=Command,
    epilog="""
    amem history notes/auth
    amem history notes/auth --limit 5 | jq -r '.commits[] | "\\(.hash[:7]) \\(.message)"'
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.option("--limit", type=integer(1), metavar="N", help="Show at most N commits.")
@pass_app
def command(app: AppContext, note_id: str, limit: int | None) -> None:
    """List the commits that changed note ID: {id, commits: [{hash, date, message, author}]}.

    ID may be a name, resolved as for `amem read` (`resolvedFrom`, `alternatives` then say so).
    Uses the git repository holding the vault (the vault's own, or a project's that contains it).
    A hash from this list can be given to `amem restore`.
    """
    from ..ops.names import note_history_by_name

    emit(note_history_by_name(app.config, note_id, limit))
