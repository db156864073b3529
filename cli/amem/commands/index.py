"""amem index: bring the vault's index up to date now, or build it again, or keep it fresh (--watch)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command

if TYPE_CHECKING:
    from ..keeper.keeper import Keeper


@click.command(
    "index",
    cls=Command,
    epilog="""
    amem index
    amem index --rebuild | jq .took
    AMEM_VAULT=~/notes amem index --watch
    """,
)
@click.option("--rebuild", is_flag=True, help="Delete the index first and build it from nothing.")
@click.option(
    "--watch",
    is_flag=True,
    help="Then stay running and keep the index fresh from file-system events (the index keeper).",
)
@pass_app
def command(app: AppContext, rebuild: bool, watch: bool) -> None:
    """Bring the vault's index up to date now, reading every note that changed (progress on a terminal).

    Prints {notes, terms, bytes, built, refreshed, took}: the notes and search terms indexed, the index's
    size in bytes, whether it was built from nothing, how many notes were added, changed or removed, and
    the seconds it took. With semantic.model minilm (or a model folder) it also embeds the notes whose
    vectors are missing or stale, and `embedded` says how many; a killed run goes on where it stopped.
    Every command keeps the index up to date by itself; this is for a vault you suspect, or to pay for a
    first build before it is needed.

    With --watch, amem then keeps the index fresh until stopped (Ctrl-C or SIGTERM), and every other amem
    process on the vault asks it instead of checking every note: searches stay fast however large the
    vault. One keeper per vault; a second one exits with an error. If the keeper dies, commands check the
    notes themselves again.
    """
    from ..index.index import VaultIndex

    config = app.config
    started = time.monotonic()
    keeper = None
    reporter = app.reporter
    if watch:
        from ..keeper.keeper import Keeper
        from ..ops.answers import answer

        keeper = Keeper(config, app.reporter, answer)
        reporter = keeper.reporter  # what a keeper says names no host path
        keeper.claim()  # a second keeper fails before it does anything
    index = VaultIndex(config, reporter)
    try:
        if rebuild:
            index.clear()
        existed = index.path.exists()
        empty = index.stats()["notes"] == 0
        changes = index.refresh()
        from ..index.versions import remove_unused

        remove_unused(os.path.dirname(index.file))  # another version's files, closed since this one's was made
        for message in changes.warnings:
            reporter.warn(message)
        refreshed = changes.added + changes.changed + changes.removed
        embedded = _embed(index, reporter) if keeper is None else None
        stats = index.stats()
    finally:
        index.close()
    took = round(time.monotonic() - started, 3)
    result = {**stats, "built": not existed or (empty and refreshed > 0), "refreshed": refreshed, "took": took}
    if embedded is not None:
        result["embedded"] = embedded
    if keeper is None:
        emit(result)
    else:
        _keep(keeper, result)


def _embed(index: Any, reporter: Any) -> int | None:
    """With a semantic model embedded in the background (`semantic.model` minilm or a folder): embed the
    notes whose vectors are missing or stale now (progress on a terminal), and say how many."""
    from ..semantic.embedding import background, index_now

    return index_now(index, reporter) if background(index.config) else None


def _keep(keeper: Keeper, result: dict[str, Any]) -> None:
    """Start the keeper, print `result` once it is keeping the index (a line to wait for), run until told."""
    import signal
    import threading

    from ..output import info

    stop = threading.Event()
    # The handler runs in this thread, which may be inside stop.wait() holding the Event's lock: setting the
    # Event there would wait for that lock for ever. So it only records the signal, looked at every 0.2 s.
    signalled: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        signalled.append(signum)

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        keeper.start()
        emit(result)
        info("keeping the vault's index fresh; stop with Ctrl-C or SIGTERM")
        while not signalled:
            stop.wait(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        keeper.stop()
        signal.signal(signal.SIGTERM, previous)
