"""The root command group: global options, the lazily imported command registry, and error handling."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .errors import AmemError, ConfigError, Interrupted, UsageError

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from .config import Config
    from .report import Reporter

#: Modules under amem.commands, each defining `command`. Imported only when run, so that
#: `amem read` never pays for watchdog or requests.
COMMANDS = (
    "read",
    "search",
    "list",
    "graph",
    "write",
    "edit",
    "delete",
    "move",
    "history",
    "restore",
    "sync",
    "index",
    "check",
    "info",
    "trust",
    "watch",
    "mcp",
    "token",
    "batch",
    "memory-tool",
)

#: `amem help [COMMAND]`, as git users type it: hidden (`--help` is the documented way), so the command
#: list, the man page and the README reference stay the registry's.
HELP = "help"


def _no_such_command(name: str) -> str:
    """Click's words for an unknown command, with the nearest one as a guess, as git and options do."""
    import difflib

    message = f"No such command {name!r}."
    guesses = difflib.get_close_matches(name, [*COMMANDS, HELP], n=1, cutoff=0.6)
    return f"{message} Did you mean {guesses[0]}?" if guesses else message


#: Commands that serve until stopped and print no result first: the warnings of their start go out
#: as plain lines when they start, not when they end. (`index --watch` releases them with its first line.)
SERVING = frozenset({"watch", "mcp"})


class AppContext:
    """Built once in the root group and handed to commands with pass_app; loads config on first use.
    `reporter` replaces the command line's (`amem batch` keeps each line's warnings for its result)."""

    def __init__(self, vault: str | None, config_file: str | None, reporter: Reporter | None = None) -> None:
        self.vault_flag = vault
        self.config_flag = config_file
        self._config: Config | None = None
        self._reporter = reporter

    @property
    def reporter(self) -> Reporter:
        """Where the library's warnings and progress go: stderr."""
        if self._reporter is None:
            from .report import StderrReporter, run_reporter

            self._reporter = run_reporter() or StderrReporter()
        return self._reporter

    @property
    def config(self) -> Config:
        return self.configure()

    def configure(self, flags: Mapping[str, object] | None = None) -> Config:
        """The config, loaded on first use; a command's own flags (by config key, as load_config takes
        them) go in then, checked with the rest."""
        if self._config is None:
            from .config import load_config, vault_problem

            config = load_config(config_file=self.config_flag, vault=self.vault_flag, flags=flags)
            for message in config.warnings:
                self.reporter.warn(message)
            problem = vault_problem(config)
            current = click.get_current_context(silent=True)
            if problem and (current is None or current.command.name != "info"):  # info reports it instead
                raise ConfigError(problem)
            if current is not None and current.command.name in SERVING:
                from .report import release_warnings

                release_warnings()  # it runs until stopped: what it met so far is said now
            self._config = config
        return self._config


#: Hands a command the AppContext the root group built: `@pass_app def command(app: AppContext, …)`.
pass_app = click.make_pass_decorator(AppContext)


class AmemGroup(click.Group):
    """Commands load lazily; every failure becomes `{"error": …}` on stderr and its exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS and cmd_name != HELP:
            return None
        module = importlib.import_module(f"amem.commands.{cmd_name.replace('-', '_')}")  # memory-tool
        command: click.Command = module.command
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            raise click.UsageError(_no_such_command(name), ctx)
        resolved = super().resolve_command(ctx, args)
        # A Ctrl-C that Python could not raise while amem's modules loaded ends the run here, before the
        # command does anything.
        from .interrupt import check

        check()
        return resolved

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        items = super().shell_complete(ctx, incomplete)
        if incomplete and HELP.startswith(incomplete):  # hidden from the list, offered to a typed prefix
            from click.shell_completion import CompletionItem

            items.append(CompletionItem(HELP, help="Print amem's help, or a command's."))
        return items

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # Turned into amem's own error here, inside Click, so that Click does not print a blank line
            # to stderr before the JSON error.
            raise Interrupted("interrupted (Ctrl-C)") from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if os.environ.get(complete_var or "_AMEM_COMPLETE"):
            # A shell's TAB (or a request for a script): Click must answer with amem's pinned scripts
            # and reply formats, not its own, which differ between Click releases (see completion.py).
            from .completion import register_shells

            register_shells()
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        _reserve_standard_fds()
        code = _run_translating_errors(
            lambda: super(AmemGroup, self).main(args, prog_name or "amem", complete_var, standalone_mode=False, **extra)
        )
        sys.exit(code)


@click.group(cls=AmemGroup, context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="amem", message="%(prog)s %(version)s")
@click.option("--vault", metavar="PATH", help="Vault folder (overrides AMEM_VAULT and vaultRoot).")
@click.option(
    "--config",
    "config_file",
    metavar="FILE",
    help="Read only this config file (overrides AMEM_CONFIG and the default files).",
)
@click.pass_context
def cli(ctx: click.Context, vault: str | None, config_file: str | None) -> None:
    """A memory for shell scripts, git hooks and AI coding agents, kept as plain Markdown.

    Every command prints JSON on stdout; errors are JSON on stderr with a documented exit code.
    With no command, amem prints this help on stdout and a usage error on stderr, and exits 2.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
        raise UsageError("no command given: run `amem COMMAND …`; `amem --help` lists the commands")
    ctx.obj = AppContext(vault, config_file)


def _reserve_standard_fds() -> None:
    """Open the null device on any of fds 0-2 that the caller closed (`amem … >&-`), so that no file amem
    opens later (a note, the index) can take that number and receive its output. Python has already
    set the matching sys.stdin/stdout/stderr to None, which is how emit() still tells it was closed."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)


def main() -> None:
    """Console entry point (the console script reaches it through `amem.__main__`, which installs this
    first, before amem's modules load)."""
    from .interrupt import install

    install()
    cli.main(prog_name="amem")


def _usage_message(exc: click.UsageError) -> str:
    """Click's message with the command's usage line, as one line: stderr holds only the JSON error."""
    message = exc.format_message()
    if exc.ctx is None:
        return message
    usage = " ".join(exc.ctx.get_usage().split()).removeprefix("Usage: ")
    return f"{message} (usage: {usage}; see '{exc.ctx.command_path} --help')"


def _click_outcome(exc: BaseException) -> tuple[int, AmemError | None] | None:
    """Click's own exceptions as a run's outcome (`outcome.Translate`); None for any other."""
    if isinstance(exc, click.exceptions.Exit):
        return int(exc.exit_code or 0), None
    if isinstance(exc, click.exceptions.Abort):
        return Interrupted.exit_code, Interrupted("interrupted (Ctrl-C)")
    if isinstance(exc, click.UsageError):
        return UsageError.exit_code, UsageError(_usage_message(exc))
    if isinstance(exc, click.ClickException):
        return exc.exit_code, UsageError(exc.format_message())
    return None


def _run_translating_errors(invoke: Callable[[], object]) -> int:
    from .outcome import run_translating_errors

    return run_translating_errors(invoke, _click_outcome)


def run_outcome(invoke: Callable[[], object]) -> tuple[int, dict[str, Any] | None]:
    """Run `invoke` as the root group runs a command, Click's exceptions included, printing no failure:
    its exit code and the error document it would print on stderr, or None."""
    from .outcome import run_outcome as outcome

    return outcome(invoke, _click_outcome)


def run(argv: list[str] | None = None) -> int:
    """Run amem in this process and return its exit code, errors printed as the console script does."""
    return _run_translating_errors(lambda: cli.main(argv, "amem", standalone_mode=False))
