"""amem restore: roll a note forward to the content it had at a commit, without rewriting history."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit_written
from . import Command, complete_note_id


@click.command(
    "restore",
    cls=Command,
    epilog="""
    amem restore notes/auth HEAD~1 --base-version "$version"
    amem restore notes/auth 3f2a9c1 --base-version "$version" --commit
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.argument("revision", metavar="HASH")
@click.option(
    "--base-version",
    required=True,
    metavar="V",
    help="The note's current version (from read or write); a stale one changes nothing.",
)
@click.option("--commit", is_flag=True, help="Commit the restored note to git (also: git.autoCommit in config).")
@pass_app
def command(app: AppContext, note_id: str, revision: str, base_version: str, commit: bool) -> None:
    """Write note ID's content as of HASH (a hash, short hash, tag or HEAD~2) into the vault.

    Prints {id, hash, version, commit}: `hash` is the full hash HASH named, `version` the note's new
    version, `commit` the new commit's hash, or null when no commit was made.
    """
    from ..notes.ids import resolve_note
    from ..ops.restore import restore_note
    from ..store.write import check_version

    config = app.config
    ref = resolve_note(config, note_id)
    check_version(base_version)
    emit_written(restore_note(config, ref, revision, base_version, commit, reporter=app.reporter))
