"""What an agent meets in `amem mcp` (SPEC §13): strict arguments in amem's words, one camelCase vocabulary,
an output schema on every tool that its real results validate against, honest annotations, and a conflict
on a missing note that says so. Through a real SDK client spawning the installed `amem mcp`; the CLI through
the installed `amem`."""

from __future__ import annotations

import json
import re
import subprocess
import typing
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from mcp_types import Tool
from pydantic import TypeAdapter

from amem.notes.parse import version_of
from tests.conftest import write_file
from tests.gitrepo import commit_all, init_repo, set_identity
from tests.installed import amem_bin
from tests.test_mcp import Client, serve

#: Words of a validation library's boilerplate that must never reach a model.
BOILERPLATE = ("pydantic", "http://", "https://", "validation error", "Error executing tool", "input_value", "type=")

#: The smallest arguments each tool accepts (ids that do not exist, so that a call that ran would fail
#: or create something visible).
MINIMAL: dict[str, dict[str, Any]] = {
    "memory_runtime_info": {},
    "wiki_read": {"id": "guard"},
    "wiki_search": {"query": "anything"},
    "wiki_list": {},
    "wiki_write": {"id": "made", "content": "x"},
    "wiki_edit": {"id": "guard", "prepend": "x"},
    "wiki_delete": {"id": "guard"},
    "wiki_move": {"id": "guard", "newId": "moved"},
    "wiki_history": {"id": "guard"},
    "wiki_restore": {"id": "guard", "hash": "HEAD", "baseVersion": "0" * 40},
    "wiki_check": {},
}

#: (readOnlyHint, destructiveHint, idempotentHint) of each tool, as an agent may rely on them.
HINTS = {
    "memory_runtime_info": (True, False, True),
    "wiki_read": (True, False, True),
    "wiki_search": (True, False, True),
    "wiki_list": (True, False, True),
    "wiki_history": (True, False, True),
    "wiki_write": (False, True, False),
    "wiki_edit": (False, True, False),
    "wiki_delete": (False, True, True),
    "wiki_move": (False, True, True),
    "wiki_restore": (False, True, True),
    "wiki_check": (True, False, True),
}


def run_amem(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `amem`, as a user's shell runs it."""
    amem = amem_bin(work.parent / "bin") / "amem"
    return subprocess.run([str(amem), *args], cwd=work, capture_output=True, text=True, timeout=60)


def listed_tools(work: Path) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}

    async def test(client: Client) -> None:
        tools.update({tool.name: tool for tool in (await client.session.list_tools()).tools})

    serve(work, test)
    return tools


def assert_amems_words(message: str) -> None:
    for word in BOILERPLATE:
        assert word.lower() not in message.lower(), message


# --- 1. strict arguments -------------------------------------------------------------------------------


def test_a_misspelled_version_guard_is_refused_and_nothing_is_written(isolated_env: Path, vault: Path) -> None:
    note = write_file(vault / "agent/guard.md", "v1\n")
    errors: list[dict[str, Any]] = []

    async def test(client: Client) -> None:
        stale = "0" * 40
        for wrong in ("base_version", "version"):
            arguments = {"id": "agent/guard", "content": "v3", "mode": "overwrite", wrong: stale}
            errors.append(await client.error("wiki_write", **arguments))

    serve(isolated_env, test)
    assert note.read_text() == "v1\n"
    for error, wrong in zip(errors, ("base_version", "version"), strict=True):
        assert error["code"] == "usage"
        message = error["message"]
        assert f'"{wrong}"' in message and "baseVersion" in message and "did you mean" in message
        for valid in ("id", "content", "mode", "requireExisting"):
            assert valid in message
        assert_amems_words(message)


