"""One small module per subcommand; each defines `command`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click


def complete_note_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """`shell_complete` for ID arguments. The completion machinery loads only when a shell asks, so
    that running a command never pays for it."""
    from ..completion import complete_note_id as complete

    return complete(ctx, param, incomplete)
