"""amem move: rename a note and rewrite every [[link]] that pointed at it."""

from __future__ import annotations

import click

from ..output import emit
from . import complete_note_id


@click.command("move")
@click.argument("old_id", metavar="OLD", shell_complete=complete_note_id)
@click.argument("new_id", metavar="NEW", shell_complete=complete_note_id)
@click.option("--base-version", metavar="V", help="Move only if OLD's current version is V; else nothing changes.")
@click.option(
    "--commit", is_flag=True, help="Commit the rename and every rewritten note as one commit (also: git.autoCommit)."
)
@click.pass_obj
def command(app: object, old_id: str, new_id: str, base_version: str | None, commit: bool) -> None:
    """Rename note OLD to NEW (which must not exist; its folder is created) and rewrite every link in the
    vault that resolved to OLD so that it resolves to NEW.

    Alias, #heading, #^block and ! embed are kept, and the link's style where it still resolves uniquely
    (a base name stays a base name); links in code are never touched; each rewritten note gets `updated`.
    Interrupted, the same command run again finishes the job.

    Prints {id, from, version, rewritten: [{id, links}], commit}.
    """
    from ..report import StderrReporter
    from ..vault.ops import move_note

    config = app.config  # type: ignore[attr-defined]
    emit(move_note(config, old_id, new_id, base_version, StderrReporter(), commit=commit))