def test_every_tool_refuses_an_undeclared_argument_and_does_nothing(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "guard.md", "kept\n")
    tools = listed_tools(isolated_env)
    assert set(tools) >= set(MINIMAL)
    errors: dict[str, dict[str, Any]] = {}

    async def test(client: Client) -> None:
        for name in tools:
            arguments = {**MINIMAL.get(name, {}), "depht": 2}
            errors[name] = await client.error(name, **arguments)

    serve(isolated_env, test)
    for name, error in errors.items():
        assert error["code"] == "usage", (name, error)
        assert '"depht"' in error["message"] and name in error["message"], error
        for valid in tools[name].input_schema["properties"]:
            assert valid in error["message"], (name, valid)
    assert (vault / "guard.md").read_text() == "kept\n"
    assert sorted(p.name for p in vault.rglob("*.md")) == ["guard.md"]


def test_the_advertised_schemas_forbid_undeclared_arguments(isolated_env: Path, vault: Path) -> None:
    for name, tool in listed_tools(isolated_env).items():
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema.get("additionalProperties") is False, name


@pytest.mark.parametrize(
    ("name", "arguments", "words"),
    [
        ("wiki_read", {"id": "x", "depth": "deep"}, ['"depth"', "integer"]),
        ("wiki_read", {"id": "x", "depth": -1}, ['"depth"', "at least 0"]),
        ("wiki_read", {}, ['"id"', "missing"]),
        ("wiki_write", {"id": "x", "content": "y", "mode": "prepend"}, ['"mode"', '"append"', '"overwrite"']),
        ("wiki_write", {"id": "x", "content": 3}, ['"content"', "string"]),
        ("wiki_search", {"query": "x", "maxResults": 0}, ['"maxResults"', "at least 1"]),
        ("wiki_search", {"query": "x", "tags": "auth"}, ['"tags"', "list"]),
        ("wiki_writ", {"id": "x"}, ['"wiki_writ"', "wiki_write"]),
    ],
)
def test_validation_messages_are_in_amems_words(
    isolated_env: Path, vault: Path, name: str, arguments: dict[str, Any], words: list[str]
) -> None:
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        found["error"] = await client.error(name, **arguments)

    serve(isolated_env, test)
    error = found["error"]
    assert error["code"] == "usage"
    for word in words:
        assert word in error["message"], error
    assert_amems_words(error["message"])
    assert not vault.exists() or not list(vault.rglob("*.md"))


# --- 5. one vocabulary ---------------------------------------------------------------------------------


def test_one_camel_case_name_for_each_idea(isolated_env: Path, vault: Path) -> None:
    tools = listed_tools(isolated_env)
    for name, tool in tools.items():
        for argument in tool.input_schema["properties"]:
            assert re.fullmatch(r"[a-z][a-zA-Z0-9]*", argument), (name, argument)
    search, listing = (set(tools[n].input_schema["properties"]) for n in ("wiki_search", "wiki_list"))
    # the same filters and the same cap, under the same names
    assert {"folder", "tags", "maxResults"} <= search & listing
    assert "prefix" not in listing and "limit" not in listing
    assert "limit" in tools["wiki_history"].input_schema["properties"]


def test_a_former_argument_name_points_at_the_new_one(isolated_env: Path, vault: Path) -> None:
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        found["error"] = await client.error("wiki_list", prefix="projects/")

    serve(isolated_env, test)
    assert found["error"]["code"] == "usage" and '"folder"' in found["error"]["message"]


def test_list_and_search_filter_by_folder_alike(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "projects/auth.md", "# Auth\nThe token rotates.\n")
    write_file(vault / "projects/db.md", "# DB\nA token store.\n")
    write_file(vault / "notes/token.md", "# Token\nA token.\n")
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        found["list"] = await client.ok("wiki_list", folder="projects/", maxResults=1)
        found["search"] = await client.ok("wiki_search", query="token", folder="projects/", maxResults=1)

    serve(isolated_env, test)
    assert found["list"]["total"] == 2 and found["list"]["truncated"] is True
    assert found["list"] == json.loads(run_amem(isolated_env, "list", "projects/", "--limit", "1").stdout)
    assert found["search"]["total"] == 2 and len(found["search"]["hits"]) == 1


