"""amem batch: many commands in one process, one JSON list of arguments a line in, one JSON result a line out."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from typing import Any

import click

from ..cli import AppContext, run_outcome
from ..errors import Interrupted, UsageError
from . import Command

#: Commands a line may not run, and why.
REFUSED = {
    "watch": "it runs until stopped",
    "mcp": "it runs until stopped",
    "batch": "a batch does not nest",
    "help": "it prints text, not JSON: run `amem help` on its own",
}

#: What a line says when its command would read CONTENT from stdin, which holds the batch's own lines.
NO_STDIN = "in a batch, CONTENT comes in the line: stdin holds the batch's lines, so `-` or no CONTENT is refused"


@click.command(
    "batch",
    cls=Command,
    epilog="""
    printf '%s\\n' '["write", "notes/x", "a fact"]' '["read", "notes/x"]' | amem batch
    jq -Rc '["write", "notes/facts", "--append", .]' facts.txt | amem batch | jq -c 'select(.exit != 0)'
    """,
)
@click.pass_context
def command(ctx: click.Context) -> None:
    """Run one command a line from stdin, in this process, and print one JSON result a line, in order.

    Each line is a JSON list of a command's arguments, as typed after `amem`: ["read", "notes/x",
    "--max-chars", "2000"]. Each result is {"exit": 0, "result": …}, plus "warnings": […] when the command
    warned, or {"exit": N, "error": {code, message, …}}: what the command itself prints and exits with.
    Each result is flushed as its line is done, so a program may write a line and read its answer.

    A line that is not a JSON list of strings, names no command, or asks for watch, mcp, index --watch,
    batch, help or --help is an error line (exit 2), never the end of the batch. --vault and --config go
    before `batch` and hold for every line; a line cannot set them. CONTENT must be in the line: `-`
    (stdin) is refused, as stdin holds the lines. Exits 0 once stdin ends, whatever the lines' exits; 130
    on Ctrl-C.
    """
    if sys.stdin is None:  # closed: no lines
        return
    root = ctx.find_root()
    app = ctx.find_object(AppContext)
    assert app is not None
    from ..index import kept

    kept.KEEP_INDEX = True  # the lines' reads and searches reuse one open index, as a keeper's do
    lines, out = sys.stdin.buffer, sys.stdout
    from ..interrupt import check
    from ..output import emit_text, one_line

    while True:
        check()
        raw = lines.readline()
        if not raw:
            return
        emit_text(one_line(_run_line(root, app, raw)), out)


def _run_line(root: click.Context, app: AppContext, raw: bytes) -> dict[str, Any]:
    """One line run as its command: {exit, result[, warnings]} or {exit, error}."""
    from ..report import CollectingReporter

    reporter = CollectingReporter()
    line_app = AppContext(app.vault_flag, app.config_flag, reporter)
    result, stray = io.StringIO(), io.StringIO()
    with redirect_stdout(result), redirect_stderr(stray), _stdin_refused():
        code, document = run_outcome(lambda: _invoke(root, line_app, raw))
    if code == Interrupted.exit_code:
        raise Interrupted("interrupted (Ctrl-C)")
    said = [text.removeprefix("amem: warning: ") for text in stray.getvalue().splitlines() if text.strip()]
    warnings = reporter.warnings + said
    if document is not None:
        error: dict[str, Any] = document["error"]
        if warnings:
            error["warnings"] = warnings + error.get("warnings", [])
        return {"exit": code, "error": error}
    text = result.getvalue()
    line: dict[str, Any] = {"exit": code, "result": json.loads(text) if text else None}
    if warnings:
        line["warnings"] = warnings
    return line


def _invoke(root: click.Context, app: AppContext, raw: bytes) -> None:
    """Run the line's command under the root context, as the root group runs a command line's."""
    args = _arguments(raw)
    group = root.command
    assert isinstance(group, click.Group)
    if args[0].startswith("-"):
        raise UsageError(f"a line starts with a command, not {args[0]}: --vault and --config go before `batch`")
    name, command, rest = group.resolve_command(root, args)
    assert name is not None and command is not None
    if name in REFUSED:
        raise UsageError(f"amem batch does not run {name}: {REFUSED[name]}")
    try:
        # No --help in a line: it prints text, not JSON.
        with command.make_context(name, rest, parent=root, obj=app, help_option_names=[]) as sub:
            if name == "index" and sub.params.get("watch"):
                raise UsageError("amem batch does not run index --watch: it runs until stopped")
            command.invoke(sub)
    except click.NoSuchOption as exc:
        if exc.option_name in ("--help", "-h"):
            raise UsageError(f"amem batch does not run --help: run `amem {name} --help` instead") from None
        raise


def _arguments(raw: bytes) -> list[str]:
    """The line's argument list, or a usage error saying what a line must be."""
    shape = 'each line is a JSON list of a command\'s arguments, such as ["read", "notes/x"]'
    try:
        args = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UsageError(f"a line that is not JSON: {shape}") from None
    if not isinstance(args, list) or not args or not all(isinstance(arg, str) for arg in args):
        raise UsageError(f"a line that is not a list of strings: {shape}")
    try:
        "".join(args).encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("a line whose strings are not Unicode text (a lone surrogate escape)") from None
    return args


class _RefusedStdin(io.TextIOBase):
    """sys.stdin while a line runs: a command that would read CONTENT there gets a usage error."""

    @property
    def buffer(self) -> _RefusedStdin:
        return self

    def isatty(self) -> bool:
        return False

    def read(self, size: int | None = -1) -> str:
        raise UsageError(NO_STDIN)


@contextmanager
def _stdin_refused() -> Iterator[None]:
    saved = sys.stdin
    sys.stdin = _RefusedStdin()
    try:
        yield
    finally:
        sys.stdin = saved
