"""amem search: ranked keyword search over the vault, or an exact title check."""

from __future__ import annotations

import click

from ..output import emit


@click.command("search")
@click.argument("query", nargs=-1)
@click.option(
    "--limit", type=click.IntRange(min=1), metavar="N", help="Return at most N hits (default: maxSearchResults, 20)."
)
@click.option(
    "--exact-title",
    metavar="TITLE",
    help="List every note whose title equals TITLE, ignoring case, Unicode form and "
    "space/-/_ differences; no ranking. QUERY is then optional.",
)
@click.option(
    "--semantic/--no-semantic",
    default=None,
    help="Fuse the keyword ranking with the offline semantic ranker (needs the semantic extra); "
    "default: the config's semantic.",
)
@click.pass_obj
def command(
    app: object, query: tuple[str, ...], limit: int | None, exact_title: str | None, semantic: bool | None
) -> None:
    """Search the vault for QUERY: words are OR-matched, prefixes match longer words, Chinese, Japanese
    and Korean need no spaces; hits are ranked by BM25 with title, phrase and link boosts, fused with an
    offline semantic ranking when --semantic (or the config's semantic) asks for it.

    Prints {hits: [{id, title, score, backlinks, expired, snippet}], total, truncated, fused, semantic}.
    """
    from ..errors import UsageError
    from ..report import StderrReporter
    from ..vault.search import search

    text = " ".join(query) if query else None
    if text is None and exact_title is None:
        raise UsageError("search needs a QUERY or --exact-title TITLE")
    config = app.config  # type: ignore[attr-defined]
    emit(search(config, text, limit=limit, exact_title=exact_title, semantic=semantic, reporter=StderrReporter()))
