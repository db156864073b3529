"""amem search: ranked keyword search over the vault, or an exact title check."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command, integer, keeper_answered


@click.command(
    "search",
    cls=Command,
    epilog="""
    amem search "auth token" --folder notes/
    amem search --semantic "how long do tokens stay valid" --limit 5 | jq -r '.hits[].id'
    amem search --exact-title "Auth tokens" --tag auth
    """,
)
@click.argument("query", nargs=-1)
@click.option("--limit", type=integer(1), metavar="N", help="Return at most N hits (default: maxSearchResults, 20).")
@click.option(
    "--exact-title",
    metavar="TITLE",
    help="List every note whose title equals TITLE, ignoring case, Unicode form and "
    "space/-/_ differences; no ranking. QUERY is then optional.",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="T",
    help="Only notes tagged T (frontmatter tags or #T in the body; with or without #, any case; "
    "nested tags count: project matches project/amem). Repeat: every tag must hold.",
)
@click.option("--folder", metavar="PREFIX", help="Only notes under this folder (notes or notes/).")
@click.option(
    "--semantic/--no-semantic",
    default=None,
    help="Fuse the keyword ranking with the offline semantic ranking (needs the semantic extra); "
    "default: the config's semantic.",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Add to each hit its keyword score and rank and its semantic similarity and rank, and to the result "
    "the fusion weight chosen for this query and why.",
)
@pass_app
def command(
    app: AppContext,
    query: tuple[str, ...],
    limit: int | None,
    exact_title: str | None,
    tags: tuple[str, ...],
    folder: str | None,
    semantic: bool | None,
    explain: bool,
) -> None:
    """Search the vault for QUERY: words are OR-matched, prefixes match longer words, inflections meet
    (files, file), stop words are ignored beside other words, and Chinese, Japanese and Korean need no
    spaces; hits are ranked by BM25 with title, phrase and link boosts, fused with an offline semantic
    ranking when --semantic (or the config's semantic) asks for it. Filters count before `total`.

    Prints {hits: [{id, title, score, backlinks, expired, snippet}], total, truncated, fused, semantic};
    with --explain each hit also has `explain` and the result `fusion`.
    """
    from ..errors import UsageError

    text = " ".join(query) if query else None
    if text is None and exact_title is None:
        raise UsageError("search needs a QUERY or --exact-title TITLE")
    config = app.configure({"semantic": semantic})
    asked = {
        "query": text,
        "limit": limit,
        "exactTitle": exact_title,
        "tags": list(tags),
        "folder": folder,
        "explain": explain,
    }
    if keeper_answered(app, config, "search", asked):
        return
    from ..index.search import search

    emit(
        search(
            config,
            text,
            limit=limit,
            exact_title=exact_title,
            tags=tags,
            folder=folder,
            explain=explain,
            reporter=app.reporter,
        )
    )
