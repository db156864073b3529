"""Start-up cost, held by allowances: each command runs in a fresh interpreter, and

- every third-party distribution it loaded (beyond the standard library, `sys.stdlib_module_names`, and
  what the interpreter itself loads at start-up) must be one that command is allowed, with what that
  distribution requires: `read` and `write` load Click alone, no command but `mcp` loads the MCP SDK, none
  but `watch` and `mcp` watchdog, only a semantic search numpy and the model's runtime;
- no command but the MCP server (and the watcher's HTTP sink) loads an event loop or a network stack;
- every amem module it loaded must be one its allowlist names (amem's own lazy imports).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from amem.cli import COMMANDS

from .conftest import write_file

PROBE = """
import sys
from amem.cli import run
run(sys.argv[1:])
sys.stderr.write("MODULES=" + ",".join(sorted(sys.modules)) + "\\n")
"""

#: The standard library's event loop and network stack (names every Python since 3.11 has): only the MCP
#: server and the watcher's HTTP sink pay for them.
NETWORK_STDLIB = frozenset({"asyncio", "email", "http", "ssl", "multiprocessing"})
NETWORK_ALLOWED = frozenset({"mcp", "watch"})

#: What every command may load beyond the standard library: Click, and PyYAML for a frontmatter that is
#: not plain (a key, a word, a list, a date: the fast reader's).
CORE = frozenset({"click", "pyyaml"})
#: The layers' packages hold only their docstrings, so loading one costs nothing.
LAYERS = frozenset(
    {"amem.notes", "amem.store", "amem.gitvault", "amem.fswatch", "amem.index", "amem.keeper", "amem.ops"}
    | {"amem.keeperproto", "amem.semantic", "amem.search", "amem.sync"}
)
AMEM_BASE = LAYERS | frozenset(
    {"amem", "amem.cli", "amem.config", "amem.digest", "amem.errors", "amem.output", "amem.report", "amem.commands"}
    | {f"amem.commands.{name.replace('-', '_')}" for name in COMMANDS}
    | {"amem.interrupt"}  # a Ctrl-C that Python could not raise while the modules loaded
    | {"amem.outcome"}  # every failure as amem's error
    | {"amem.paths", "amem.trust"}  # the folders, and whether the project's config file is trusted
    | {"amem.opspec"}  # the requests of the commands a keeper answers, declared once
)

NOTES_AMEM = frozenset(
    {
        "amem.index.index",
        "amem.index.schema",
        "amem.index.snapshot",
        "amem.index.batch",
        "amem.index.note_reader",
        "amem.index.scan",
        "amem.index.sql",
        "amem.notes.links",
        "amem.notes.blocks",
        "amem.notes.parse",
        "amem.notes.ids",
        "amem.timefmt",
    }
    # the cache folder, and the names of the temporary files a scan sweeps away
    | {"amem.cachedir", "amem.atomicfile"}
    # what the index keeps of each note: its search rows, tokens, frontmatter fields and tags
    | {"amem.index.fts", "amem.notes.tokenize", "amem.notes.simple_yaml", "amem.notes.tags"}
    # the index keeper's sync check: a lock probe and a cookie file, no watcher
    | {"amem.keeperproto.client"}
    # what amem wrote, recorded for modifiedExternally
    | {"amem.index.seen"}
    # the attachments a build's walk passed, stored for reads
    | {"amem.index.attached"}
    # a version's first index file: the other versions' files beside it
    | {"amem.index.versions"}
    | {"amem.index.kept"}
)
#: What a read of an unchanged vault loads of the index: its queries and its folder check, the note's
#: links and plain frontmatter.
NOTES_READ_AMEM = frozenset(
    {"amem.index.index", "amem.index.scan", "amem.index.sql", "amem.keeperproto.client", "amem.notes.links"}
    | {"amem.notes.blocks"}  # the note's block structure, where its links are
    | {"amem.index.schema"}  # the tables the index checks it holds
    | {"amem.index.snapshot"}  # what the index last stored of every note's (mtime, size)
    | {"amem.notes.parse", "amem.notes.simple_yaml", "amem.notes.ids", "amem.timefmt", "amem.cachedir"}
    | {"amem.atomicfile"}
    | {"amem.index.kept"}  # an index kept open between operations by a process that lives on
)
#: The search engine: query parsing, ranking and results over the index's full-text tables.
SEARCH_AMEM = frozenset({"amem.search.query", "amem.search.rank"})
#: Only the watcher pays for file-system events, ignore rules and its HTTP sink.
WATCH = frozenset({"watchdog", "pathspec", "requests"})
#: `amem mcp`: the MCP SDK with what it requires, and what its packages import when it is installed
#: (PyJWT's cryptography, the HTTP stack's sniffio); its keeper watches the vault.
MCP_SDK = frozenset({"mcp", "cryptography", "sniffio"}) | WATCH

#: The commands a keeper answers ask it first (the lock probe, keeper.json), over its socket only when one
#: lives: see KEEPER_PATH_AMEM.
ASK = frozenset({"amem.keeperproto.ask"})
#: ...and, when none answers, run the operation by the very code the keeper runs.
ASK |= {"amem.ops.answers"}

#: command → (arguments, third-party distributions it may load, amem modules it may load, one amem module it
#: must load).
ALLOWED: dict[str, tuple[list[str], frozenset[str], frozenset[str], str]] = {
    # A read of an unchanged vault indexes nothing: no batch writer, no search rows, no YAML for plain
    # frontmatter.
    "read": (
        ["read", "x"],
        frozenset({"click"}),  # a plain frontmatter is read without YAML
        # index.attached (index.health's resolver with it): the attachments a link names when it names no note
        NOTES_READ_AMEM | ASK | {"amem.ops.read", "amem.notes.conflicts", "amem.index.attached", "amem.index.health"},
        "amem.ops.read",
    ),
    "search": (["search", "x"], CORE, NOTES_AMEM | ASK | SEARCH_AMEM, "amem.search.query"),
    "list": (["list"], CORE, NOTES_AMEM | ASK | {"amem.search.listing"}, "amem.search.listing"),
    # JSON by default: the renderers (amem.graphview) and the HTML page load only for another --format
    "graph": (["graph"], CORE, NOTES_AMEM | {"amem.ops.graph"}, "amem.ops.graph"),
    # A write records what it wrote in the index's `seen` table, and opens no more of the index for it.
    "write": (
        ["write", "x", "more"],
        frozenset({"click"}),
        frozenset({"amem.notes.ids", "amem.notes.parse", "amem.notes.simple_yaml", "amem.timefmt"})
        | {"amem.atomicfile", "amem.cachedir", "amem.ops.write", "amem.store.write", "amem.index.seen"}
        | {"amem.index.schema"},  # the index file's name, which is its schema version's
        "amem.ops.write",
    ),
    "edit": (
        ["edit", "x", "--prepend", "more"],
        CORE,
        # the updated line is stamped as a move stamps it
        NOTES_AMEM
        | {"amem.ops.edit", "amem.ops.relink", "amem.ops.write", "amem.store.write", "amem.search.query"}
        | {"amem.notes.sections"},  # what lies under a heading, as --section finds it
        "amem.ops.edit",
    ),
    "history": (
        ["history", "x"],
        CORE,
        # ops.names: an id resolves as a name only when no note has it (then the index loads)
        frozenset({"amem.notes.ids", "amem.timefmt", "amem.gitvault.git", "amem.ops.names"}),
        "amem.gitvault.git",
    ),
    "restore": (
        ["restore", "x", "HEAD", "--base-version", "0" * 40],
        CORE,
        NOTES_AMEM | {"amem.ops.restore", "amem.ops.write", "amem.gitvault.git", "amem.store.write", "amem.ops.names"},
        "amem.ops.restore",
    ),
    "delete": (
        ["delete", "x"],
        CORE,
        NOTES_AMEM | {"amem.ops.delete", "amem.store.write"},
        "amem.ops.delete",
    ),
    "move": (
        ["move", "x", "y"],
        CORE,
        NOTES_AMEM
        | {"amem.ops.move", "amem.ops.delete", "amem.ops.relink", "amem.ops.write", "amem.store.write"}
        | {"amem.search.query"}
        | {"amem.ops.names"},  # the case twins a move to NEW must not make
        "amem.ops.move",
    ),
    "sync": (
        ["sync"],
        CORE,
        frozenset({"amem.gitvault.git", "amem.sync.sync", "amem.sync.attributes"})
        # the notes git ignores, asked when it ignores a folder (the console test's vault ignores .obsidian/)
        | {"amem.sync.ignored"}
        # the scratch folders a killed sync left, found by the pid in their name (test_sync_processes)
        | {"amem.gitvault.gitlocal", "amem.atomicfile"},
        "amem.sync.sync",
    ),
    # amem.semantic.embedding: whether semantic.model is one embedded here (it imports nothing more itself)
    "index": (["index"], CORE, NOTES_AMEM | {"amem.semantic.embedding"}, "amem.index.index"),
    "check": (
        ["check"],
        CORE,
        NOTES_AMEM | {"amem.ops.check", "amem.index.health", "amem.notes.conflicts", "amem.ops.read"},
        "amem.ops.check",
    ),
    "info": (
        ["info"],
        CORE,
        frozenset({"amem.notes.ids", "amem.info"}),
        "amem.info",
    ),
    # the project file's SHA-256, recorded in the state folder by an atomic write
    "trust": (["trust"], CORE, frozenset({"amem.atomicfile"}), "amem.trust"),
    # the tokens' digests in the state folder; no SDK, no server
    "token": (["token", "list"], CORE, frozenset({"amem.tokens"}), "amem.tokens"),
    "watch": (
        ["watch", "no-such-folder"],
        CORE | WATCH,
        frozenset({"amem.notes.ids", "amem.watcher"})
        | {f"amem.watcher.{m}" for m in ("debounce", "observation", "redact", "service")}
        | {"amem.fswatch.observer", "amem.fswatch.rules"}
        | {"amem.watcher.sinks", "amem.watcher.spool"},
        "amem.watcher.service",
    ),
    # The MCP server, probed with stdin closed (it starts, reads the end of input, stops): the SDK and what
    # it stands on, the index, and the keeper with the watcher's tree.
    "mcp": (
        ["mcp"],
        CORE | MCP_SDK,
        NOTES_AMEM
        | {"amem.mcp_server", "amem.watcher", "amem.keeper.keeper", "amem.keeper.folder", "amem.keeper.requests"}
        # the declarations its schemas come from: argument checks and the shapes of the results
        | {"amem.mcp_declare", "amem.results"}
        # the keeper answers the commands that ask it with the commands' own functions
        | {"amem.ops.answers", "amem.keeperproto.ask"}
        | {f"amem.watcher.{m}" for m in ("observation", "redact")}
        | {"amem.fswatch.observer", "amem.fswatch.rules"}
        | {"amem.semantic.embedding"},  # its keeper asks whether semantic.model is embedded in the background
        "amem.mcp_server",
    ),
    # Probed with no lines: the batch itself loads nothing; each line loads what its command does (above).
    "batch": (["batch"], CORE, frozenset({"amem.index.kept"}), "amem.commands.batch"),
    # Probed with no input: a usage error once the command's module and the store loaded; never the SDK.
    "memory-tool": (
        ["memory-tool"],
        CORE,
        frozenset({"amem.memorytool", "amem.memorytool.store", "amem.memorytool.place", "amem.memorytool.text"})
        | {"amem.notes.ids"},
        "amem.memorytool.store",
    ),
}


def loaded_modules(args: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,  # `mcp` and `batch` read it to its end
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("MODULES=")]
    assert line, done.stderr
    return set(line[-1].removeprefix("MODULES=").split(","))


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def _interpreter_start_up() -> frozenset[str]:
    """The modules a bare interpreter of this environment loads (site's .pth hooks included)."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; print(','.join(sys.modules))"], capture_output=True, text=True, check=True
    )
    return frozenset(done.stdout.strip().split(","))


