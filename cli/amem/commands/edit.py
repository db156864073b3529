"""amem edit: change part of a note (find and replace, a section, a prepend) without resending it."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..errors import UsageError
from ..output import emit_written
from . import complete_note_id, content_of
from .write import ContentCommand


@click.command(
    "edit",
    cls=ContentCommand,
    epilog="""
    amem edit notes/auth --find "after 24 hours" --replace "after 12 hours" --base-version "$version"
    echo "Deployed on Friday." | amem edit notes/release --section Status
    amem edit notes/log --prepend "Read this first: the keys rotated." --commit
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.argument("content", required=False, metavar="[CONTENT|-]")
@click.option("--find", metavar="TEXT", help="Text in the body to replace (exact; may span lines); it must occur once.")
@click.option("--replace", metavar="TEXT", help="What replaces the --find text (may be empty).")
@click.option("--all", "every", is_flag=True, help="Replace every occurrence of the --find text, at least one.")
@click.option(
    "--section",
    metavar="HEADING",
    help="Replace what lies under HEADING (any case; #s optional, they fix the level) with CONTENT, up to the "
    "next heading of the same or a higher level.",
)
@click.option("--prepend", is_flag=True, help="Insert CONTENT at the start of the body, after the frontmatter.")
@click.option(
    "--base-version", metavar="V", help="Edit only if the note's current version is V (from read or a previous write)."
)
@click.option(
    "--commit", is_flag=True, help="Commit exactly this note's change to git (also: git.autoCommit in config)."
)
@pass_app
def command(
    app: AppContext,
    note_id: str,
    content: str | None,
    find: str | None,
    replace: str | None,
    every: bool,
    section: str | None,
    prepend: bool,
    base_version: str | None,
    commit: bool,
) -> None:
    """Change part of a note: find and replace, a section, or a prepend.

    Exactly one of --find/--replace, --section HEADING or --prepend per call. CONTENT (for --section
    and --prepend) comes from the argument or stdin.
    The frontmatter is kept byte for byte but `updated`; nothing is written when the edit does not fit
    (the text found 0 or several times, a missing or repeated heading).

    Prints {id, version, bytes, replaced}, plus `commit` when a commit was made.
    """
    from ..ops.edit import Edit, edit_note

    operations = (find is not None) + (section is not None) + prepend
    text: str | None = None
    if operations == 1 and find is None:
        text = content_of(content)  # read only when the call is otherwise right: stdin is read once
    elif operations == 1 and content is not None:
        raise UsageError("CONTENT goes with --section or --prepend; --find takes --replace TEXT")
    elif operations > 1:
        text = ""  # Edit says that only one operation may be given
    edit = Edit(
        find=find,
        replace=replace,
        all=every,
        section=section,
        content=text if section is not None else None,
        prepend=text if prepend else None,
    )
    emit_written(edit_note(app.config, note_id, edit, base_version=base_version, commit=commit, reporter=app.reporter))
