"""amem move: rename a note and rewrite every [[link]] that pointed at it."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit_written
from . import Command, complete_note_id


@click.command(
    "move",
    cls=Command,
    epilog="""
    amem move notes/auth projects/auth/tokens
    amem move "Internal links" help/Links --commit | jq '.rewritten'
    amem move --after notes/old notes/new  # the file was renamed by hand (git mv, a file manager)
    """,
)
@click.argument("old_id", metavar="OLD", shell_complete=complete_note_id)
@click.argument("new_id", metavar="NEW", shell_complete=complete_note_id)
@click.option("--base-version", metavar="V", help="Move only if OLD's current version is V; else nothing changes.")
@click.option(
    "--commit", is_flag=True, help="Commit the rename and every rewritten note as one commit (also: git.autoCommit)."
)
@click.option(
    "--after",
    is_flag=True,
    help="Record a rename already made by hand: OLD must be gone and NEW there; only the links are rewritten.",
)
@pass_app
def command(app: AppContext, old_id: str, new_id: str, base_version: str | None, commit: bool, after: bool) -> None:
    """Rename note OLD to NEW (which must not exist; its folder is created) and rewrite every link in the
    vault that resolved to OLD so that it resolves to NEW.

    Alias, #heading, #^block and ! embed are kept, and the link's style where it still resolves uniquely
    (a base name stays a base name); links in code are never touched; each rewritten note gets `updated`.
    Interrupted, the same command run again finishes the job. A missing OLD is not found (a typo never
    rewrites links) unless --after says the file was already renamed.

    Prints {id, from, version, rewritten: [{id, links}], commit}.
    """
    from ..ops.move import move_note

    emit_written(move_note(app.config, old_id, new_id, base_version, app.reporter, commit=commit, after=after))
