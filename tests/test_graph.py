"""`amem graph` through the installed `amem`: nodes and edges of the resolved links (kinds and counts), the
filters (PREFIX, --tag, --from/--depth, --missing), the formats other tools read (DOT, GraphML, Mermaid),
--output, and the errors a user can meet."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.installed import installed_runner

HOSTILE = 'Q "quoted" \\ back </script><img src=x onerror=alert(1)> # & `tick`'


@pytest.fixture
def run(tmp_path: Path, vault: Path) -> Any:
    return installed_runner(tmp_path, vault)


@pytest.fixture
def linked(vault: Path) -> Path:
    """a links b twice and embeds it, c by a Markdown link and a frontmatter link; b links a; c links
    nowhere; d (tagged) is alone; e (under other/) is linked by a only; a names a missing note."""
    write_file(
        vault / "notes/a.md",
        '---\ntitle: Alpha\ntags: [core]\nrelated: "[[c]]"\n---\n'
        "[[b]] and [[notes/b|again]] and ![[b]], [see c](c.md), [[other/e]], [[nowhere]]\n"
        "```\n[[d]] in code is no link\n```\n",
    )
    write_file(vault / "notes/b.md", "# Beta\n\n#core\n\n[[A]] [[a]] [[Alpha]]\n")
    write_file(vault / "notes/c.md", "# Gamma\n")
    write_file(vault / "notes/d.md", "---\ntags: [lonely]\n---\n# Delta\n")
    write_file(vault / "other/e.md", "# Epsilon\n\n[[a#Heading]]\n")
    return vault


def edges_of(graph: dict[str, Any]) -> set[tuple[str, str, str, int]]:
    return {(e["from"], e["to"], e["kind"], e["count"]) for e in graph["edges"]}


def test_nodes_and_edges_with_kinds_and_counts(linked: Path, run: Any) -> None:
    result = run("graph")
    assert result.code == 0, result.stderr
    graph = result.json
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert list(nodes) == ["notes/a.md", "notes/b.md", "notes/c.md", "notes/d.md", "other/e.md"]
    assert nodes["notes/a.md"] == {"id": "notes/a.md", "title": "Alpha", "tags": ["core"], "in": 2, "out": 3}
    assert nodes["notes/b.md"]["title"] == "Beta" and nodes["notes/b.md"]["tags"] == ["core"]
    assert (nodes["notes/b.md"]["in"], nodes["notes/b.md"]["out"]) == (1, 1)
    assert (nodes["notes/d.md"]["in"], nodes["notes/d.md"]["out"]) == (0, 0)
    assert edges_of(graph) == {
        ("notes/a.md", "notes/b.md", "link", 2),  # [[b]] and [[notes/b|again]]: one note, two spellings
        ("notes/a.md", "notes/b.md", "embed", 1),
        ("notes/a.md", "notes/c.md", "link", 2),  # the Markdown link and the frontmatter one
        ("notes/a.md", "other/e.md", "link", 1),
        ("notes/b.md", "notes/a.md", "link", 2),  # [[A]] and [[a]]; [[Alpha]] (a title) resolves to none
        ("other/e.md", "notes/a.md", "link", 1),
    }
    assert not any(n.get("missing") for n in graph["nodes"])


def test_prefix_and_tag_keep_the_edges_among_the_chosen(linked: Path, run: Any) -> None:
    graph = run("graph", "notes/").json
    assert [n["id"] for n in graph["nodes"]] == ["notes/a.md", "notes/b.md", "notes/c.md", "notes/d.md"]
    assert all(e["to"] != "other/e.md" and e["from"] != "other/e.md" for e in graph["edges"])
    assert {n["id"]: n["out"] for n in graph["nodes"]}["notes/a.md"] == 2
    tagged = run("graph", "--tag", "core").json
    assert [n["id"] for n in tagged["nodes"]] == ["notes/a.md", "notes/b.md"]
    assert {(e["from"], e["to"]) for e in tagged["edges"]} == {
        ("notes/a.md", "notes/b.md"),
        ("notes/b.md", "notes/a.md"),
    }


def test_from_and_depth_follow_links_either_way(vault: Path, run: Any) -> None:
    for name, target in (("one", "two"), ("two", "three"), ("three", "four"), ("four", "five")):
        write_file(vault / f"{name}.md", f"# {name.title()}\n\n[[{target}]]\n")
    write_file(vault / "five.md", "# Five\n")
    write_file(vault / "apart.md", "# Apart\n")

    def ids(*args: str) -> list[str]:
        result = run("graph", *args)
        assert result.code == 0, result.stderr
        return [n["id"] for n in result.json["nodes"]]

    assert ids("--from", "three") == ["four.md", "three.md", "two.md"]  # depth 1 by default
    assert ids("--from", "three.md", "--depth", "2") == ["five.md", "four.md", "one.md", "three.md", "two.md"]
    assert ids("--from", "three", "--depth", "0") == ["three.md"]
    assert ids("--from", "THREE") == ["four.md", "three.md", "two.md"]  # a name resolves as [[THREE]] would
    missing = run("graph", "--from", "no-such-note")
    assert missing.code == 3 and missing.error["code"] == "not_found" and "no-such-note" in missing.error["message"]
    outside = run("graph", "--from", "../x")
    assert outside.code == 5 and outside.error["code"] == "invalid_id"


def test_missing_targets_are_nodes_only_when_asked(linked: Path, run: Any) -> None:
    plain = run("graph").json
    assert "nowhere" not in {n["id"] for n in plain["nodes"]}
    graph = run("graph", "--missing").json
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert nodes["nowhere"] == {"id": "nowhere", "title": "nowhere", "tags": [], "in": 1, "out": 0, "missing": True}
    assert ("notes/a.md", "nowhere", "link", 1) in edges_of(graph)
    assert ("notes/b.md", "Alpha", "link", 1) in edges_of(graph) and nodes["Alpha"]["missing"]
    assert nodes["notes/a.md"]["out"] == 4


def test_the_graph_follows_edits(linked: Path, run: Any) -> None:
    assert ("notes/b.md", "notes/a.md", "link", 2) in edges_of(run("graph").json)
    write_file(linked / "notes/b.md", "# Beta\n\n![[c]] ![[c]] ![[c]]\n")
    graph = run("graph").json
    assert ("notes/b.md", "notes/c.md", "embed", 3) in edges_of(graph)
    assert not any(e["from"] == "notes/b.md" and e["to"] == "notes/a.md" for e in graph["edges"])


def _dot_unquote(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def test_dot_quotes_every_id_and_title(vault: Path, run: Any) -> None:
    write_file(vault / 'odd "name".md', f"---\ntitle: {json.dumps(HOSTILE)}\n---\n[[plain]]\n")
    write_file(vault / "plain.md", '# Plain\n\n![[odd "name"]]\n')
    result = run("graph", "--format", "dot")
    assert result.code == 0, result.stderr
    text = result.stdout
    assert text.startswith("digraph amem {") and text.rstrip().endswith("}")
    string = r'"((?:[^"\\]|\\.)*)"'
    nodes = re.findall(rf"^  {string} \[label={string}", text, re.M)
    assert [(_dot_unquote(i), _dot_unquote(t)) for i, t in nodes] == [('odd "name".md', HOSTILE), ("plain.md", "Plain")]
    edges = re.findall(rf"^  {string} -> {string} \[(.*)\];$", text, re.M)
    assert [(_dot_unquote(a), _dot_unquote(b), "dashed" in attrs) for a, b, attrs in edges] == [
        ('odd "name".md', "plain.md", False),
        ("plain.md", 'odd "name".md', True),
    ]


def test_graphml_is_valid_and_holds_the_fields(linked: Path, run: Any) -> None:
    write_file(linked / "notes/hostile.md", f"---\ntitle: {json.dumps(HOSTILE + chr(1))}\n---\n[[a]]\n")
    result = run("graph", "--format", "graphml", "--missing")
    assert result.code == 0, result.stderr
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    root = ET.fromstring(result.stdout.encode())
    keys = {k.get("id"): (k.get("for"), k.get("attr.type")) for k in root.findall("g:key", ns)}
    assert keys["title"] == ("node", "string") and keys["count"] == ("edge", "int")
    graph = root.find("g:graph", ns)
    assert graph is not None and graph.get("edgedefault") == "directed"
    data = {
        node.get("id"): {d.get("key"): d.text or "" for d in node.findall("g:data", ns)}
        for node in graph.findall("g:node", ns)
    }
    expected = run("graph", "--missing").json
    assert list(data) == [n["id"] for n in expected["nodes"]]
    assert data["notes/hostile.md"]["title"] == HOSTILE  # escaped, and the control character dropped
    assert data["notes/a.md"]["tags"] == "core" and data["notes/a.md"]["folder"] == "notes/"
    assert data["nowhere"]["missing"] == "true" and data["notes/a.md"]["missing"] == "false"
    edges = [
        (e.get("source"), e.get("target"), *(d.text for d in e.findall("g:data", ns)))
        for e in graph.findall("g:edge", ns)
    ]
    assert edges == [(e["from"], e["to"], e["kind"], str(e["count"])) for e in expected["edges"]]
    networkx = pytest.importorskip("networkx")
    read = networkx.read_graphml(_saved(linked.parent / "g.graphml", result.stdout))
    assert read.number_of_nodes() == len(expected["nodes"])


def _saved(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_mermaid_uses_safe_ids_and_escaped_labels(vault: Path, run: Any) -> None:
    write_file(vault / "we[ir]d (id) --> x.md", f"---\ntitle: {json.dumps(HOSTILE)}\n---\n[[plain]] ![[plain]]\n")
    write_file(vault / "plain.md", "# Plain\n")
    result = run("graph", "--format", "mermaid", "--missing")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "flowchart LR"
    labels = dict(re.findall(r'^  (n\d+)\["([^"]*)"\]$', result.stdout, re.M))
    assert len(labels) == 2, result.stdout
    decoded = re.sub(
        r"#(quot|lt|gt|amp|35|96);",
        lambda m: {"quot": '"', "lt": "<", "gt": ">", "amp": "&", "35": "#", "96": "`"}[m.group(1)],
        labels["n1"],
    )
    assert decoded == HOSTILE and not set('"<>`') & set(labels["n1"])
    assert "  n1 --> n0" in lines and "  n1 -.-> n0" in lines


def test_output_writes_the_file_and_prints_a_summary(linked: Path, run: Any, tmp_path: Path) -> None:
    target = tmp_path / "out" / "vault.dot"
    target.parent.mkdir()
    result = run("graph", "--format", "dot", "--output", str(target))
    assert result.code == 0, result.stderr
    assert result.json == {"output": str(target), "format": "dot", "nodes": 5, "edges": 6}
    assert target.read_text(encoding="utf-8") == run("graph", "--format", "dot").stdout
    as_json = run("graph", "--output", str(target.with_suffix(".json")))
    assert json.loads(target.with_suffix(".json").read_text(encoding="utf-8")) == run("graph").json
    assert as_json.json["format"] == "json"
    assert sorted(p.name for p in target.parent.iterdir()) == ["vault.dot", "vault.json"]  # no temporaries


def test_output_that_cannot_be_written_is_an_io_error_naming_no_path(linked: Path, run: Any, tmp_path: Path) -> None:
    result = run("graph", "--output", str(tmp_path / "no-such-folder" / "g.json"))
    assert result.code == 10 and result.error["code"] == "io", result.stderr
    assert str(tmp_path) not in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "no-such-folder").exists()


def test_an_empty_vault_is_an_empty_graph(vault: Path, run: Any) -> None:
    result = run("graph", "--format", "mermaid")
    assert result.code == 0, result.stderr
    assert result.stdout == "flowchart LR\n"
    assert run("graph").json == {"nodes": [], "edges": []}


def test_prefix_and_from_complete_folders_and_note_ids(linked: Path) -> None:
    from amem.cli import cli
    from amem.completion import COMPLETE_VAR, AmemBashComplete

    def complete(args: list[str], incomplete: str) -> list[str]:
        shell = AmemBashComplete(cli, {}, "amem", COMPLETE_VAR)
        return [item.value for item in shell.get_completions(args, incomplete)]

    assert complete(["graph"], "no") == ["notes/"]
    assert complete(["graph"], "notes/") == ["notes/a", "notes/b", "notes/c", "notes/d"]
    assert complete(["graph", "--from"], "oth") == ["other/"]
    assert complete(["graph", "notes/", "--from"], "other/") == ["other/e"]


def test_a_graph_beside_a_build_held_half_way_says_it_is_incomplete(vault: Path, run: Any) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.test_read_beside_build import indexed_notes

    for i in range(3000):  # several of the index's batches
        write_file(vault / f"f{i:05}.md", f"# F{i}\n\n[[f{(i + 1) % 3000:05}]]\n")
    builder = subprocess.Popen(
        [sys.executable, "-m", "amem", "index"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 300
        while indexed_notes() == 0:  # the first batch is in; the build goes on
            assert builder.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        builder.send_signal(signal.SIGSTOP)  # it holds the refresh lock, half way
        if indexed_notes() < 3000:
            held = run("graph")
            assert held.code == 0, held.stderr
            assert held.json["incomplete"] is True and len(held.json["nodes"]) < 3000
            assert "building" in held.stderr and "index" in held.stderr
    finally:
        builder.send_signal(signal.SIGCONT)
        assert builder.wait(timeout=300) == 0
    done = run("graph")
    assert "incomplete" not in done.json and len(done.json["nodes"]) == 3000 and len(done.json["edges"]) == 3000
    assert done.stderr == ""