def third_party(loaded: Iterable[str]) -> set[str]:
    """The distributions (normalised names) of the loaded modules beyond the standard library, amem and the
    interpreter's own start-up. A module no installed distribution holds (Cython's `cython_runtime`) is made
    at run time by one that does, and is not counted."""
    owners = importlib.metadata.packages_distributions()
    tops = {m.split(".")[0] for m in set(loaded) - _interpreter_start_up()}
    tops -= {*sys.stdlib_module_names, "amem", "__main__", "__mp_main__"}
    return {_normalised(dist) for top in tops for dist in owners.get(top, [])}


def with_requirements(names: Iterable[str]) -> set[str]:
    """The distributions named, and those they require (not for an extra), transitively."""
    found: set[str] = set()
    todo = [_normalised(name) for name in names]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for requirement in requires:
            if "extra ==" not in requirement.replace('"', "").replace("'", ""):
                todo.append(_normalised(re.split(r"[\s;<>=!~\[(@]", requirement, maxsplit=1)[0]))
    return found


def check_allowed(name: str, loaded: set[str], distributions: Iterable[str]) -> None:
    """What `amem NAME` loaded beyond the standard library is within its allowance, and, unless it is the
    MCP server or the watcher, no event loop or network stack."""
    unexpected = sorted(third_party(loaded) - with_requirements(distributions))
    assert unexpected == [], f"amem {name} loaded distributions it is not allowed: {unexpected}"
    if name not in NETWORK_ALLOWED:
        network = sorted(NETWORK_STDLIB & {m.split(".")[0] for m in loaded})
        assert network == [], f"amem {name} loaded {network}"


