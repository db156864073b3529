"""amem sync: share the vault with other machines through its git repository's remote."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command


@click.command(
    "sync",
    cls=Command,
    epilog="""
    amem sync
    amem sync --remote origin --no-push
    amem sync --whole-repo
    """,
)
@click.option("--remote", metavar="NAME", help="The git remote to sync with (default: the branch's, else origin).")
@click.option("--no-push", is_flag=True, help="Commit, fetch and integrate, but do not push.")
@click.option(
    "--whole-repo",
    is_flag=True,
    help="Sync even when the vault is a folder of a larger repository: that repository's branch is merged and pushed.",
)
@pass_app
def command(app: AppContext, remote: str | None, no_push: bool, whole_repo: bool) -> None:
    """Commit the vault's changes, fetch, merge and push: {pulled, pushed, conflicts, commit, remote}.

    Only the vault's files are committed; other staged work is left alone. Notes appended to on two
    machines merge without conflict, sections in timestamp order. Two different overwrites keep both: the
    local version stays and the remote one is written beside it as NOTE.conflict-COMMIT.md, listed in
    `conflicts`; merge it by hand, delete the copy, and sync again.
    """
    from ..sync.sync import sync_vault

    outcome = sync_vault(app.config, remote=remote, push=not no_push, whole_repo=whole_repo, reporter=app.reporter)
    emit(outcome.to_json())
