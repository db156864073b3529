"""One small module per subcommand; each defines `command`."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import click

from ..config import MAX_INTEGER
from ..output import emit

if TYPE_CHECKING:
    from collections.abc import Callable

    from click.shell_completion import CompletionItem

    from ..cli import AppContext
    from ..config import Config
    from ..opspec import Param


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


def content_of(argument: str | None) -> str:
    """CONTENT as write and edit take it: the argument, or stdin when it is `-` or not given (a terminal on
    stdin with no argument is a usage error, not a wait)."""
    import sys

    from ..errors import UsageError

    if argument is not None and argument != "-":
        return argument
    if sys.stdin is None or (argument is None and sys.stdin.isatty()):
        raise UsageError("no content: give CONTENT as an argument, or pipe it on stdin (or pass -)")
    from ..interrupt import read_stdin

    try:
        return read_stdin().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the content on stdin is not UTF-8 text") from None


def keeper_answered(app: AppContext, config: Config, op: str, args: dict[str, Any]) -> bool:
    """Print a live keeper's answer to operation `op` (its warnings first, as the command's own would
    come) and say True; False when none answers and the command must answer in its own process (see
    `amem.keeperproto.ask`)."""
    from ..keeperproto.ask import ask

    answer = ask(config, op, args)
    if answer is None:
        return False
    from ..output import emit_one_line

    for message in answer.warnings:
        app.reporter.warn(message)
    emit_one_line(answer.text)
    return True


def answer_request(app: AppContext, op: str, given: dict[str, Any]) -> None:
    """Run a command a keeper may answer (`opspec.OPS`): its request from the parsed command line, a live
    keeper's answer if one gives it, else the operation run here by the code the keeper runs."""
    from ..opspec import missing, request

    args, flags = request(op, given)
    if (lacking := missing(op, args)) is not None:
        from ..errors import UsageError

        raise UsageError(lacking)
    config = app.configure(flags)
    if keeper_answered(app, config, op, args):
        return
    from ..ops.answers import run

    result, _ = run(config, op, args, app.reporter, long_lived=False)
    emit(result)


def declared(op: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The command's arguments and options, built from its declaration in `opspec.OPS`."""
    from ..opspec import OPS

    def decorate(function: Callable[..., None]) -> Callable[..., None]:
        for param in reversed(OPS[op]):
            function = _click_param(param)(function)
        return function

    return decorate


def _click_param(param: Param) -> Callable[[Callable[..., None]], Callable[..., None]]:
    kind, name = param.kind, param.name
    if kind == "words":
        return click.argument(name, nargs=-1)
    if kind in ("id", "optional"):
        return click.argument(name, required=kind == "id", metavar=param.metavar, shell_complete=complete_note_id)
    flag = param.flag or ""
    if kind == "switch":
        return click.option(f"{flag}/--no-{flag[2:]}", name, default=None, help=param.help)
    if kind == "flag":
        return click.option(flag, name, is_flag=True, help=param.help)
    if kind == "texts":
        return click.option(
            flag,
            name,
            multiple=True,
            metavar=param.metavar,
            shell_complete=complete_tag if name == "tags" else None,
            help=param.help,
        )
    if kind == "choice":
        return click.option(flag, name, type=click.Choice(param.choices), help=param.help)
    kind_type = integer(1 if kind == "count" else 0) if kind in ("count", "number") else None
    return click.option(flag, name, type=kind_type, metavar=param.metavar, help=param.help)
