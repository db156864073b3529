"""amem info: the identity envelope (which amem, config and vault) and a preflight for writing."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..errors import InfoMismatch
from ..output import emit
from . import Command


@click.command(
    "info",
    cls=Command,
    epilog="""
    amem info
    amem info --expect-cwd "$PWD" --expect-vault "$PWD/.amem/memory" | jq .preflight
    AMEM_PROFILE=ci amem info --expect-profile ci
    """,
)
@click.option("--expect-cwd", metavar="P", help="Absolute path the working directory must be.")
@click.option("--expect-vault", metavar="P", help="Absolute path the vault must be.")
@click.option("--expect-module-root", metavar="P", help="Folder the running amem package must lie in.")
@click.option("--expect-profile", metavar="NAME", help="Profile (AMEM_PROFILE) that must be in effect.")
@pass_app
def command(
    app: AppContext,
    expect_cwd: str | None,
    expect_vault: str | None,
    expect_module_root: str | None,
    expect_profile: str | None,
) -> None:
    """Print which amem, config and vault are in effect, and whether it is safe to write.

    Read-only: creates nothing. preflight.safeToWrite is true only when absolute --expect-cwd and
    --expect-vault match (after resolving symlinks) and nothing mismatches. Any mismatch exits non-zero,
    still printing the envelope on stdout.
    """
    from ..info import Expectations, build_info

    envelope = build_info(
        app.config,
        Expectations(cwd=expect_cwd, vault=expect_vault, module_root=expect_module_root, profile=expect_profile),
    )
    emit(envelope)
    if envelope["mismatches"]:
        fields = ", ".join(m["field"] for m in envelope["mismatches"])
        raise InfoMismatch(f"amem info: expectation not met: {fields}", mismatches=envelope["mismatches"])
