"""One small module per subcommand; each defines `command`."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import click

from ..config import MAX_INTEGER

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from ..cli import AppContext
    from ..config import Config


def integer(minimum: int) -> click.IntRange:
    """The type of an integer option: from `minimum` to MAX_INTEGER, a value outside a usage error."""
    return click.IntRange(min=minimum, max=MAX_INTEGER)


class Command(click.Command):
    """A subcommand whose epilog holds its examples, one command line each, shown after the options as an
    `Examples:` section (and in the man page and the README's reference, which are generated from it)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if self.epilog:
            with formatter.section("Examples"):
                formatter.write_text("\b\n" + inspect.cleandoc(self.epilog))


def examples(command: click.Command) -> list[str]:
    """The example command lines of `command`, as its help shows them."""
    return inspect.cleandoc(command.epilog).splitlines() if command.epilog else []


def complete_note_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """`shell_complete` for ID arguments. The completion machinery loads only when a shell asks, so
    that running a command never pays for it."""
    from ..completion import complete_note_id as complete

    return complete(ctx, param, incomplete)


def complete_tag(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """`shell_complete` for --tag: the tags the vault's index holds (see `complete_note_id`)."""
    from ..completion import complete_tag as complete

    return complete(ctx, param, incomplete)


def keeper_answered(app: AppContext, config: Config, op: str, args: dict[str, Any]) -> bool:
    """Print a live keeper's answer to operation `op` (its warnings first, as the command's own would
    come) and say True; False when none answers and the command must answer in its own process (see
    `amem.index.keeper_ask`)."""
    from ..index.keeper_ask import ask

    answer = ask(config, op, args)
    if answer is None:
        return False
    from ..output import emit, emit_text, stdout_is_terminal

    for message in answer.warnings:
        app.reporter.warn(message)
    if stdout_is_terminal():  # indented, as emit() prints for a terminal
        import json

        emit(json.loads(answer.text))
    else:
        emit_text(answer.text)
    return True
