"""`wiki_edit` and `wiki_list`'s `since` through a real MCP client spawning the installed `amem mcp`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from amem.digest import sha1_hex
from tests.conftest import write_file
from tests.test_mcp import Client, cli, serve

NOTE = (
    "---\ntitle: Auth  # kept\ncreated: 2026-01-02\n---\n# Auth\n\nTokens expire after 24 hours.\n\n## Status\n\nOld.\n"
)


def test_wiki_edit_finds_replaces_sections_and_prepends(isolated_env: Path, vault: Path) -> None:
    path = write_file(vault / "auth.md", NOTE)
    seen: dict[str, Any] = {}

    async def test(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        edit = listed["wiki_edit"]
        assert edit.annotations is not None and not edit.annotations.read_only_hint
        assert edit.input_schema["required"] == ["id"]
        assert "baseVersion" in (edit.description or "") and "version" in (edit.description or "")
        found = await client.ok(
            "wiki_edit", id="auth", find="24 hours", replace="12 hours", baseVersion=sha1_hex(NOTE.encode())
        )
        assert found["replaced"] == 1 and found["id"] == "auth.md"
        seen["found"] = path.read_text()
        section = await client.ok(
            "wiki_edit", id="auth", section="status", content="New.", baseVersion=found["version"]
        )
        top = await client.ok("wiki_edit", id="auth", prepend="First.", baseVersion=section["version"])
        assert top == {
            "id": "auth.md",
            "version": sha1_hex(path.read_bytes()),
            "bytes": path.stat().st_size,
            "replaced": 1,
        }

    serve(isolated_env, test)
    assert "Tokens expire after 12 hours." in seen["found"]
    text = path.read_text()
    assert text.startswith("---\ntitle: Auth  # kept\ncreated: 2026-01-02\nupdated: ")
    assert text.endswith("---\nFirst.\n\n# Auth\n\nTokens expire after 12 hours.\n\n## Status\n\nNew.\n")


def test_wiki_edit_failures_are_tool_errors_and_nothing_is_written(isolated_env: Path, vault: Path) -> None:
    path = write_file(vault / "auth.md", NOTE + "\nTokens again.\n")
    before = path.read_bytes()

    async def test(client: Client) -> None:
        several = await client.error("wiki_edit", id="auth", find="Tokens", replace="Keys")
        assert several["code"] == "usage" and several["matches"] == 2 and "2 times" in several["message"]
        none = await client.error("wiki_edit", id="auth", section="Install", content="x")
        assert none["code"] == "usage" and none["matches"] == 0
        stale = await client.error("wiki_edit", id="auth", prepend="x", baseVersion=sha1_hex(b"old"))
        assert stale["code"] == "conflict"
        assert (await client.error("wiki_edit", id="nope", prepend="x"))["code"] == "not_found"
        assert (await client.error("wiki_edit", id="auth", find="Tokens", prepend="x"))["code"] == "usage"
        assert (await client.error("wiki_edit", id="auth", section="Status"))["code"] == "usage"
        every = await client.ok("wiki_edit", id="auth", find="Tokens", replace="Keys", all=True)
        assert every["replaced"] == 2

    serve(isolated_env, test)
    after = path.read_text()
    assert after.count("Keys") == 2 and "Tokens" not in after and not (vault / "nope.md").exists()
    assert after.split("\n")[4:] == before.decode().replace("Tokens", "Keys").split("\n")[3:]  # and updated


def test_wiki_list_since_equals_the_command(isolated_env: Path, vault: Path) -> None:
    for name, age in (("old.md", 10 * 86400), ("a-recent.md", 3600), ("b-fresh.md", 60)):
        note = write_file(vault / name, f"# {name}\n")
        os.utime(note, (time.time() - age, time.time() - age))
    results: dict[str, Any] = {}

    async def test(client: Client) -> None:
        results["since"] = await client.ok("wiki_list", since="2d")
        results["by_id"] = await client.ok("wiki_list", since="2d", sort="id")
        bad = await client.error("wiki_list", since="yesterday")
        assert bad["code"] == "usage" and "since" in bad["message"]

    serve(isolated_env, test)
    assert [n["id"] for n in results["since"]["notes"]] == ["b-fresh.md", "a-recent.md"]
    assert results["since"]["total"] == 2
    assert [n["id"] for n in results["by_id"]["notes"]] == ["a-recent.md", "b-fresh.md"]
    assert results["since"] == json.loads(cli(isolated_env, "list", "--since", "2d").stdout)
