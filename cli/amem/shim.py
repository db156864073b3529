"""The one piece of amem before Click: with a live keeper, `amem search`, `read` and `list` are asked of it
before Click and the commands load, so such a command costs Python's start-up, the config and one round
trip (`keeperproto.ask` says the protocol). It reads the command line by the operations' declarations
(`opspec`), loads the config with the one loader, sends the request the command itself would send and
prints the answer as the command prints it. Anything it cannot settle (an unusual command line, a config
error, no keeper, a keeper that does not answer) it leaves to Click, having printed nothing; the command
then does not ask the keeper again (`keeper_ask.asked`)."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def answer(argv: list[str]) -> int | None:
    """The exit code of `amem ARGV` answered by a live keeper; None when Click must run it."""
    import sys

    if os.environ.get("_AMEM_COMPLETE") or sys.stdin is None or sys.stdout is None or sys.stderr is None:
        return None  # completion, or a closed standard stream (Click's path reserves it first)
    line = _read(argv)
    if line is None:
        return None
    vault, op, given = line
    from . import interrupt
    from .config import load_config, vault_problem
    from .errors import AmemError
    from .keeperproto import ask as keeper_ask
    from .opspec import missing, request

    if keeper_ask.no_keeper():
        return None
    args, flags = request(op, given)
    if missing(op, args) is not None:
        return None  # the command says what is missing
    try:
        config = load_config(vault=vault, flags=flags)
    except AmemError:
        return None  # the command says what is wrong with it
    if vault_problem(config) is not None:
        return None
    interrupt.check()  # a Ctrl-C met while amem loaded ends the run before it asks
    got = keeper_ask.ask(config, op, args)
    keeper_ask.asked = True
    if got is None:
        return None
    return _print(got.text, [*config.warnings, *got.warnings])


def _read(argv: list[str]) -> tuple[str | None, str, dict[str, Any]] | None:
    """--vault's value, the operation and its values, when the command line is plain: `amem [--vault PATH]
    search|read|list …` as `opspec.read_line` reads it; None otherwise."""
    from .opspec import OPS, read_line

    vault: str | None = None
    i = 0
    while i < len(argv) and argv[i][:1] == "-":
        name, eq, value = argv[i].partition("=")
        if name != "--vault" or vault is not None:
            return None
        if not eq:
            i += 1
            value = argv[i] if i < len(argv) else ""
        if not value or value[:1] == "-":
            return None
        vault, i = value, i + 1
    if i >= len(argv) or argv[i] not in OPS:
        return None
    given = read_line(argv[i], argv[i + 1 :])
    return None if given is None else (vault, argv[i], given)


def _print(text: str, warnings: list[str]) -> int:
    """The answer printed as the command prints it (its warnings after it), with the command's errors."""
    from .outcome import run_translating_errors
    from .output import emit_one_line
    from .report import run_reporter

    def show() -> None:
        reporter = run_reporter()
        assert reporter is not None  # run_translating_errors starts the run
        for message in warnings:
            reporter.warn(message)
        emit_one_line(text)

    return run_translating_errors(show)
