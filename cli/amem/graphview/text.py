"""The graph as text other tools read: DOT (Graphviz), GraphML (Gephi, yEd) and Mermaid (GitHub, Obsidian).
Every title and id is escaped for its format, whatever characters it holds."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..results import GraphNode, GraphResult

#: Characters XML 1.0 cannot hold at all, even escaped: they are dropped from GraphML values.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: What a GraphML node id escapes: those characters, and the backslash that starts an escape.
_ESCAPED_IN_ID = re.compile("[\\\\\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _folder(node_id: str) -> str:
    return node_id[: node_id.rfind("/") + 1]


# --- DOT -------------------------------------------------------------------------------------------------


def _dot_string(text: str) -> str:
    """A DOT quoted string: backslash and quote escaped, line breaks as DOT's \\n."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"\r\n|\r|\n", r"\\n", escaped) + '"'


def dot(graph: GraphResult) -> str:
    lines = ["digraph amem {", "  node [shape=box, style=rounded];"]
    for node in graph["nodes"]:
        attrs = [f"label={_dot_string(node['title'])}", f"tooltip={_dot_string(node['id'])}"]
        if node.get("missing"):
            attrs.append('style="rounded,dashed", color=gray50, fontcolor=gray50')
        lines.append(f"  {_dot_string(node['id'])} [{', '.join(attrs)}];")
    for edge in graph["edges"]:
        attrs = [f"weight={edge['count']}"]
        if edge["kind"] == "embed":
            attrs.append("style=dashed")
        if edge["count"] > 1:
            attrs.append(f'label="{edge["count"]}"')
        lines.append(f"  {_dot_string(edge['from'])} -> {_dot_string(edge['to'])} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- GraphML ---------------------------------------------------------------------------------------------

#: (key id, for, attr.name, attr.type)
_KEYS = (
    ("title", "node", "title", "string"),
    ("label", "node", "label", "string"),  # what Gephi shows
    ("folder", "node", "folder", "string"),
    ("tags", "node", "tags", "string"),
    ("in", "node", "in", "int"),
    ("out", "node", "out", "int"),
    ("missing", "node", "missing", "boolean"),
    ("kind", "edge", "kind", "string"),
    ("count", "edge", "count", "int"),
)


def graphml(graph: GraphResult) -> str:
    """GraphML (http://graphml.graphdrawing.org/): one directed graph, the fields as data keys."""
    import xml.etree.ElementTree as ET

    root = ET.Element("graphml", xmlns="http://graphml.graphdrawing.org/xmlns")
    for key, domain, name, kind in _KEYS:
        ET.SubElement(root, "key", {"id": key, "for": domain, "attr.name": name, "attr.type": kind})
    body = ET.SubElement(root, "graph", id="amem", edgedefault="directed")

    def data(parent: ET.Element, key: str, value: object) -> None:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        ET.SubElement(parent, "data", key=key).text = _NOT_XML.sub("", text)

    for node in graph["nodes"]:
        element = ET.SubElement(body, "node", id=_graphml_id(node["id"]))
        for key, value in _node_fields(node):
            data(element, key, value)
    for number, edge in enumerate(graph["edges"]):
        element = ET.SubElement(
            body, "edge", id=f"e{number}", source=_graphml_id(edge["from"]), target=_graphml_id(edge["to"])
        )
        data(element, "kind", edge["kind"])
        data(element, "count", edge["count"])
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _graphml_id(node_id: str) -> str:
    """A node's GraphML id: its id, with `\\` and each character XML cannot hold written as `\\\\` and `\\uXXXX`,
    so that two ids stay two (an id XML can hold, with no backslash, stays as it is)."""
    return _ESCAPED_IN_ID.sub(lambda m: "\\\\" if m.group() == "\\" else f"\\u{ord(m.group()):04x}", node_id)


def _node_fields(node: GraphNode) -> list[tuple[str, object]]:
    return [
        ("title", node["title"]),
        ("label", node["title"]),
        ("folder", _folder(node["id"])),
        ("tags", " ".join(node["tags"])),
        ("in", node["in"]),
        ("out", node["out"]),
        ("missing", bool(node.get("missing"))),
    ]


# --- Mermaid ---------------------------------------------------------------------------------------------

#: Characters a Mermaid label shows only as an entity code (#quot; and the like): they would end the label,
#: start markup or an entity.
_MERMAID_CODES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "&": "#amp;", "`": "#96;"}
_MERMAID_SPECIAL = re.compile('[#"<>&`]|[\x00-\x1f\x7f]')


def _mermaid_label(text: str) -> str:
    return '"' + _MERMAID_SPECIAL.sub(lambda m: _MERMAID_CODES.get(m.group(0), " "), text) + '"'


def mermaid(graph: GraphResult) -> str:
    """A Mermaid flowchart. Node ids are n0, n1, … (a note id may hold any character); labels are titles."""
    names = {node["id"]: f"n{number}" for number, node in enumerate(graph["nodes"])}
    lines = ["flowchart LR"]
    missing = []
    for node in graph["nodes"]:
        lines.append(f"  {names[node['id']]}[{_mermaid_label(node['title'])}]")
        if node.get("missing"):
            missing.append(names[node["id"]])
    for edge in graph["edges"]:
        arrow = "-.->" if edge["kind"] == "embed" else "-->"
        label = f"|{edge['count']}|" if edge["count"] > 1 else ""
        lines.append(f"  {names[edge['from']]} {arrow}{label} {names[edge['to']]}")
    if missing:
        lines.append("  classDef missing stroke-dasharray: 4 4, color:#888")
        lines.append(f"  class {','.join(missing)} missing")
    return "\n".join(lines) + "\n"
