"""`amem write` before Click loads: the console script runs a plain write command line here, by the
functions the command calls, because Click's import is most of what a write costs beyond Python's start.

A write cannot be tried and then run again through Click, as `read` is (`index.keeper_fast`): it reads
stdin and changes the note. So this path decides from the command line alone, before it does anything,
whether it runs the command, and from then on it owns the outcome: it reports every failure itself, as
the command does, through the same `outcome.run_translating_errors` and the same functions
(`load_config`, `vault_problem`, `content_of`, `write_note`, `emit_written`). Only Click's own usage errors
are Click's to say, so anything that could be one goes to Click untouched:

- a plain command line (`parse`): `amem [--vault PATH] write ID [CONTENT|-]` with write's own long
  options, each once, `--base-version` as `--base-version V` or `--base-version=V` with a value that does
  not start with `-`; arguments as the command takes them (`ContentCommand`: one that starts with `-` is
  content unless it reads as an option name); `--` ends the options. No help, no completion, no `--config`.
- no AMEM_NO_KEEPER (which sends read, list and write through Click too) and all three standard streams
  open.

tests/test_write_fast.py holds both paths to the same output and the same notes.
"""

from __future__ import annotations

import os
import re
import sys

#: An argument that reads as an option name (`-x`, `--base-version`, `--base-version=V`); any other
#: argument starting with `-` (`- item`, `---\ntags: …`, `-5 degrees`) is content.
OPTION_LIKE = re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(=.*)?", re.S)
#: write's flags and its one option that takes a value.
FLAGS = ("--append", "--overwrite", "--require-existing", "--commit")
VALUED = ("--base-version",)


class Line:
    """A plain write command line: --vault's value, the note's id, CONTENT (None: stdin) and the options."""

    __slots__ = ("content", "note_id", "options", "vault")

    def __init__(self, vault: str | None, note_id: str, content: str | None, options: dict[str, object]) -> None:
        self.vault = vault
        self.note_id = note_id
        self.content = content
        self.options = options


def answer(argv: list[str]) -> int | None:
    """Run `amem ARGV` here when it is a plain write command line, and return its exit code; None, having
    done nothing, when it must run through Click."""
    from .index.keeper_ask import no_keeper

    if os.environ.get("_AMEM_COMPLETE") or no_keeper():
        return None
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        return None  # a closed standard stream: Click's path reserves it first
    line = parse(argv)
    if line is None:
        return None
    from .outcome import run_translating_errors

    return run_translating_errors(lambda: _write(line))


def parse(argv: list[str]) -> Line | None:
    """The command line as the write command parses it, when it is plain (see the module); None otherwise."""
    from .index.keeper_fast import root_options

    root = root_options(argv)
    if root is None:
        return None
    vault, i = root
    if argv[i : i + 1] != ["write"]:
        return None
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
        if token in VALUED:
            if j >= len(tokens):
                return None
            eq, value = "=", tokens[j]
            j += 1
        elif not (token[:1] == "-" and OPTION_LIKE.fullmatch(token)):
            arguments.append(token)
            continue
        if name in options:
            return None
        if name in VALUED and eq and value and value[:1] != "-":
            options[name] = value
        elif name in FLAGS and not eq:
            options[name] = True
        else:
            return None
    if not 1 <= len(arguments) <= 2:
        return None
    return Line(vault, arguments[0], arguments[1] if len(arguments) == 2 else None, options)


def _write(line: Line) -> None:
    """The write command's body, as it runs under Click: the modes, the config, the content, the write,
    the result, in the command's order."""
    from . import interrupt
    from .config import load_config
    from .errors import ConfigError
    from .notes.ids import vault_problem
    from .output import emit_written
    from .report import StderrReporter, run_reporter

    interrupt.check()  # before the command does anything, as Click's path checks
    options = line.options
    check_modes(bool(options.get("--append")), bool(options.get("--overwrite")))
    reporter = run_reporter() or StderrReporter()
    config = load_config(vault=line.vault)
    for message in config.warnings:
        reporter.warn(message)
    problem = vault_problem(config)
    if problem:
        raise ConfigError(problem)
    from .ops.write import write_note

    base_version = options.get("--base-version")
    emit_written(
        write_note(
            config,
            line.note_id,
            content_of(line.content),
            mode="overwrite" if options.get("--overwrite") else "append",
            base_version=base_version if isinstance(base_version, str) else None,
            require_existing=bool(options.get("--require-existing")),
            commit=bool(options.get("--commit")),
            reporter=reporter,
        )
    )


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