@pytest.mark.parametrize("folder", ["../", "..", "a/../../", "/../x", "a\\..\\..", "a\x00b", "C:/x"])
def test_a_folder_outside_the_vault_is_an_invalid_id(isolated_env: Path, vault: Path, folder: str) -> None:
    write_file(vault / "a/note.md", "# Note\ntoken\n")
    write_file(isolated_env / "outside.md", "# Outside\ntoken\n")
    errors: list[dict[str, Any]] = []

    async def test(client: Client) -> None:
        errors.append(await client.error("wiki_list", folder=folder))
        errors.append(await client.error("wiki_search", query="token", folder=folder))

    serve(isolated_env, test)
    for error in errors:
        assert error["code"] == "invalid_id", error
        assert str(isolated_env) not in error["message"]
    if "\x00" not in folder:  # a command line cannot carry NUL
        for args in (["list", folder], ["search", "token", "--folder", folder]):
            done = run_amem(isolated_env, *args)
            assert done.returncode == 5, (args, done.stdout, done.stderr)
            assert json.loads(done.stderr)["error"]["code"] == "invalid_id"


def test_a_conflict_names_the_current_version_in_camel_case(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "n.md", "now\n")
    stale = version_of(b"before\n")
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        found["write"] = await client.error("wiki_write", id="n", content="x", baseVersion=stale)
        found["delete"] = await client.error("wiki_delete", id="n", baseVersion=stale)
        found["move"] = await client.error("wiki_move", id="n", newId="m", baseVersion=stale)

    serve(isolated_env, test)
    cli_errors = [
        json.loads(run_amem(isolated_env, *args).stderr)["error"]
        for args in (
            ["write", "n", "x", "--base-version", stale],
            ["delete", "n", "--base-version", stale],
            ["move", "n", "m", "--base-version", stale],
        )
    ]
    for error in [*found.values(), *cli_errors]:
        assert error["code"] == "conflict"
        assert error["currentVersion"] == version_of(b"now\n") and "current_version" not in error, error
    assert (vault / "n.md").read_text() == "now\n" and not (vault / "m.md").exists()


# --- 6. output schemas and annotations ----------------------------------------------------------------


def test_every_tool_declares_an_output_schema_and_honest_hints(isolated_env: Path, vault: Path) -> None:
    tools = listed_tools(isolated_env)
    for name, tool in tools.items():
        schema = tool.output_schema
        assert schema is not None and schema["type"] == "object" and schema["properties"], name
        assert set(schema["required"]) <= set(schema["properties"]), name
        jsonschema.Draft202012Validator.check_schema(schema)
        hints = tool.annotations
        assert hints is not None, name
        assert name in HINTS, f"say in HINTS what {name} may do, as its declaration does"
        read_only, destructive, idempotent = HINTS[name]
        if read_only:  # the other two hints mean nothing then, and are left out
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (True, None, None), name
        else:  # said only where MCP's defaults (not read-only, destructive, not idempotent) do not hold
            assert hints.read_only_hint is None, name
            assert hints.destructive_hint is (None if destructive else False), name
            assert hints.idempotent_hint is (True if idempotent else None), name
        assert hints.open_world_hint is False, name


