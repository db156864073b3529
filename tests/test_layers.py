"""The package's shape, held: layers that import only downwards, no import cycle, and rooms small enough to
hold in your head (modules of at most 800 lines, packages of at most 3,000, functions under cyclomatic
complexity 20).

Every import counts, at module level or inside a function (a lazy import is still a dependency); only
imports under `if TYPE_CHECKING:` do not, since they never run. ARCHITECTURE.md describes the layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from radon.complexity import cc_visit
from radon.visitors import Class

PACKAGE = Path(__file__).resolve().parent.parent / "cli" / "amem"

#: The layers, lowest first. A module may import its own component and any component of a lower layer;
#: never a sibling of its own layer, never upwards. A component is a package under amem; the floor and the
#: commands are loose modules, each layer one component (free to import among themselves, without cycles).
LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "floor",
        frozenset(
            {"amem", "amem.errors", "amem.digest", "amem.timefmt", "amem.atomicfile", "amem.report", "amem.output"}
            | {"amem.opspec"}
            | {
                "amem.config",
                "amem.paths",
                "amem.trust",
                "amem.tokens",
                "amem.audit",
                "amem.cachedir",
                "amem.results",
                "amem.interrupt",
                "amem.outcome",
            }
        ),
    ),
    ("the note model", frozenset({"amem.notes"})),
    ("storage, git and file-system watching", frozenset({"amem.store", "amem.gitvault", "amem.fswatch"})),
    ("the keeper's protocol", frozenset({"amem.keeperproto"})),
    ("the index", frozenset({"amem.index"})),
    ("semantic vectors", frozenset({"amem.semantic"})),
    ("the query side", frozenset({"amem.search"})),
    ("the keeper", frozenset({"amem.keeper"})),
    ("the vault operations", frozenset({"amem.ops", "amem.sync"})),
    ("the watcher", frozenset({"amem.watcher"})),
    ("the graph views", frozenset({"amem.graphview"})),
    ("Claude's memory tool", frozenset({"amem.memorytool"})),
    (
        "the commands",
        frozenset({"amem.cli", "amem.commands", "amem.mcp_server", "amem.mcp_declare", "amem.completion", "amem.info"})
        | {"amem._docs", "amem.__main__", "amem.shim", "amem.mcp_http"},
    ),
]
MAX_MODULE_LINES = 800
MAX_PACKAGE_LINES = 3000
MAX_COMPLEXITY = 20


def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package's __init__)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that can run: all of them but the bodies of `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for other in node.orelse:
                yield other
                yield from _runtime_nodes(other)
            continue
        yield node
        yield from _runtime_nodes(node)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(name: str, path: Path, is_package: bool) -> Iterator[str]:
    package = name if is_package else name.rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)  # `from pkg import module`


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the nearest enclosing module of each imported name)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in known.items():
        targets = set()
        for imported in _imported_names(name, path, is_package):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not (is_package is False and imported == "amem"):
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def component_of(module: str) -> tuple[int, str]:
    """(layer number, component) of a module: its package under amem, or the layer's name for the floor's
    and the commands' modules.
    The longest entry that names the module or a package holding it decides (`amem` itself is only `amem`)."""
    matches = [
        (len(member), number, member)
        for number, (_, members) in enumerate(LAYERS)
        for member in members
        if module == member or (member != "amem" and module.startswith(member + "."))
    ]
    if not matches:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS in {Path(__file__).name}")
    _, number, member = max(matches)
    return number, LAYERS[number][0] if number in (0, len(LAYERS) - 1) else member


def against_the_layers(graph: dict[str, set[str]]) -> list[str]:
    """Each import that goes up a layer or sideways into a sibling component."""
    wrong = []
    for module, targets in sorted(graph.items()):
        layer, component = component_of(module)
        for target in sorted(targets):
            target_layer, target_component = component_of(target)
            if target_component != component and target_layer >= layer:
                wrong.append(f"{module} ({LAYERS[layer][0]}) imports {target} ({LAYERS[target_layer][0]})")
    return wrong


def test_every_import_goes_down_the_layers() -> None:
    wrong = against_the_layers(import_graph())
    assert wrong == [], "imports against the layering:\n" + "\n".join(wrong)


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle_through_a_lazy_import() -> None:
    graph = {"amem.a": {"amem.b"}, "amem.b": {"amem.c"}, "amem.c": {"amem.a"}, "amem.d": {"amem.a"}}
    assert cycles(graph) == [["amem.a", "amem.b", "amem.c"]]


def test_no_package_holds_more_than_a_few_rooms() -> None:
    sizes = {
        package.name: sum(path.read_text(encoding="utf-8").count("\n") for path in package.glob("*.py"))
        for package in PACKAGE.iterdir()
        if (package / "__init__.py").is_file()
    }
    assert {name: size for name, size in sizes.items() if size > MAX_PACKAGE_LINES} == {}


def test_the_layering_check_catches_upward_and_sideways_imports() -> None:
    graph = {
        "amem.search.query": {"amem.notes.links", "amem.search.rank", "amem.errors"},  # down, own, floor
        "amem.notes.links": {"amem.search.query"},  # up
        "amem.store.write": {"amem.gitvault.git"},  # sideways
        "amem.errors": {"amem.output"},  # within the floor
    }
    assert against_the_layers(graph) == [
        "amem.notes.links (the note model) imports amem.search.query (the query side)",
        "amem.store.write (storage, git and file-system watching) imports amem.gitvault.git (storage, git and "
        "file-system watching)",
    ]


def _functions(blocks: list[Any]) -> dict[tuple[str, int], Any]:
    """Every function radon measured, methods and nested functions included, each once (radon lists a
    class's methods among its blocks and in the class)."""
    found: dict[tuple[str, int], Any] = {}
    for block in blocks:
        inner = block.methods if isinstance(block, Class) else [block, *_functions(block.closures).values()]
        for function in inner:
            found.setdefault((function.fullname, function.lineno), function)
            found.update(_functions(function.closures))
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    lines = source.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.name} has {lines} lines (at most {MAX_MODULE_LINES})"
    complex_ones = [
        f"{block.fullname} {block.complexity}"
        for block in _functions(cc_visit(source)).values()
        if block.complexity >= MAX_COMPLEXITY
    ]
    assert complex_ones == [], f"functions of complexity {MAX_COMPLEXITY} or more: {complex_ones}"