#: A note as most are: a plain frontmatter (the fast reader's, no YAML) and a body.
PLAIN_NOTE = "---\ntitle: X\ntags: [a, b]\ncreated: 2026-01-02\n---\n# x\n\nA note.\n"

#: Commands probed a second time, once the first run has built the index: what they load then is what a
#: vault in use costs them (the first run of a new vault builds its index, as any refresh does).
WARMED = frozenset({"read", "write"})


def test_every_command_has_an_allowlist() -> None:
    assert sorted(ALLOWED) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_a_command_loads_only_what_it_is_allowed(name: str, vault: Path, isolated_env: Path) -> None:
    args, distributions, amem_modules, required = ALLOWED[name]
    write_file(vault / "x.md", PLAIN_NOTE)
    if name in WARMED:
        old = time.time() - 3600  # not racily recent: the second run finds nothing to settle either
        for path in (vault / "x.md", vault):
            os.utime(path, (old, old))
        loaded_modules(args, isolated_env)
    loaded = loaded_modules(args, isolated_env)
    assert required in loaded, f"amem {name} did not run as far as {required}"
    check_allowed(name, loaded, distributions)
    own = {m for m in loaded if m == "amem" or m.startswith("amem.")}
    unexpected_own = sorted(own - AMEM_BASE - amem_modules)
    assert unexpected_own == [], f"amem {name} loaded amem modules it is not allowed: {unexpected_own}"


