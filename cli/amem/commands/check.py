"""amem check: the vault's health as one report (broken and ambiguous links, case twins, unreadable notes…)."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command, complete_note_id


@click.command(
    "check",
    cls=Command,
    epilog="""
    amem check notes/ --strict
    amem check --staged
    amem check | jq -r '.problems[] | select(.kind == "broken-link") | "\\(.id):\\(.line): \\(.target)"'
    """,
)
@click.argument("prefix", required=False, metavar="[PREFIX]", shell_complete=complete_note_id)
@click.option(
    "--staged",
    is_flag=True,
    help="Check the notes git has staged, as staged (not the working files), and only the links they add "
    "compared with HEAD; links resolve among the staged tree. For a pre-commit hook.",
)
@click.option("--strict", is_flag=True, help="Fail on warnings too, not only on errors.")
@pass_app
def command(app: AppContext, prefix: str | None, staged: bool, strict: bool) -> None:
    """Report what is wrong in the vault, or in the notes whose id starts with PREFIX.

    Prints {problems: [{kind, severity, id, line, message, …}], counts: {kind: n}, notes}. Errors:
    broken-link, case-twin, malformed-frontmatter, not-utf8, not-utf8-name (a file or folder name that is
    not UTF-8, which scans skip; its id shows such bytes as \\xNN), unreadable. Warnings: ambiguous-link,
    alias-collision, conflict-copy, stray-temporary. Info: orphan, oversized (check.maxNoteBytes).
    Exits 0 when no error was found (--strict: no warning either), else with the `problems` code, the
    report still on stdout.
    """
    from ..ops.check import check_vault, failing

    if staged:
        from ..ops.check_staged import check_staged

        result = check_staged(app.config, prefix, reporter=app.reporter)
    else:
        result = check_vault(app.config, prefix, reporter=app.reporter)
    emit(result)
    error = failing(result, strict)
    if error is not None:
        raise error
