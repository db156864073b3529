"""amem mcp: the vault as Model Context Protocol tools on stdin/stdout, for AI agents."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from . import Command, integer


@click.command(
    "mcp",
    cls=Command,
    epilog="""
    amem mcp
    AMEM_VAULT=~/notes amem mcp
    amem mcp --http 0.0.0.0:8181 --allow-host amem.example.com --commit
    """,
)
@click.option(
    "--http",
    "bind",
    is_flag=False,
    flag_value="127.0.0.1:8181",
    default=None,
    metavar="[HOST:]PORT",
    help="Serve over streamable HTTP at /mcp instead of stdio (alone: 127.0.0.1:8181); needs a token "
    "(amem token add) unless --no-auth on loopback.",
)
@click.option("--no-auth", is_flag=True, help="With --http on loopback only: no token needed (your own clients).")
@click.option(
    "--allow-host", "hosts", multiple=True, metavar="NAME", help="With --http: another name the Host header may carry."
)
@click.option(
    "--allow-origin",
    "origins",
    multiple=True,
    metavar="URL",
    help="With --http: a browser origin (https://host[:port]) requests may come from.",
)
@click.option(
    "--max-connections",
    type=integer(1),
    default=100,
    show_default=True,
    help="With --http: the most connections open at once; a request beyond them is answered 503.",
)
@click.option(
    "--stall-timeout",
    type=click.FloatRange(0.1, 3600),
    default=30.0,
    show_default=True,
    help="With --http: seconds before a client that stops sending its request is dropped.",
)
@click.option("--commit", is_flag=True, help="With --http: commit every change, its author the token's name.")
@pass_app
def command(
    app: AppContext,
    bind: str | None,
    no_auth: bool,
    hosts: tuple[str, ...],
    origins: tuple[str, ...],
    max_connections: int,
    stall_timeout: float,
    commit: bool,
) -> None:
    """Serve the vault to an MCP client (Claude Code, Cursor, Codex…) on stdin/stdout.

    Tools: memory_runtime_info, wiki_read, wiki_search, wiki_list, wiki_write, wiki_edit, wiki_delete,
    wiki_move, wiki_history, wiki_restore, wiki_check. Each returns
    the JSON the matching command prints, as structured content; a failure is a tool error carrying the
    command's {"error": {code, message}}. The vault and config come from the same flags, environment and
    files as every other command. It keeps the vault's index fresh itself (as `amem index --watch` does), so
    no call checks every note. Logs go to stderr. Needs the mcp extra: pip install ".[mcp]" in an amem
    checkout, or pip install "amem[mcp]" from a package index.

    With --http, one process serves many clients over MCP's streamable HTTP transport at /mcp (and GET
    /health). Every request needs Authorization: Bearer TOKEN (amem token add); a read-only token calls only
    the tools that only read. A foreign Origin is refused (403), a Host other than the bound address or an
    --allow-host name too (421), a body over 16 MiB (413). Each change is appended to the audit log in the
    state folder. Prints {url, auth, tokens} once listening. TLS belongs to a reverse proxy in front.
    """
    from ..errors import UsageError

    if bind is None and (no_auth or hosts or origins or commit):
        raise UsageError("--no-auth, --allow-host, --allow-origin and --commit go with --http")

    config = app.config
    try:
        from ..mcp_server import serve
    except ImportError as exc:
        if exc.name is None or not (exc.name == "mcp" or exc.name.startswith(("mcp.", "mcp_types", "pydantic"))):
            raise
        raise UsageError(
            'amem mcp needs the MCP SDK, the mcp extra: pip install ".[mcp]" in an amem checkout, '
            'or pip install "amem[mcp]" from a package index'
        ) from None
    if bind is None:
        serve(config)
        return
    from ..mcp_http import HttpOptions, parse_bind, serve_http

    host, port = parse_bind(bind)
    options = HttpOptions(host, port, no_auth, hosts, origins, max_connections, stall_timeout, commit)
    serve_http(config, options)
