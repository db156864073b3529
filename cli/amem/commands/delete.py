"""amem delete: remove a note, guarded by its version."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit_written
from . import Command, complete_note_id


@click.command(
    "delete",
    cls=Command,
    epilog="""
    amem delete scratch/draft
    amem delete notes/old --base-version "$version" --commit
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.option(
    "--base-version", metavar="V", help="Delete only if the note's current version is V; else nothing changes."
)
@click.option("--commit", is_flag=True, help="Commit the removal, and nothing else, to git (also: git.autoCommit).")
@pass_app
def command(app: AppContext, note_id: str, base_version: str | None, commit: bool) -> None:
    """Remove note ID from the vault. Links to it become unresolved; nothing else changes.

    Prints {id, version, commit}: `version` is the removed content's, `commit` the new commit's hash, or
    null when no commit was made.
    """
    from ..ops.delete import delete_note

    emit_written(delete_note(app.config, note_id, base_version, app.reporter, commit=commit))
