"""amem list: the notes of the vault or of a folder, with title, tags, size and times."""

from __future__ import annotations

from typing import Any

import click

from ..cli import AppContext, pass_app
from . import Command, answer_request, declared


@click.command(
    "list",
    cls=Command,
    epilog="""
    amem list notes/ --tag auth --limit 10
    amem list --since 2d
    amem list --since 2026-11-30 | jq -r '.notes[].id'
    """,
)
@declared("list")
@pass_app
def command(app: AppContext, /, **given: Any) -> None:
    """List the notes of the vault, or those whose id starts with PREFIX (a folder such as notes/).

    Prints {notes: [{id, title, tags, bytes, mtime, created}], total, truncated}.
    """
    answer_request(app, "list", given)
