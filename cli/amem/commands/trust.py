"""amem trust: trust this project's `.amem/config.yaml` as it is now, or forget that trust (SPEC §1)."""

from __future__ import annotations

import os

import click

from ..output import emit
from . import Command


@click.command(
    "trust",
    cls=Command,
    epilog="""
    amem trust
    amem trust --revoke
    """,
)
@click.option("--revoke", is_flag=True, help="Forget the trust instead: the file's outward keys are ignored again.")
def command(revoke: bool) -> None:
    """Trust this project's .amem/config.yaml, as direnv allow and mise trust do.

    Until then the file may shape the project's own vault (extensions, excludeDirs, maxLinkDepth, a
    vaultRoot inside the project, ...), but keys that reach outside the project or send data elsewhere
    (a vaultRoot, watch.dirs or semantic.model outside it, watch.url, watch.secret, git.autoCommit) are
    ignored with a warning. The trust is kept as the file's SHA-256 in the user's state folder: a changed
    file is untrusted again. A project with no config file may be trusted too (its default vault may then
    lead elsewhere through a symlink). `amem info` shows what is ignored (trust.ignored). Prints {file,
    exists, sha256, trusted}.
    """
    from ..paths import find_project_root
    from ..trust import digest_of, project_file, read_project_file, trust
    from ..trust import revoke as forget

    path = project_file(find_project_root(os.path.abspath(os.getcwd())))
    data = read_project_file(path)
    if revoke:
        forget(path)
    else:
        trust(path, data)
    digest = digest_of(data) if data is not None else None
    emit({"file": path, "exists": data is not None, "sha256": digest, "trusted": not revoke})
