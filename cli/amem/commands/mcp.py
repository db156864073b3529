"""amem mcp: the vault as Model Context Protocol tools on stdin/stdout, for AI agents."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from . import Command


@click.command(
    "mcp",
    cls=Command,
    epilog="""
    amem mcp
    AMEM_VAULT=~/notes amem mcp
    AMEM_VAULT=~/notes AMEM_PROFILE=work amem mcp
    """,
)
@pass_app
def command(app: AppContext) -> None:
    """Serve the vault to an MCP client (Claude Code, Cursor, Codex…) on stdin/stdout.

    Tools: memory_runtime_info, wiki_read, wiki_search, wiki_list, wiki_write, wiki_delete, wiki_move,
    wiki_history, wiki_restore. Each returns
    the JSON the matching command prints, as structured content; a failure is a tool error carrying the
    command's {"error": {code, message}}. The vault and config come from the same flags, environment and
    files as every other command. It keeps the vault's index fresh itself (as `amem index --watch` does), so
    no call checks every note. Logs go to stderr. Needs the mcp extra: pip install ".[mcp]" in an amem
    checkout, or pip install "amem[mcp]" from a package index.
    """
    from ..errors import UsageError

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
    serve(config)