#: A semantic search may load the model's runtime: numpy, tokenizers and safetensors (the static model),
#: onnxruntime (an ONNX model); a keyword search loads none of them (CORE).
SEMANTIC = frozenset({"numpy", "tokenizers", "safetensors", "onnxruntime"})


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="the semantic extra is not installed")
def test_a_semantic_search_loads_only_the_models_runtime(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "x.md", PLAIN_NOTE)
    loaded = loaded_modules(["search", "x", "--semantic"], isolated_env)
    assert "amem.search.query" in loaded and "numpy" in loaded
    check_allowed("search --semantic", loaded, CORE | SEMANTIC)


def test_help_loads_only_the_command_registry(isolated_env: Path) -> None:
    loaded = loaded_modules(["--help"], isolated_env)
    check_allowed("--help", loaded, {"click"})
    assert sorted({m for m in loaded if m.startswith("amem")} - AMEM_BASE) == []


#: With a keeper answering, search, read and list are clients: the config, a lock probe, one socket round
#: trip and the JSON they print; never SQLite, YAML, the index, the tokenizer or the ranking.
KEEPER_PATH_AMEM = frozenset({"amem.notes.ids", "amem.keeperproto.client", "amem.keeperproto.ask"})


@pytest.mark.parametrize("args", [["search", "x"], ["read", "x"], ["list"]], ids=lambda a: a[0])
def test_with_a_keeper_a_command_loads_only_a_clients_modules(
    args: list[str], vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import signal
    import tempfile

    from .keeperproc import start_keeper

    write_file(vault / "x.md", "# x\n\nA note.\n")
    cache = tempfile.mkdtemp(prefix="ami", dir="/tmp")  # short: the keeper's socket path must fit
    monkeypatch.setenv("XDG_CACHE_HOME", cache)
    keeper = start_keeper()
    try:
        loaded = loaded_modules(args, isolated_env)
    finally:
        keeper.stop(signal.SIGKILL)
        shutil.rmtree(cache, ignore_errors=True)
    assert "amem.keeperproto.ask" in loaded
    check_allowed(args[0], loaded, {"click"})
    assert "sqlite3" not in loaded
    own = {m for m in loaded if m == "amem" or m.startswith("amem.")}
    assert sorted(own - AMEM_BASE - KEEPER_PATH_AMEM) == []


#: The console script's own entry (`amem.__main__.main`), which a live keeper answers before Click loads.
CONSOLE_PROBE = """
import sys
sys.argv = ["amem", *sys.argv[1:]]
try:
    from amem.__main__ import main
    main()
finally:
    sys.stderr.write("MODULES=" + ",".join(sorted(sys.modules)) + "\\n")
"""


@pytest.mark.parametrize("args", [["search", "x"], ["read", "x"], ["list"]], ids=lambda a: a[0])
def test_with_a_keeper_the_console_script_answers_without_click_sqlite_or_the_commands(
    args: list[str], vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import signal
    import tempfile

    from .keeperproc import start_keeper

    write_file(vault / "x.md", "# x\n\nA note.\n")
    cache = tempfile.mkdtemp(prefix="ami", dir="/tmp")
    monkeypatch.setenv("XDG_CACHE_HOME", cache)
    keeper = start_keeper()
    try:
        done = subprocess.run(
            [sys.executable, "-c", CONSOLE_PROBE, *args], cwd=isolated_env, capture_output=True, text=True, timeout=60
        )
    finally:
        keeper.stop(signal.SIGKILL)
        shutil.rmtree(cache, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    line = [x for x in done.stderr.splitlines() if x.startswith("MODULES=")]
    loaded = set(line[-1].removeprefix("MODULES=").split(","))
    assert "amem.shim" in loaded and json.loads(done.stdout)  # the keeper's answer, printed
    assert not {"click", "sqlite3", "amem.commands", "amem.index.index", "amem.ops"} & loaded