def test_every_tools_real_result_validates_against_its_schema(
    isolated_env: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "notes/a.md", "---\ntags: [x]\ncreated: 2026-01-02\n---\n# A\nalpha [[b]] [[nowhere]]\n")
    write_file(vault / "b.md", "# B\nbeta [[notes/a]]\n")
    first = commit_all(vault, "first")
    tools = listed_tools(isolated_env)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in tools}

    async def test(client: Client) -> None:
        async def ok(name: str, **arguments: Any) -> dict[str, Any]:
            results[name].append(await client.ok(name, **arguments))
            return results[name][-1]

        await ok("memory_runtime_info", expectedVaultRoot=str(vault))
        read = await ok("wiki_read", id="notes/a", depth=2)
        await ok("wiki_search", query="alpha beta")
        await ok("wiki_search", query="x", exactTitle="A")
        await ok("wiki_list", folder="notes/", tags=["x"], sort="created")
        written = await ok("wiki_write", id="notes/a", content="more", baseVersion=read["version"])
        await ok("wiki_write", id="c", content="# C\n", mode="overwrite")
        await ok("wiki_edit", id="c", find="# C", replace="# See")
        await ok("wiki_list", since="1d")
        await ok("wiki_history", id="notes/a", limit=5)
        await ok("wiki_restore", id="notes/a", hash=first, baseVersion=written["version"])
        await ok("wiki_move", id="b", newId="bee")
        await ok("wiki_delete", id="c")
        await ok("wiki_check")  # [[nowhere]]: a broken link, with its line and target

    serve(isolated_env, test)
    for name, tool in tools.items():
        assert results[name], f"{name} was not called"
        for result in results[name]:
            jsonschema.validate(result, tool.output_schema or {})
            jsonschema.validate(result, typed_schema(name))
    # The CLI prints the same shapes: its JSON validates against the same schemas.
    for name, args in (
        ("wiki_read", ["read", "notes/a"]),
        ("wiki_search", ["search", "alpha"]),
        ("wiki_list", ["list"]),
        ("wiki_history", ["history", "notes/a"]),
        ("wiki_write", ["write", "d", "text"]),
        ("wiki_edit", ["edit", "d", "--prepend", "first"]),
    ):
        done = run_amem(isolated_env, *args)
        assert done.returncode == 0, done.stderr
        jsonschema.validate(json.loads(done.stdout), tools[name].output_schema or {})
        jsonschema.validate(json.loads(done.stdout), typed_schema(name))
    checked = run_amem(isolated_env, "check")
    assert checked.returncode == 11 and json.loads(checked.stdout)["counts"]["broken-link"] == 1
    jsonschema.validate(json.loads(checked.stdout), tools["wiki_check"].output_schema or {})
    jsonschema.validate(json.loads(checked.stdout), typed_schema("wiki_check"))


def typed_schema(name: str) -> dict[str, Any]:
    """The whole shape of a tool's result as `amem.results` types it, its records' fields included, with no
    key beyond those at the top: what the listed schema, kept short, leaves to the reference."""
    from amem.mcp_server import declared_tools

    returned = typing.get_type_hints(declared_tools()[name].function)["return"]
    schema: dict[str, Any] = TypeAdapter(returned).json_schema(mode="serialization")
    return {**schema, "additionalProperties": False}


def test_a_schema_rejects_a_result_that_lacks_a_field(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "n.md", "# N\n")
    tools = listed_tools(isolated_env)
    read = json.loads(run_amem(isolated_env, "read", "n").stdout)
    del read["version"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(read, tools["wiki_read"].output_schema or {})


# --- 8. a conflict on a missing note -------------------------------------------------------------------


def test_a_conflict_on_a_missing_note_says_it_does_not_exist(isolated_env: Path, vault: Path) -> None:
    stale = version_of(b"something\n")
    found: dict[str, Any] = {}

    async def test(client: Client) -> None:
        found["mcp"] = await client.error("wiki_write", id="absent", content="x", baseVersion=stale)

    serve(isolated_env, test)
    done = run_amem(isolated_env, "write", "absent", "x", "--base-version", stale)
    assert done.returncode == 4
    for error in (found["mcp"], json.loads(done.stderr)["error"]):
        assert error["code"] == "conflict"
        assert "does not exist" in error["message"] and "changed" not in error["message"], error
        assert error["currentVersion"] == version_of(b"")
    assert not (vault / "absent.md").exists()
