"""amem list: the notes of the vault or of a folder, with title, tags, size and times."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command, complete_note_id, complete_tag, integer, keeper_answered


@click.command(
    "list",
    cls=Command,
    epilog="""
    amem list notes/ --tag auth --limit 10
    amem list --since 2d
    amem list --since 2026-11-30 | jq -r '.notes[].id'
    """,
)
@click.argument("prefix", required=False, metavar="[PREFIX]", shell_complete=complete_note_id)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="T",
    shell_complete=complete_tag,
    help="Only notes tagged T (frontmatter tags or #T in the body; with or without #, any case; "
    "nested tags count). Repeat: every tag must hold.",
)
@click.option(
    "--sort",
    type=click.Choice(["id", "modified", "created"]),
    help="Order by id (the default; with --since, modified), or newest first by modification or by "
    "frontmatter `created`.",
)
@click.option("--limit", type=integer(1), metavar="N", help="Return at most N notes.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only notes modified since WHEN: a duration back from now (30m, 12h, 2d, 1w) or an ISO date or "
    "time (2026-11-30, 2026-11-30T09:00+01:00); newest first unless --sort is given.",
)
@pass_app
def command(
    app: AppContext, prefix: str | None, tags: tuple[str, ...], sort: str | None, limit: int | None, since: str | None
) -> None:
    """List the notes of the vault, or those whose id starts with PREFIX (a folder such as notes/).

    Prints {notes: [{id, title, tags, bytes, mtime, created}], total, truncated}.
    """
    asked = {"prefix": prefix, "tags": list(tags), "sort": sort, "limit": limit, "since": since}
    if keeper_answered(app, app.config, "list", asked):
        return
    from ..index.listing import list_notes

    emit(list_notes(app.config, prefix, tags=tags, sort=sort, limit=limit, since=since, reporter=app.reporter))
