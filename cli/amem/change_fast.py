"""`amem write` and `amem sync`, the commands that change the vault, before Click loads: the console script
runs a plain command line of either here, by the functions the command calls, because Click's import is
most of what such a command costs beyond Python's start (an idle sync, a one-line append).

Neither can be tried and then run again through Click, as `read` is (`index.keeper_fast`): a write reads
stdin and changes the note, a sync commits, merges and pushes. So this path decides from the command line
alone, before it does anything, whether it runs the command, and from then on it owns the outcome: it
reports every failure itself, as the command does, through the same `outcome.run_translating_errors` and
the same functions (`load_config`, `vault_problem`, then `content_of`, `write_note`, `emit_written`, or
`sync_vault` and `emit`). Only Click's own usage errors are Click's to say, so anything that could be one
goes to Click untouched:

- a plain command line (`parse`): `amem [--vault PATH] write ID [CONTENT|-]` or `amem [--vault PATH]
  sync`, with the command's own long options (`COMMANDS`), each once, an option that takes a value as
  `--name V` or `--name=V` with a value that does not start with `-`; write's arguments as it takes them
  (`ContentCommand`: one that starts with `-` is content unless it reads as an option name); `--` ends
  the options. No help, no completion, no `--config`.
- no AMEM_NO_KEEPER (which sends read, list, write and sync through Click too) and all three standard
  streams open.

tests/test_write_fast.py and tests/test_sync_fast.py hold both paths to the same output, the same notes
and the same commits.
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .config import Config
    from .report import Reporter

#: An argument that reads as an option name (`-x`, `--base-version`, `--base-version=V`); any other
#: argument starting with `-` (`- item`, `---\ntags: …`, `-5 degrees`) is content.
OPTION_LIKE = re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(=.*)?", re.S)
#: write's flags and its one option that takes a value.
FLAGS = ("--append", "--overwrite", "--require-existing", "--commit")
VALUED = ("--base-version",)
#: Each command run here: its flags, its options that take a value, the fewest and the most arguments.
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], int, int]] = {
    "write": (FLAGS, VALUED, 1, 2),
    "sync": (("--no-push", "--whole-repo"), ("--remote",), 0, 0),
}


class Line:
    """A plain command line: --vault's value, the command, its arguments and its options."""

    __slots__ = ("arguments", "command", "options", "vault")

    def __init__(self, vault: str | None, command: str, arguments: list[str], options: dict[str, object]) -> None:
        self.vault = vault
        self.command = command
        self.arguments = arguments
        self.options = options


def answer(argv: list[str]) -> int | None:
    """Run `amem ARGV` here when it is a plain write or sync command line, and return its exit code; None,
    having done nothing, when it must run through Click."""
    from .index.keeper_ask import no_keeper

    if os.environ.get("_AMEM_COMPLETE") or no_keeper():
        return None
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        return None  # a closed standard stream: Click's path reserves it first
    line = parse(argv)
    if line is None:
        return None
    from .outcome import run_translating_errors

    return run_translating_errors(lambda: (_write if line.command == "write" else _sync)(line))


def parse(argv: list[str]) -> Line | None:
    """The command line as the command parses it, when it is plain (see the module); None otherwise."""
    from .index.keeper_fast import root_options

    root = root_options(argv)
    if root is None:
        return None
    vault, i = root
    if i >= len(argv) or argv[i] not in COMMANDS:
        return None
    command = argv[i]
    flags, valued, least, most = COMMANDS[command]
    options: dict[str, object] = {}
    arguments: list[str] = []
    tokens = argv[i + 1 :]
    j = 0
    while j < len(tokens):
        token = tokens[j]
        j += 1
        if token == "--":
            arguments.extend(tokens[j:])
            break
        name, eq, value = token.partition("=")
        if token in valued:
            if j >= len(tokens):
                return None
            eq, value = "=", tokens[j]
            j += 1
        elif not (token[:1] == "-" and OPTION_LIKE.fullmatch(token)):
            arguments.append(token)
            continue
        if name in options:
            return None
        if name in valued and eq and value and value[:1] != "-":
            options[name] = value
        elif name in flags and not eq:
            options[name] = True
        else:
            return None
    if not least <= len(arguments) <= most:
        return None
    return Line(vault, command, arguments, options)


def _configured(line: Line) -> tuple[Config, Reporter]:
    """The config and the reporter, as the root group gives them to a command: the config's warnings are
    said, a vault that cannot be one fails."""
    from .config import load_config, vault_problem
    from .errors import ConfigError
    from .report import StderrReporter, run_reporter

    reporter = run_reporter() or StderrReporter()
    config = load_config(vault=line.vault)
    for message in config.warnings:
        reporter.warn(message)
    problem = vault_problem(config)
    if problem:
        raise ConfigError(problem)
    return config, reporter


def _write(line: Line) -> None:
    """The write command's body, as it runs under Click: the modes, the config, the content, the write,
    the result, in the command's order."""
    from . import interrupt
    from .output import emit_written

    interrupt.check()  # before the command does anything, as Click's path checks
    options = line.options
    check_modes(bool(options.get("--append")), bool(options.get("--overwrite")))
    config, reporter = _configured(line)
    from .ops.write import write_note

    base_version = options.get("--base-version")
    emit_written(
        write_note(
            config,
            line.arguments[0],
            content_of(line.arguments[1] if len(line.arguments) == 2 else None),
            mode="overwrite" if options.get("--overwrite") else "append",
            base_version=base_version if isinstance(base_version, str) else None,
            require_existing=bool(options.get("--require-existing")),
            commit=bool(options.get("--commit")),
            reporter=reporter,
        )
    )


def _sync(line: Line) -> None:
    """The sync command's body, as it runs under Click."""
    from . import interrupt

    interrupt.check()  # before the command does anything, as Click's path checks
    config, reporter = _configured(line)
    from .ops.sync import sync_vault
    from .output import emit

    remote = line.options.get("--remote")
    outcome = sync_vault(
        config,
        remote=remote if isinstance(remote, str) else None,
        push=not line.options.get("--no-push"),
        whole_repo=bool(line.options.get("--whole-repo")),
        reporter=reporter,
    )
    emit(outcome.to_json())


def check_modes(append: bool, overwrite: bool) -> None:
    """The usage error of both --append and --overwrite."""
    if append and overwrite:
        from .errors import UsageError

        raise UsageError("--append and --overwrite cannot be used together: choose one")


def content_of(argument: str | None) -> str:
    """CONTENT as the command takes it: the argument, or stdin when it is `-` or not given (a terminal on
    stdin with no argument is a usage error, not a wait)."""
    if argument is not None and argument != "-":
        return argument
    from .errors import UsageError

    if sys.stdin is None or (argument is None and sys.stdin.isatty()):
        raise UsageError("no content: give CONTENT as an argument, or pipe it on stdin (or pass -)")
    from .interrupt import read_stdin

    try:
        return read_stdin().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the content on stdin is not UTF-8 text") from None
