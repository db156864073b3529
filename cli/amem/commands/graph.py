"""amem graph: the notes and their links as a graph, in JSON or a format other tools draw."""

from __future__ import annotations

import click

from ..cli import AppContext, pass_app
from ..output import emit
from . import Command, complete_note_id, complete_tag, integer


@click.command(
    "graph",
    cls=Command,
    epilog="""
    amem graph | jq '.nodes | sort_by(-.in) | .[:5] | map(.id)'
    amem graph --from notes/auth --depth 2 --format mermaid
    amem graph --format html --output graph.html
    """,
)
@click.argument("prefix", required=False, metavar="[PREFIX]", shell_complete=complete_note_id)
@click.option(
    "--from",
    "start",
    metavar="ID",
    shell_complete=complete_note_id,
    help="Only the notes within --depth links of note ID (links followed either way); ID resolves as read's.",
)
@click.option(
    "--depth",
    type=integer(0),
    default=1,
    show_default=True,
    metavar="N",
    help="With --from: how many links away a note may be.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "dot", "graphml", "mermaid", "html"]),
    default="json",
    show_default=True,
    help="json; dot (Graphviz); graphml (Gephi, yEd); mermaid (GitHub, Obsidian; best under a few hundred "
    "links); html (one self-contained interactive page: pan, zoom, search, colour by folder or tag).",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="T",
    shell_complete=complete_tag,
    help="Only notes tagged T (as list takes it). Repeat: every tag must hold.",
)
@click.option("--missing", is_flag=True, help="Add each unresolved link target as a node with missing: true.")
@click.option(
    "--output",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write the graph to FILE (replaced atomically) and print {output, format, nodes, edges}.",
)
@pass_app
def command(
    app: AppContext,
    prefix: str | None,
    start: str | None,
    depth: int,
    fmt: str,
    tags: tuple[str, ...],
    missing: bool,
    output: str | None,
) -> None:
    """The notes (or those whose id starts with PREFIX) as nodes and their resolved links as edges.

    Prints {nodes: [{id, title, tags, in, out}], edges: [{from, to, kind, count}]}: `kind` is link or
    embed (![[x]]), `count` how many times the note writes it; `in` and `out` count the distinct notes of
    the graph linking here and linked to. Links to notes left out are not drawn. While another process
    builds the index, `incomplete` is true (and a warning says so). Other formats print the graph's text
    instead, or with --output write it to FILE.
    """
    from ..ops.graph import vault_graph

    graph = vault_graph(app.config, prefix, tags=tags, start=start, depth=depth, missing=missing, reporter=app.reporter)
    if fmt == "json" and output is None:
        emit(graph)
        return
    from ..graphview import print_text, render, save_text

    if output is None:
        print_text(render(graph, fmt))
        return
    save_text(output, render(graph, fmt))
    emit({"output": output, "format": fmt, "nodes": len(graph["nodes"]), "edges": len(graph["edges"])})
