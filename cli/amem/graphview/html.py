"""`amem graph --format html`: one self-contained page (no network: its Content-Security-Policy allows no
fetch at all) that lays the graph out with d3-force in a Web Worker (its simulation, link and centring forces,
with a Barnes–Hut many-body force on typed arrays, from a start that gives each folder its own disc) and draws
it on two canvases: the notes at once, the edges under them in batches, so that a page of 50,000 notes answers
while it draws.

The vault's text reaches the page only as JSON inside a `<script type="application/json">` element, with
`<`, `>` and `&` written as \\u escapes, so no title can end that element; the page puts text in the DOM only
through `textContent`, never as markup. The vendored d3 modules and their licences are in `vendor/`
(`refresh_vendor.sh` refreshes them at pinned versions, checking the registry's integrity hashes).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..results import GraphResult

#: The vendored scripts, in the order the page runs them (d3-force needs the other three).
VENDOR = ("d3-dispatch", "d3-quadtree", "d3-timer", "d3-force")


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _script_json(data: object) -> str:
    """JSON that is safe inside a <script> element: nothing in it can close the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        text = text.replace(char, escape)
    return text.replace("\u2029", "\\u2029")


def page_data(graph: GraphResult) -> dict[str, object]:
    """The graph as the page reads it, compact for 50k notes: nodes as [id, title, tags, missing], edges as
    [from index, to index, embed (0/1), count]."""
    index = {node["id"]: number for number, node in enumerate(graph["nodes"])}
    return {
        "nodes": [[n["id"], n["title"], n["tags"], 1 if n.get("missing") else 0] for n in graph["nodes"]],
        "edges": [
            [index[e["from"]], index[e["to"]], 1 if e["kind"] == "embed" else 0, e["count"]] for e in graph["edges"]
        ],
    }


def html_page(graph: GraphResult) -> str:
    vendor = "\n".join(_asset(f"vendor/{name}.min.js") for name in VENDOR)
    # the vendored code goes in a JSON string too: the worker is built from it as a Blob
    values = {"GRAPH_DATA": _script_json(page_data(graph)), "VENDOR": _script_json(vendor)}
    # one pass over the template: what a value holds is never read for markers
    return re.sub(r"/\*AMEM_([A-Z_]+)\*/", lambda match: values[match.group(1)], _asset("page.html"))
