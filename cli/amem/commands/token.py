"""amem token: the bearer tokens `amem mcp --http` admits, kept as SHA-256 digests in the state folder."""

from __future__ import annotations

import click

from ..output import emit
from . import Command


@click.command(
    "token",
    cls=Command,
    epilog="""
    amem token add alice
    amem token add dashboard --read-only
    amem token revoke alice
    """,
)
@click.argument("action", type=click.Choice(["add", "list", "revoke"]))
@click.argument("name", required=False)
@click.option("--read-only", is_flag=True, help="With add: the token may call only the tools that only read.")
def command(action: str, name: str | None, read_only: bool) -> None:
    """Make, list or revoke the tokens that amem mcp --http admits.

    add NAME prints {name, scope, created, token}: the token is shown this once and kept nowhere; only
    its SHA-256 is stored, with its name, scope (read-write, or read-only) and creation time, in
    $XDG_STATE_HOME/amem/tokens.json (mode 0600), never in the vault. A client sends it as
    Authorization: Bearer TOKEN; the name is what the audit log and the commits made over HTTP show.
    list prints {tokens: [{name, scope, created}]}; revoke NAME removes one, effective on a running
    server's next request.
    """
    from ..errors import UsageError
    from ..tokens import add_token, load_tokens, revoke_token

    if action == "list":
        if name is not None or read_only:
            raise UsageError("amem token list takes no NAME and no --read-only")
        emit({"tokens": [record.public() for record in load_tokens()]})
        return
    if name is None:
        raise UsageError(f"amem token {action} needs a NAME")
    if action == "add":
        secret, record = add_token(name, read_only=read_only)
        emit({**record.public(), "token": secret})
        return
    if read_only:
        raise UsageError("--read-only goes with add")
    emit({**revoke_token(name).public(), "revoked": True})
