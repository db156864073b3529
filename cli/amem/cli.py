"""The root command group: global options, the lazily imported command registry, and error handling."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from . import __version__
from .errors import AmemError, InternalError, UsageError
from .output import emit_error, warn

#: Modules under amem.commands, each defining `command`. Imported only when run, so that
#: `amem read` never pays for watchdog or requests.
COMMANDS = ("read", "search", "write", "history", "restore", "info", "watch", "index", "mcp")


class AppContext:
    """Built once in the root group and handed to commands with pass_obj; loads config on first use."""

    def __init__(self, vault: str | None, config_file: str | None) -> None:
        self.vault_flag = vault
        self.config_flag = config_file
        self._config: Any = None

    @property
    def config(self) -> Any:
        if self._config is None:
            from .config import load_config

            self._config = load_config(config_file=self.config_flag, vault=self.vault_flag)
            for message in self._config.warnings:
                warn(message)
        return self._config


class AmemGroup(click.Group):
    """Commands load lazily; every failure becomes `{"error": …}` on stderr and its exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"amem.commands.{cmd_name}")
        command: click.Command = module.command
        return command

    def main(
        self,
        args: Any = None,
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
        code = _run_translating_errors(
            lambda: super(AmemGroup, self).main(args, prog_name or "amem", complete_var, standalone_mode=False, **extra)
        )
        sys.exit(code)


@click.group(cls=AmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    """
    ctx.obj = AppContext(vault, config_file)


def main() -> None:
    """Console entry point."""
    cli.main(prog_name="amem")


def _run_translating_errors(invoke: Any) -> int:
    try:
        invoke()
    except AmemError as exc:
        emit_error(exc.to_json())
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.exceptions.Abort:
        emit_error(UsageError("aborted").to_json())
        return 130
    except click.UsageError as exc:
        if exc.ctx is not None:
            sys.stderr.write(f"{exc.ctx.get_usage()}\nTry '{exc.ctx.command_path} --help' for help.\n")
        emit_error(UsageError(exc.format_message()).to_json())
        return UsageError.exit_code
    except click.ClickException as exc:
        emit_error(UsageError(exc.format_message()).to_json())
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # A reader such as `head` went away; nothing more can be said on stdout.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:  # the last line of defence: JSON, never a traceback
        if os.environ.get("AMEM_DEBUG"):
            raise
        emit_error(InternalError(f"unexpected {type(exc).__name__}: {exc}").to_json())
        return InternalError.exit_code
    return 0


def run(argv: list[str] | None = None) -> int:
    """Run amem in this process and return its exit code, errors printed as the console script does."""
    return _run_translating_errors(lambda: cli.main(argv, "amem", standalone_mode=False))
