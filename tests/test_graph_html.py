"""`amem graph --format html`: one self-contained page, opened in headless Chromium from a temporary folder with
networking off; it lays the graph out, draws every node, asks for nothing but itself, and never runs a note's
text as markup. Skipped where Chromium is absent (CI installs it); the static checks run everywhere."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from amem.graphview.html import VENDOR
from tests.browser import Browser, chromium_binary, colour_census
from tests.conftest import write_file
from tests.installed import installed_runner

#: Titles that would run script if the page ever put them in as markup.
HOSTILE = (
    "</script><script>window.__xss = 1</script>",
    '<img src=x onerror="window.__xss = 2">',
    "\u2028line</p><!-- -->&amp; \\u003c",
)
needs_chromium = pytest.mark.skipif(chromium_binary() is None, reason="no Chromium on this machine")


@pytest.fixture
def run(tmp_path: Path, vault: Path) -> Any:
    return installed_runner(tmp_path, vault)


@pytest.fixture
def hostile(vault: Path) -> Path:
    for number, title in enumerate(HOSTILE):
        write_file(vault / f"bad/{number}.md", f"---\ntitle: {json.dumps(title)}\ntags: [x]\n---\n[[hub]]\n")
    write_file(vault / "hub.md", "# Hub\n\n[[bad/0]] ![[bad/1]]\n")
    for number in range(40):
        folder = ("alpha", "beta", "gamma")[number % 3]
        write_file(vault / f"{folder}/n{number}.md", f"# Note {number}\n\n[[hub]] [[n{(number * 7) % 40}]]\n")
    return vault


def _page(run: Any, folder: Path, *args: str) -> tuple[Path, dict[str, Any]]:
    page = folder / "graph.html"
    result = run("graph", "--format", "html", "--output", str(page), *args)
    assert result.code == 0, result.stderr
    graph = run("graph", *args).json
    return page, graph


def test_the_page_is_self_contained_and_its_data_cannot_end_the_script(hostile: Path, run: Any, tmp_path: Path) -> None:
    page, graph = _page(run, tmp_path)
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)  # nothing from the network
    assert "default-src 'none'" in html and "connect-src 'none'" in html
    block = re.search(r'<script type="application/json" id="amem-data">(.*?)</script>', html, re.S)
    assert block, "no data block"
    assert "<" not in block.group(1) and ">" not in block.group(1)  # no title can end the element
    data = json.loads(block.group(1))
    assert [n[1] for n in data["nodes"]] == [n["title"] for n in graph["nodes"]]
    assert len(data["edges"]) == len(graph["edges"])
    assert html.count("<script") == 3  # the data, the vendored code as data, the viewer
    for name in ("d3-force", "d3-quadtree", "d3-dispatch", "d3-timer"):
        assert (Path(__file__).parent.parent / "cli/amem/graphview/vendor" / f"LICENSE.{name}").is_file()


@needs_chromium
def test_the_page_lays_out_and_draws_every_node_offline(hostile: Path, run: Any, tmp_path: Path) -> None:
    page, graph = _page(run, tmp_path)
    browser = Browser(1000, 700)
    try:
        browser.open(page)
        state = browser.wait_for("window.amemGraph && window.amemGraph.frameMs !== null && window.amemGraph")
        assert state["drawn"] == len(graph["nodes"]) == state["nodes"] == 44
        assert state["edges"] == len(graph["edges"])
        assert browser.evaluate("document.body.dataset.ready") == "1"
        assert browser.evaluate("window.__xss") is None  # no title ran as script
        # what a user does: search a note, pick it, read its title, tags and links in the panel
        browser.evaluate(
            "const s = document.getElementById('search'); s.value = 'onerror';"
            "s.dispatchEvent(new Event('input')); s.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}))"
        )
        assert browser.evaluate("document.getElementById('p-title').textContent") == HOSTILE[1]
        assert browser.evaluate("document.getElementById('p-tags').textContent") == "#x"
        assert browser.evaluate("[...document.querySelectorAll('#p-in button')].map(b => b.title)") == ["hub.md"]
        assert browser.evaluate("document.querySelectorAll('#panel img, #panel script').length") == 0
        browser.evaluate(
            "document.getElementById('colour').value = 'tag';"
            "document.getElementById('colour').dispatchEvent(new Event('change'))"
        )
        assert browser.evaluate("document.getElementById('legend').textContent").startswith("(no tag)")
        # zoom with the wheel, pan with a drag, pick a note with a click
        before = browser.evaluate("window.amemGraph.view()")
        browser.evaluate(
            "document.getElementById('view').dispatchEvent(new WheelEvent('wheel', "
            "{deltaY: -300, clientX: 500, clientY: 350, bubbles: true, cancelable: true}))"
        )
        zoomed = browser.evaluate("window.amemGraph.view()")
        assert zoomed["k"] > before["k"] * 1.2
        for kind, at in (("pointerdown", 400), ("pointermove", 460), ("pointerup", 460)):
            browser.evaluate(
                f"document.getElementById('view').dispatchEvent(new PointerEvent('{kind}', "
                f"{{clientX: {at}, clientY: 300, pointerId: 1, bubbles: true}}))"
            )
        assert browser.evaluate("window.amemGraph.view().tx") == pytest.approx(zoomed["tx"] + 60)
        where = browser.evaluate("window.amemGraph.screenOf('hub.md')")
        for kind in ("pointerdown", "pointerup"):
            browser.evaluate(
                f"document.getElementById('view').dispatchEvent(new PointerEvent('{kind}', "
                f"{{clientX: {where[0]}, clientY: {where[1]}, pointerId: 1, bubbles: true}}))"
            )
        assert browser.evaluate("window.amemGraph.view().selected") == "hub.md"
        assert browser.evaluate("document.getElementById('p-title').textContent") == "Hub"
        colours, drawn_share = colour_census(browser.screenshot(scale=0.3))
        assert colours > 20 and drawn_share > 0.01, (colours, drawn_share)
        assert browser.evaluate("window.__xss") is None
        urls = browser.requests()
    finally:
        browser.close()
    assert urls and all(u.startswith(("file://", "blob:", "data:")) for u in urls), urls


@pytest.fixture
def big(vault: Path) -> Path:
    """2,000 small notes in 6 folders, each linking to 3 others (most in its own folder), like a real vault."""
    rng = random.Random(24)
    folders = ("ops", "people", "projects/a", "projects/b", "ref", "daily")
    names = [f"{folders[i % len(folders)]}/n{i}" for i in range(2000)]
    for i, name in enumerate(names):
        same = [j for j in (rng.randrange(i % 6, 2000, 6) for _ in range(2)) if j != i]
        links = " ".join(f"[[{names[j]}]]" for j in [*same, rng.randrange(2000)])
        write_file(vault / f"{name}.md", f"---\ntags: [t{i % 9}]\n---\n# Note {i}\n\n{links}\n")
    return vault


@needs_chromium
def test_a_graph_of_thousands_of_notes_finishes_its_layout_and_draws_every_node(
    big: Path, run: Any, tmp_path: Path
) -> None:
    page, graph = _page(run, tmp_path)
    assert len(graph["nodes"]) == 2000 and len(graph["edges"]) > 5000
    browser = Browser(1000, 700)
    try:
        browser.open(page)
        # the whole layout, in a generous time (a few seconds on a quiet machine; minutes before it was made quick)
        state = browser.wait_for("window.amemGraph && window.amemGraph.frameMs !== null && window.amemGraph", 45)
        assert state["nodes"] == state["drawn"] == 2000 and state["edges"] == len(graph["edges"])
        assert state["tick"] == state["ticks"] > 0  # every step of the layout ran
        # every node is somewhere on the canvas, at a finite place, after the view fits the settled layout
        places = browser.evaluate("window.amemGraph.places()")
        assert all(0 <= sx <= 1000 and 0 <= sy <= 700 for sx, sy in places), "a node off the canvas"
        assert len({(round(sx), round(sy)) for sx, sy in places}) > 1200  # spread out, not piled up
        colours, drawn_share = colour_census(browser.screenshot(scale=0.3))
        assert colours > 20 and drawn_share > 0.05, (colours, drawn_share)
        # panning the big graph moves the view; when the hand stops, every node is drawn again
        before = browser.evaluate("window.amemGraph.view()")
        for kind, at in (("pointerdown", 400), ("pointermove", 430), ("pointermove", 470), ("pointerup", 470)):
            browser.evaluate(
                f"document.getElementById('view').dispatchEvent(new PointerEvent('{kind}', "
                f"{{clientX: {at}, clientY: 300, pointerId: 1, bubbles: true}}))"
            )
        assert browser.evaluate("window.amemGraph.view().tx") == pytest.approx(before["tx"] + 70)
        browser.evaluate("window.amemGraph.select(null); window.amemGraph.fit()")
        assert browser.wait_for("window.amemGraph.drawnNow() === 2000", 10)
    finally:
        browser.close()


#: Our many-body force and d3's on the same 3,000 points and a pile of 40 at one place, each against the exact
#: forces (d3's, theta near 0): the relative error of each, for three thetas.
AGREEMENT = """
const n = 3000, points = [];
let seed = 7; const next = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
for (let i = 0; i < n; i++) points.push({ index: i, x: 900 * next() - 450, y: 600 * next() - 300 });
for (let i = 0; i < 40; i++) points.push({ index: n + i, x: 5, y: 5 });  // a pile at one place
function run(force) {
  const copy = points.map((d) => ({ index: d.index, x: d.x, y: d.y, vx: 0, vy: 0 }));
  force.initialize(copy, next); force(0.5); return copy;
}
const exact = run(d3.forceManyBody().strength(-40).theta(0.01));
function error(got) {
  let off = 0, size = 0;
  got.forEach((d, i) => {  // the pile's forces are random (coincident points are pushed apart at random)
    if (i >= n) return;
    off += Math.hypot(d.vx - exact[i].vx, d.vy - exact[i].vy); size += Math.hypot(exact[i].vx, exact[i].vy);
  });
  return got.every((d) => Number.isFinite(d.vx) && Number.isFinite(d.vy)) ? off / size : Infinity;
}
window.result = [0.5, 0.9, 1.2].map((theta) => [theta,
  error(run(d3.forceManyBody().strength(-40).theta(theta))), error(run(manyBody(-40, theta, Infinity)))]);
"""


@needs_chromium
def test_the_pages_many_body_force_is_as_close_to_the_exact_one_as_d3s(tmp_path: Path) -> None:
    here = Path(__file__).parent.parent / "cli/amem/graphview"
    page = (here / "page.html").read_text(encoding="utf-8")
    force = page[page.index("  function manyBody(") : page.index("  function layout(")]
    vendor = "\n".join((here / f"vendor/{name}.min.js").read_text() for name in VENDOR)
    test = tmp_path / "force.html"
    test.write_text(f"<!doctype html><script>{vendor}\n{force}\n{AGREEMENT}</script>", encoding="utf-8")
    browser = Browser(400, 300)
    try:
        browser.open(test)
        result = browser.wait_for("window.result", 60)
    finally:
        browser.close()
    for theta, d3s, ours in result:
        assert ours < 1.25 * d3s + 0.0005, (theta, d3s, ours)  # as good as d3's Barnes–Hut (0.2 to 2 %)
        assert ours > 0  # an approximation, but of these forces: not the exact ones computed again
