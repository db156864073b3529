"""Start-up cost, held by allowlists: each command runs in a fresh interpreter, and every module it loaded
must be one that command is allowed to load. A new import anywhere on a command's path (a heavy library,
a stdlib package such as asyncio or email) fails here until it is added on purpose.

Modules whose name starts with `_` (C accelerators such as `_sqlite3`, `_yaml`) come with their public
module and are not listed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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

#: What every run may load: the interpreter's own start-up, Click and what Click needs, amem's command
#: registry (`--help` imports each command's small module to show its summary), and the reporter that
#: sends the library's warnings to stderr.
BASE = frozenset(
    {
        *("abc", "ast", "builtins", "bz2", "codecs", "collections", "contextlib", "copyreg", "datetime", "dis"),
        *("encodings", "enum", "errno", "fnmatch", "functools", "genericpath", "gettext", "importlib", "inspect"),
        *("io", "itertools", "json", "keyword", "linecache", "locale", "lzma", "marshal", "math"),
        *("opcode", "operator", "os", "platform", "posix", "posixpath", "re", "reprlib"),
        *("shutil", "site", "stat", "sys", "textwrap", "threading", "time", "token", "tokenize", "types"),
        *("typing", "uuid", "warnings", "weakref", "zipimport", "zlib"),
        "click",
    }
)
#: `pathlib`, and what it imports (`urllib.parse` brings `ipaddress`): `read` and `write`, and the commands a
#: keeper answers, do without it (the config holds its folders as strings); the other commands use it.
PATHLIB = frozenset({"pathlib", "ntpath", "urllib", "ipaddress"})
#: The layers' packages hold only their docstrings, so loading one costs nothing.
LAYERS = frozenset(
    {"amem.notes", "amem.store", "amem.gitvault", "amem.fswatch", "amem.index", "amem.keeper", "amem.ops"}
    | {"amem.keeperproto", "amem.semantic", "amem.search", "amem.sync"}
)
AMEM_BASE = LAYERS | frozenset(
    {"amem", "amem.cli", "amem.config", "amem.digest", "amem.errors", "amem.output", "amem.report", "amem.commands"}
    | {f"amem.commands.{name}" for name in COMMANDS}
    | {"amem.interrupt"}  # a Ctrl-C that Python could not raise while the modules loaded
    | {"amem.outcome"}  # every failure as amem's error
    | {"amem.paths", "amem.trust"}  # the folders, and whether the project's config file is trusted
    | {"amem.opspec"}  # the requests of the commands a keeper answers, declared once
)

#: The notes themselves: YAML frontmatter (its C loader brings cython_runtime), the SQLite index, and
#: Unicode folding for links and search.
NOTES = frozenset(
    {"yaml", "cython_runtime", "sqlite3", "array", "base64", "binascii", "bisect", "struct", "unicodedata", "heapq"}
    # the index's schema fingerprint and the lock that lets one process refresh at a time
    | {"fcntl"}
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
#: What a read of an unchanged vault loads of them: the index's queries and its folder check, the note's
#: links and plain frontmatter.
NOTES_READ = frozenset({"sqlite3", "bisect", "unicodedata", "fcntl"})
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
#: git runs in a subprocess.
GIT_PROCESS = frozenset({"subprocess", "select", "selectors", "signal"})
#: ...and history, restore and --commit also make scratch folders and records of what git said.
GIT = GIT_PROCESS | {"tempfile", "random", "bisect", "copy", "dataclasses"}
#: Only the watcher pays for file-system events and HTTP.
WATCH = frozenset(
    {"watchdog", "pathspec", "requests", "urllib3", "charset_normalizer", "idna", "certifi", "http", "email"}
    | {"atexit", "ctypes", "hashlib", "hmac", "logging", "queue", "secrets", "string", "traceback", "socket", "ssl"}
)

#: Only `amem mcp` pays for the MCP SDK: pydantic, anyio and the HTTP stack the SDK imports with it.
MCP_SDK = frozenset(
    {"mcp", "mcp_types", "pydantic", "pydantic_core", "annotated_types", "typing_extensions", "typing_inspection"}
    | {"anyio", "asyncio", "concurrent", "contextvars", "starlette", "sse_starlette", "uvicorn", "httpx2"}
    | {"python_multipart", "opentelemetry", "cryptography", "multiprocessing", "socketserver", "pickle"}
    | {"calendar", "configparser", "csv", "decimal", "fractions", "html", "mimetypes", "numbers", "quopri"}
    | {"shlex", "sysconfig", "zipfile", "zoneinfo"}
)

#: The commands a keeper answers ask it first (the lock probe, keeper.json), over its socket only when one
#: lives: see KEEPER_PATH.
ASK = frozenset({"amem.keeperproto.ask"})
#: ...and, when none answers, run the operation by the very code the keeper runs.
ASK |= {"amem.ops.answers"}

#: command → (arguments, other modules it may load, amem modules it may load, one module it must load).
ALLOWED: dict[str, tuple[list[str], frozenset[str], frozenset[str], str]] = {
    # A read of an unchanged vault indexes nothing: no batch writer, no search rows, no YAML for plain
    # frontmatter, no base64 (only a binary frontmatter value needs it).
    "read": (
        ["read", "x"],
        NOTES_READ,
        # index.attached (index.health's resolver with it): the attachments a link names when it names no note
        NOTES_READ_AMEM | ASK | {"amem.ops.read", "amem.notes.conflicts", "amem.index.attached", "amem.index.health"},
        "amem.ops.read",
    ),
    "search": (["search", "x"], PATHLIB | NOTES, NOTES_AMEM | ASK | SEARCH_AMEM, "amem.search.query"),
    "list": (["list"], PATHLIB | NOTES, NOTES_AMEM | ASK | {"amem.search.listing"}, "amem.search.listing"),
    # JSON by default: the renderers (amem.graphview) and the HTML page load only for another --format
    "graph": (["graph"], PATHLIB | NOTES, NOTES_AMEM | {"amem.ops.graph"}, "amem.ops.graph"),
    # A write records what it wrote in the index's `seen` table, and opens no more of the index for it.
    "write": (
        ["write", "x", "more"],
        frozenset({"sqlite3", "fcntl"}),
        frozenset({"amem.notes.ids", "amem.notes.parse", "amem.notes.simple_yaml", "amem.timefmt"})
        | {"amem.atomicfile", "amem.cachedir", "amem.ops.write", "amem.store.write", "amem.index.seen"}
        | {"amem.index.schema"},  # the index file's name, which is its schema version's
        "amem.ops.write",
    ),
    "edit": (
        ["edit", "x", "--prepend", "more"],
        PATHLIB | NOTES | {"fcntl"},
        # the updated line is stamped as a move stamps it
        NOTES_AMEM | {"amem.ops.edit", "amem.ops.relink", "amem.ops.write", "amem.store.write", "amem.search.query"},
        "amem.ops.edit",
    ),
    "history": (
        ["history", "x"],
        PATHLIB | GIT | {"fcntl"},
        # ops.names: an id resolves as a name only when no note has it (then the index loads)
        frozenset({"amem.notes.ids", "amem.timefmt", "amem.gitvault.git", "amem.ops.names"}),
        "amem.gitvault.git",
    ),
    "restore": (
        ["restore", "x", "HEAD", "--base-version", "0" * 40],
        PATHLIB | NOTES | GIT | {"fcntl"},
        NOTES_AMEM | {"amem.ops.restore", "amem.ops.write", "amem.gitvault.git", "amem.store.write", "amem.ops.names"},
        "amem.ops.restore",
    ),
    "delete": (
        ["delete", "x"],
        PATHLIB | NOTES | {"fcntl"},
        NOTES_AMEM | {"amem.ops.delete", "amem.store.write"},
        "amem.ops.delete",
    ),
    "move": (
        ["move", "x", "y"],
        # a move rewrites notes side by side, in threads
        PATHLIB | NOTES | {"fcntl", "concurrent", "atexit", "logging", "queue", "string", "traceback"},
        NOTES_AMEM
        | {"amem.ops.move", "amem.ops.delete", "amem.ops.relink", "amem.ops.write", "amem.store.write"}
        | {"amem.search.query"}
        | {"amem.ops.names"},  # the case twins a move to NEW must not make
        "amem.ops.move",
    ),
    "sync": (
        ["sync"],
        GIT_PROCESS | {"fcntl", "shlex"},  # no pathlib: an idle sync's git layer holds paths as strings
        frozenset({"amem.gitvault.git", "amem.sync.sync", "amem.sync.attributes"})
        # the notes git ignores, asked when it ignores a folder (the console test's vault ignores .obsidian/)
        | {"amem.sync.ignored"}
        # the scratch folders a killed sync left, found by the pid in their name (test_sync_processes)
        | {"amem.gitvault.gitlocal", "amem.atomicfile"},
        "amem.sync.sync",
    ),
    # amem.semantic.embedding: whether semantic.model is one embedded here (it imports nothing more itself)
    "index": (["index"], PATHLIB | NOTES, NOTES_AMEM | {"amem.semantic.embedding"}, "amem.index.index"),
    "check": (
        ["check"],
        PATHLIB | NOTES,
        NOTES_AMEM | {"amem.ops.check", "amem.index.health", "amem.notes.conflicts", "amem.ops.read"},
        "amem.ops.check",
    ),
    "info": (
        ["info"],
        PATHLIB | frozenset({"copy", "dataclasses", "hashlib"}),
        frozenset({"amem.notes.ids", "amem.info"}),
        "amem.info",
    ),
    # the project file's SHA-256, recorded in the state folder by an atomic write
    "trust": (["trust"], frozenset({"hashlib"}), frozenset({"amem.atomicfile"}), "amem.trust"),
    "watch": (
        ["watch", "no-such-folder"],
        PATHLIB | GIT | WATCH | {"fcntl", "heapq", "base64", "binascii", "bisect", "struct"},
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
        PATHLIB | NOTES | GIT | WATCH | MCP_SDK,
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
    "batch": (["batch"], frozenset(), frozenset({"amem.index.kept"}), "amem.commands.batch"),
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


#: Commands probed a second time, once the first run has built the index: what they load then is what a
#: vault in use costs them (the first run of a new vault builds its index, as any refresh does).
WARMED = frozenset({"read", "write"})


def test_every_command_has_an_allowlist() -> None:
    assert sorted(ALLOWED) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_a_command_loads_only_what_it_is_allowed(name: str, vault: Path, isolated_env: Path) -> None:
    args, others, amem_modules, required = ALLOWED[name]
    write_file(vault / "x.md", "# x\n\nA note.\n")
    if name in WARMED:
        old = time.time() - 3600  # not racily recent: the second run finds nothing to settle either
        for path in (vault / "x.md", vault):
            os.utime(path, (old, old))
        loaded_modules(args, isolated_env)
    loaded = loaded_modules(args, isolated_env)
    assert required in loaded, f"amem {name} did not run as far as {required}"
    top_level = {m.split(".")[0] for m in loaded if not m.startswith("_") and not m.startswith("amem")}
    unexpected = sorted(top_level - BASE - others)
    assert unexpected == [], f"amem {name} loaded modules it is not allowed: {unexpected}"
    own = {m for m in loaded if m == "amem" or m.startswith("amem.")}
    unexpected_own = sorted(own - AMEM_BASE - amem_modules)
    assert unexpected_own == [], f"amem {name} loaded amem modules it is not allowed: {unexpected_own}"


def test_help_loads_only_the_command_registry(isolated_env: Path) -> None:
    loaded = loaded_modules(["--help"], isolated_env)
    top_level = {m.split(".")[0] for m in loaded if not m.startswith("_") and not m.startswith("amem")}
    assert sorted(top_level - BASE) == []
    assert sorted({m for m in loaded if m.startswith("amem")} - AMEM_BASE) == []


#: With a keeper answering, search, read and list are clients: the config, a lock probe, one socket round
#: trip (the C module `_socket`, not `socket` and its `selectors`) and the JSON they print; never SQLite,
#: YAML, the index, the tokenizer or the ranking.
KEEPER_PATH = frozenset({"fcntl"})
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
    top_level = {m.split(".")[0] for m in loaded if not m.startswith("_") and not m.startswith("amem")}
    assert sorted(top_level - BASE - KEEPER_PATH) == []
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
