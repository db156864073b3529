"""amem search: ranked keyword search over the vault, or an exact title check."""

from __future__ import annotations

from typing import Any

import click

from ..cli import AppContext, pass_app
from . import Command, answer_request, declared


@click.command(
    "search",
    cls=Command,
    epilog="""
    amem search "auth token" --folder notes/
    amem search --semantic "how long do tokens stay valid" --also "token expiry" --limit 5 | jq -r '.hits[].id'
    amem search --exact-title "Auth tokens" --tag auth
    """,
)
@declared("search")
@pass_app
def command(app: AppContext, /, **given: Any) -> None:
    """Search the vault for QUERY: words are OR-matched, prefixes match longer words, inflections meet
    (files, file), stop words are ignored beside other words, and Chinese, Japanese and Korean need no
    spaces; hits are ranked by BM25 with title, phrase and link boosts, fused with an offline semantic
    ranking when --semantic (or the config's semantic) asks for it. Filters count before `total`.

    With --also, each query is ranked and the rankings fused by reciprocal rank, QUERY weighing double;
    `total` counts the notes any of them matches.

    Prints {hits: [{id, title, score, backlinks, backlinkCount, expired, snippet, line}], total, truncated,
    fused, semantic}: `backlinks` names the first 5 linking notes by id, `backlinkCount` counts them all, and
    `line` is the file's line (from 1, frontmatter included) the snippet's match is on. With --explain each
    hit also has `explain` and the result `fusion`.
    """
    answer_request(app, "search", given)
