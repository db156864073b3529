"""amem write: create, append to or overwrite a note, atomically, with optimistic concurrency."""

from __future__ import annotations

import sys

import click

from ..cli import AppContext, pass_app
from ..errors import UsageError
from ..output import emit
from . import Command, complete_note_id


def _content(argument: str | None) -> str:
    if argument is not None and argument != "-":
        return argument
    if sys.stdin is None or (argument is None and sys.stdin.isatty()):
        raise UsageError("no content: give CONTENT as an argument, or pipe it on stdin (or pass -)")
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the content on stdin is not UTF-8 text") from None


@click.command(
    "write",
    cls=Command,
    epilog="""
    echo "Tokens expire after 24 hours." | amem write notes/auth
    amem write notes/auth --overwrite "Tokens live 24 h." --commit
    amem write notes/auth --base-version "$version" --require-existing "One more fact."
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.argument("content", required=False, metavar="[CONTENT|-]")
@click.option(
    "--append", "mode", flag_value="append", default=True, help="Add CONTENT under a timestamp heading (the default)."
)
@click.option(
    "--overwrite",
    "mode",
    flag_value="overwrite",
    help="Replace the body; frontmatter keys not given are kept, `updated` is stamped.",
)
@click.option(
    "--base-version", metavar="V", help="Write only if the note's current version is V (from read or a previous write)."
)
@click.option("--require-existing", is_flag=True, help="Fail instead of creating a new note.")
@click.option(
    "--commit", is_flag=True, help="Commit exactly this note's change to git (also: git.autoCommit in config)."
)
@pass_app
def command(
    app: AppContext,
    note_id: str,
    content: str | None,
    mode: str,
    base_version: str | None,
    require_existing: bool,
    commit: bool,
) -> None:
    """Write CONTENT (or stdin) to note ID, creating it if needed.

    Prints {id, mode, bytes, version, created}, plus `commit` when a commit was made.
    """
    from ..vault.write import write_note

    emit(
        write_note(
            app.config,
            note_id,
            _content(content),
            mode=mode,
            base_version=base_version,
            require_existing=require_existing,
            commit=commit,
            reporter=app.reporter,
        )
    )
