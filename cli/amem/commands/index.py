"""amem index: bring the vault's index up to date now, or build it again from nothing."""

from __future__ import annotations

import time

import click

from ..output import emit


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Delete the index first and build it from nothing.")
@click.pass_obj
def command(app: object, rebuild: bool) -> None:
    """Bring the vault's index up to date now, reading every note that changed (progress on a terminal).

    Prints {notes, terms, bytes, built, refreshed, took}: the notes and search terms indexed, the index's
    size in bytes, whether it was built from nothing, how many notes were added, changed or removed, and
    the seconds it took. Every command keeps the index up to date by itself; this is for a vault you
    suspect, or to pay for a first build before it is needed.
    """
    from ..vault.index import VaultIndex

    started = time.monotonic()
    index = VaultIndex(app.config)  # type: ignore[attr-defined]
    try:
        if rebuild:
            index.clear()
        existed = index.path.exists()
        empty = index.stats()["notes"] == 0
        changes = index.refresh()
        refreshed = changes.added + changes.changed + changes.removed
        stats = index.stats()
    finally:
        index.close()
    took = round(time.monotonic() - started, 3)
    emit({**stats, "built": not existed or (empty and refreshed > 0), "refreshed": refreshed, "took": took})
