"""amem help [COMMAND]: the help `--help` prints, for people who type it as they do with git."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


def _complete_command(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    root = ctx.find_root()
    group = root.command
    names = group.list_commands(root) if isinstance(group, click.Group) else []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


@click.command("help", hidden=True)
@click.argument("name", metavar="[COMMAND]", required=False, shell_complete=_complete_command)
@click.pass_context
def command(ctx: click.Context, name: str | None) -> None:
    """Print amem's help, or COMMAND's, as `--help` does."""
    root = ctx.find_root()
    group = root.command
    assert isinstance(group, click.Group)
    if name is None:
        click.echo(root.get_help())
        return
    _, sub, _ = group.resolve_command(root, [name])  # a mistyped name is a usage error with a guess
    assert sub is not None
    with sub.make_context(name, [], parent=root, resilient_parsing=True) as sub_ctx:
        click.echo(sub_ctx.get_help())
