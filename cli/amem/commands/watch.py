"""`amem watch [DIR…]`: a long-running watcher that turns file writes and deletes into observations."""

from __future__ import annotations

import os
import sys

import click

from ..cli import AppContext, pass_app
from ..config import SINK_NAMES
from ..errors import UsageError
from . import Command, integer


@click.command(
    "watch",
    cls=Command,
    epilog="""
    amem watch ~/work/my-repo --sink vault
    amem watch . --sink stdout --ignore '[.]tmp$' | jq .data.files
    AGENTMEMORY_URL=http://localhost:3111 amem watch ~/work/my-repo --project my-repo
    """,
)
@click.argument("dirs", nargs=-1, metavar="[DIR]...")
@click.option(
    "--sink",
    "sinks",
    multiple=True,
    type=click.Choice(SINK_NAMES),
    help="Where observations go; repeat for several (default: server when a URL is configured, else vault).",
)
@click.option("--url", metavar="URL", help="agentmemory server (overrides AGENTMEMORY_URL and watch.url).")
@click.option("--secret", metavar="TOKEN", help="Bearer token for the server (overrides AGENTMEMORY_SECRET).")
@click.option(
    "--project",
    metavar="NAME",
    help="Project label for every root (default: each root's git repository or folder name).",
)
@click.option(
    "--session-id",
    metavar="ID",
    help="Session the observations belong to (default: a new fs-watcher-… id per process).",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="REGEX",
    help="Ignore paths (relative to their root, /-separated) matching REGEX; repeatable, added to "
    "AGENTMEMORY_FS_WATCH_IGNORE / watch.ignore.",
)
@click.option(
    "--allow-binary/--no-allow-binary",
    default=None,
    help="Preview files of any type, not only text files (overrides AGENTMEMORY_FS_WATCH_ALLOW_BINARY).",
)
@click.option(
    "--debounce-ms",
    type=integer(0),
    metavar="MS",
    help="Quiet time per path before a change is observed (default 500).",
)
@click.option("--no-gitignore", is_flag=True, help="Do not honour .gitignore files in the watched trees.")
@pass_app
def command(
    app: AppContext,
    dirs: tuple[str, ...],
    sinks: tuple[str, ...],
    url: str | None,
    secret: str | None,
    project: str | None,
    session_id: str | None,
    ignore: tuple[str, ...],
    allow_binary: bool | None,
    debounce_ms: int | None,
    no_gitignore: bool,
) -> None:
    """Watch DIRs and turn every file write or delete into a memory observation.

    Roots come from DIR arguments, else AGENTMEMORY_FS_WATCH_DIRS, else watch.dirs. Ignored: .git,
    node_modules, dist, build, .next, .turbo, coverage, .DS_Store, *.log, *.lock, .gitignore'd paths, the
    vault and amem's own state. Secrets in previews are redacted before anything leaves the process.
    Observations for the server are spooled on disk until it stores them (those it rejects for good, such
    as 401, are kept in the spool's failed/ folder and not retried). Logs go to stderr; with
    --sink stdout, observations go to stdout as NDJSON. Stop with Ctrl-C or SIGTERM: pending changes are
    flushed first.
    """
    from ..watcher.service import WatchOptions, run_watch

    ctx = click.get_current_context()
    flags = {
        "watch.dirs": dirs,
        "watch.sinks": sinks,
        "watch.url": url,
        "watch.secret": secret,
        "watch.project": project,
        "watch.sessionId": session_id,
        "watch.ignore": ignore,
        "watch.allowBinary": allow_binary,
        "watch.debounceMs": debounce_ms,
    }
    try:
        config = app.configure(flags)
        options = WatchOptions.from_config(config, use_gitignore=not no_gitignore)
    except UsageError as exc:
        # The usage line goes inside the JSON error: stderr holds that object and nothing else.
        usage = " ".join(ctx.get_usage().split()).removeprefix("Usage: ")
        exc.message = f"{exc.message} (usage: {usage}; see '{ctx.command_path} --help')"
        raise
    summary = run_watch(options, config=config, stdout=sys.stdout)
    if summary.stdout_closed:
        # Nothing more can be said on stdout; keep the interpreter's final flush from complaining about it.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
