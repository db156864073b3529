"""amem read: one note (or part of it) with its links, linked notes, backlinks and version."""

from __future__ import annotations

from typing import Any

import click

from ..cli import AppContext, pass_app
from . import Command, answer_request, declared


@click.command(
    "read",
    cls=Command,
    epilog="""
    amem read decisions/keys --depth 2 --max-chars 20000 | jq '.linkedNotes[].id, .omitted'
    amem read "internal links" --lines 40-60 | jq -r '.version, .body'
    amem read notes/auth --section "## Status" | jq -r .body
    """,
)
@declared("read")
@pass_app
def command(app: AppContext, /, **given: Any) -> None:
    """Read note ID: frontmatter, body, links, linked notes, backlinks, version, mtime, modifiedExternally.

    ID is vault-relative; the extension may be left out (notes/x means notes/x.md). When no note has that
    id, ID resolves as [[ID]] would (case ignored, path suffix, base name), then by frontmatter aliases:
    `id` is then the note's real id, `resolvedFrom` the name given, `alternatives` the other notes it
    matched. `conflict` is true while a conflict copy left by `amem sync` (NOTE.conflict-COMMIT.md) lies
    beside the note.

    With --lines A-B or --section HEADING, `body` is that part of the note and `lines` says where it lies
    ({from, to, total}); `version` stays the whole note's, for a guarded edit or write to follow.
    """
    answer_request(app, "read", given)
