"""amem write: create, append to or overwrite a note, atomically, with optimistic concurrency."""

from __future__ import annotations

import re

import click

from ..cli import AppContext, pass_app
from ..errors import UsageError
from ..output import emit_written
from . import Command, complete_note_id, content_of

#: A word that reads as an option name (`--foo`, `-x`, `--foo=bar`): CONTENT that looks so must follow `--`.
OPTION_LIKE = re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(=.*)?", re.S)


class ContentCommand(Command):
    """A command whose positional CONTENT may start with `-`, as Markdown often does: arguments that
    start with `-` but do not read as an option name are positionals, in their place among the others.
    Words that do read as one (`--foo`) still need `--` before them, as with any command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        valued = {name for p in self.params if isinstance(p, click.Option) and not p.is_flag for name in p.opts}
        options: list[str] = []
        positionals: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                positionals.extend(args[i + 1 :])
                break
            if arg in valued:
                options.extend(args[i : i + 2])
                i += 2
                continue
            if arg.startswith("-") and OPTION_LIKE.fullmatch(arg):
                options.append(arg)
            else:
                positionals.append(arg)
            i += 1
        return super().parse_args(ctx, [*options, "--", *positionals] if positionals else options)


@click.command(
    "write",
    cls=ContentCommand,
    epilog="""
    echo "Tokens expire after 24 hours." | amem write notes/auth
    amem write notes/auth --overwrite "Tokens live 24 h." --commit
    amem write notes/auth --base-version "$version" --require-existing "One more fact."
    """,
)
@click.argument("note_id", metavar="ID", shell_complete=complete_note_id)
@click.argument("content", required=False, metavar="[CONTENT|-]")
@click.option("--append", is_flag=True, help="Add CONTENT under a timestamp heading (the default).")
@click.option(
    "--overwrite", is_flag=True, help="Replace the body; frontmatter keys not given are kept, `updated` is stamped."
)
@click.option(
    "--base-version", metavar="V", help="Write only if the note's current version is V (from read or a previous write)."
)
@click.option("--require-existing", is_flag=True, help="Fail instead of creating a new note.")
@click.option(
    "--commit", is_flag=True, help="Commit exactly this note's change to git (also: git.autoCommit in config)."
)
@pass_app
def command(
    app: AppContext,
    note_id: str,
    content: str | None,
    append: bool,
    overwrite: bool,
    base_version: str | None,
    require_existing: bool,
    commit: bool,
) -> None:
    """Write CONTENT (or stdin) to note ID, creating it if needed.

    CONTENT may start with - (a Markdown list, --- frontmatter, -5 degrees); a single word that reads
    as an option (--foo) goes after --: amem write ID -- --foo.

    Prints {id, mode, bytes, version, created}, plus `commit` when a commit was made.
    """
    from ..ops.write import write_note

    if append and overwrite:
        raise UsageError("--append and --overwrite cannot be used together: choose one")
    emit_written(
        write_note(
            app.config,
            note_id,
            content_of(content),
            mode="overwrite" if overwrite else "append",
            base_version=base_version,
            require_existing=require_existing,
            commit=commit,
            reporter=app.reporter,
        )
    )
