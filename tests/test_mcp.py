"""`amem mcp` through a real MCP client: the SDK's ClientSession over stdio_client, spawning the installed
`amem mcp` in this test's vault, HOME and XDG folders."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent

from amem.semantic import semantic
from tests.conftest import write_file
from tests.gitrepo import commit_all, init_repo, set_identity
from tests.installed import amem_bin

TOOLS = {
    "memory_runtime_info": {"expectedCwd", "expectedVaultRoot", "expectedModuleRoot", "expectedProfile"},
    "wiki_read": {"id", "depth", "maxChars", "lines", "section"},
    "wiki_search": {"query", "queries", "exactTitle", "maxResults", "tags", "folder", "explain"},
    "wiki_list": {"folder", "tags", "sort", "maxResults", "since"},
    "wiki_write": {"id", "content", "mode", "baseVersion", "requireExisting"},
    "wiki_edit": {"id", "find", "replace", "all", "section", "content", "prepend", "baseVersion"},
    "wiki_delete": {"id", "baseVersion"},
    "wiki_move": {"id", "newId", "baseVersion"},
    "wiki_history": {"id", "limit"},
    "wiki_restore": {"id", "hash", "baseVersion"},
    "wiki_check": {"folder"},
}


class Client:
    """One session with a running `amem mcp`."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, name: str, **arguments: Any) -> CallToolResult:
        return await self.session.call_tool(name, arguments)

    async def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call(name, **arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        first = result.content[0]
        assert isinstance(first, TextContent) and json.loads(first.text) == result.structured_content
        data: dict[str, Any] = result.structured_content
        return data

    async def error(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call(name, **arguments)
        assert result.is_error, result.content
        assert result.structured_content is not None
        error: dict[str, Any] = result.structured_content["error"]
        return error


def _environment(work: Path) -> dict[str, str]:
    names = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "AMEM_VAULT", "GIT_CONFIG_NOSYSTEM")
    env = {name: os.environ[name] for name in names if name in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("GIT_")})
    env["PATH"] = os.environ.get("PATH", "")
    return env


@asynccontextmanager
async def _connect(work: Path, errlog: Any) -> Any:
    amem = amem_bin(work.parent / "bin") / "amem"
    params = StdioServerParameters(command=str(amem), args=["mcp"], env=_environment(work), cwd=str(work))
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Client(session)


def serve(work: Path, test: Callable[[Client], Awaitable[None]]) -> str:
    """Run `test` against a fresh server; return what the server wrote on stderr."""
    log = work.parent / "server-stderr.log"

    async def main() -> None:
        with log.open("w") as errlog:
            async with _connect(work, errlog) as client:
                with anyio.fail_after(60):
                    await test(client)

    anyio.run(main)
    return log.read_text()


#: the most characters tools/list may take (SPEC §18): names, descriptions and schemas of every tool
TOOL_LIST_CHARS = 12_000


def tool_list_chars(listed: Any) -> int:
    """The characters of a tools/list result as the SDK sends it: compact JSON, defaults left out."""
    return len(listed.model_dump_json(by_alias=True, exclude_none=True))


def cli(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amem", *args],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


def test_lists_the_tools_with_the_source_names_and_descriptions(isolated_env: Path, vault: Path) -> None:
    async def test(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        assert set(listed) == set(TOOLS)
        for name, arguments in TOOLS.items():
            assert set(listed[name].input_schema["properties"]) == arguments, name
        assert listed["wiki_restore"].input_schema["required"] == ["id", "hash", "baseVersion"]
        assert listed["wiki_write"].input_schema["properties"]["mode"]["enum"] == ["append", "overwrite"]
        read, search, write = (listed[n].description or "" for n in ("wiki_read", "wiki_search", "wiki_write"))
        assert "[[link]]" in read and "depth" in read and "tokens" in read
        assert "total" in search and "truncated" in search
        assert "baseVersion" in write and "version" in write
        assert listed["wiki_read"].annotations is not None and listed["wiki_read"].annotations.read_only_hint
        assert listed["wiki_write"].annotations is not None and not listed["wiki_write"].annotations.read_only_hint

    serve(isolated_env, test)


def test_the_help_names_every_tool_the_server_offers_and_the_list_stays_small(isolated_env: Path, vault: Path) -> None:
    listed: dict[str, Any] = {}

    async def test(client: Client) -> None:
        listed["tools"] = await client.session.list_tools()

    serve(isolated_env, test)
    amem = amem_bin(isolated_env.parent / "bin") / "amem"
    helped = subprocess.run([str(amem), "mcp", "--help"], capture_output=True, text=True, timeout=60, check=True)
    offered = {tool.name for tool in listed["tools"].tools}
    assert set(re.findall(r"\b(?:memory|wiki)_\w+", helped.stdout)) == offered
    assert tool_list_chars(listed["tools"]) <= TOOL_LIST_CHARS


def test_write_read_search_equal_the_commands_output(isolated_env: Path, vault: Path) -> None:
    results: dict[str, Any] = {}

    async def test(client: Client) -> None:
        written = await client.ok("wiki_write", id="projects/auth", content="# Auth\nThe auth token rotates. [[b]]")
        assert written["id"] == "projects/auth.md" and written["created"] is True and written["mode"] == "append"
        await client.ok("wiki_write", id="b", content="the other note", mode="overwrite")
        read = await client.ok("wiki_read", id="projects/auth")
        assert read["version"] == written["version"]
        assert "The auth token rotates." in read["body"]
        assert [n["id"] for n in read["linkedNotes"]] == ["b.md"]
        assert (await client.ok("wiki_read", id="projects/auth", depth=0))["linkedNotes"] == []
        results["search"] = await client.ok("wiki_search", query="auth token")
        results["exact"] = await client.ok("wiki_search", query="x", exactTitle="AUTH")
        results["read"] = await client.ok("wiki_read", id="b")
        results["capped"] = await client.ok("wiki_search", query="the auth", maxResults=1)

    serve(isolated_env, test)
    search = results["search"]
    # b.md matches through the id of the note linking to it.
    assert [hit["id"] for hit in search["hits"]] == ["projects/auth.md", "b.md"] and search["total"] == 2
    assert search == json.loads(cli(isolated_env, "search", "auth", "token").stdout)
    assert results["exact"] == json.loads(cli(isolated_env, "search", "x", "--exact-title", "AUTH").stdout)
    assert results["capped"]["total"] == 2 and results["capped"]["truncated"] is True
    # wiki_read's default budget is the command's --max-chars 20000
    assert results["read"] == json.loads(cli(isolated_env, "read", "b", "--max-chars", "20000").stdout)
    assert "conflict" in results["read"]


def test_list_and_search_filters_equal_the_commands_output(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "projects/auth.md", "---\ntags: [auth]\n---\n# Auth\nThe token rotates.\n")
    write_file(vault / "projects/db.md", "# DB\nNo token here. #storage\n")
    write_file(vault / "notes/token.md", "# Token\nA token #auth\n")
    results: dict[str, Any] = {}

    async def test(client: Client) -> None:
        results["all"] = await client.ok("wiki_list")
        results["folder"] = await client.ok("wiki_list", folder="projects/", sort="modified", maxResults=1)
        results["tagged"] = await client.ok("wiki_list", tags=["#AUTH"])
        results["search"] = await client.ok("wiki_search", query="token", tags=["auth"], folder="projects/")
        bad = await client.error("wiki_list", sort="size")
        assert bad["code"] == "usage"

    serve(isolated_env, test)
    assert [n["id"] for n in results["all"]["notes"]] == ["notes/token.md", "projects/auth.md", "projects/db.md"]
    assert results["folder"]["total"] == 2 and results["folder"]["truncated"] is True
    assert results["folder"] == json.loads(
        cli(isolated_env, "list", "projects/", "--sort", "modified", "--limit", "1").stdout
    )
    assert [n["id"] for n in results["tagged"]["notes"]] == ["notes/token.md", "projects/auth.md"]
    assert [h["id"] for h in results["search"]["hits"]] == ["projects/auth.md"]
    assert results["search"] == json.loads(
        cli(isolated_env, "search", "token", "--tag", "auth", "--folder", "projects/").stdout
    )


def test_read_says_when_a_conflict_copy_lies_beside_the_note(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "plan.md", "# Plan\nmine\n")
    write_file(vault / "plan.conflict-0123abcd.md", "# Plan\ntheirs\n")
    write_file(vault / "other.md", "# Other\n")
    results: dict[str, Any] = {}

    async def test(client: Client) -> None:
        results["plan"] = await client.ok("wiki_read", id="plan")
        results["other"] = await client.ok("wiki_read", id="other")

    serve(isolated_env, test)
    assert results["plan"]["conflict"] is True and results["other"]["conflict"] is False
    assert results["plan"] == json.loads(cli(isolated_env, "read", "plan", "--max-chars", "20000").stdout)


def test_delete_with_a_stale_version_is_a_conflict_and_the_server_lives_on(isolated_env: Path, vault: Path) -> None:
    async def test(client: Client) -> None:
        first = await client.ok("wiki_write", id="gone", content="one")
        await client.ok("wiki_write", id="gone", content="two")
        error = await client.error("wiki_delete", id="gone", baseVersion=first["version"])
        assert error["code"] == "conflict" and error["message"]
        current = await client.ok("wiki_read", id="gone")
        deleted = await client.ok("wiki_delete", id="gone", baseVersion=current["version"])
        assert deleted["id"] == "gone.md" and deleted["version"] == current["version"]
        missing = await client.error("wiki_read", id="gone")
        assert missing["code"] == "not_found"

    serve(isolated_env, test)
    assert not (vault / "gone.md").exists()


def test_move_rewrites_the_links_to_the_note(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "notes/auth.md", "# Auth\nTokens.\n")
    write_file(vault / "index.md", "See [[notes/auth|the auth note]] and [[notes/auth#Tokens]].\n")

    async def test(client: Client) -> None:
        taken = await client.error("wiki_move", id="notes/auth", newId="index")
        assert taken["code"] == "conflict"
        moved = await client.ok("wiki_move", id="notes/auth", newId="projects/auth/tokens")
        assert moved["id"] == "projects/auth/tokens.md" and moved["from"] == "notes/auth.md"
        assert moved["rewritten"] == [{"id": "index.md", "links": 2}]
        read = await client.ok("wiki_read", id="index", depth=1)
        assert [n["id"] for n in read["linkedNotes"]] == ["projects/auth/tokens.md"]
        found = await client.ok("wiki_search", query="tokens")
        assert "notes/auth.md" not in [h["id"] for h in found["hits"]]

    serve(isolated_env, test)
    text = (vault / "index.md").read_text(encoding="utf-8")
    # the shortest path that still resolves uniquely, alias and heading kept
    assert "See [[auth/tokens|the auth note]] and [[auth/tokens#Tokens]]." in text
    assert not (vault / "notes/auth.md").exists()


def test_a_stale_base_version_is_a_conflict_and_the_server_lives_on(isolated_env: Path, vault: Path) -> None:
    async def test(client: Client) -> None:
        first = await client.ok("wiki_write", id="n", content="one")
        second = await client.ok("wiki_write", id="n", content="two", baseVersion=first["version"])
        error = await client.error("wiki_write", id="n", content="three", baseVersion=first["version"])
        assert error["code"] == "conflict" and error["message"]
        read = await client.ok("wiki_read", id="n")
        assert read["version"] == second["version"] and "three" not in read["body"]
        error = await client.error("wiki_restore", id="n", hash="HEAD", baseVersion=first["version"])
        assert error["code"] in ("git", "conflict")
        missing = await client.error("wiki_write", id="new", content="x", requireExisting=True)
        assert missing["code"] == "not_found"

    serve(isolated_env, test)
    assert not (vault / "new.md").exists()


@pytest.mark.parametrize(
    ("note_id", "code"),
    [("../outside", "invalid_id"), ("a\\b", "invalid_id"), ("nope", "not_found"), ("", "invalid_id")],
)
def test_a_bad_id_is_a_tool_error_without_a_host_path(isolated_env: Path, vault: Path, note_id: str, code: str) -> None:
    async def test(client: Client) -> None:
        error = await client.error("wiki_read", id=note_id)
        assert error["code"] == code
        assert str(isolated_env) not in error["message"]
        assert (await client.error("wiki_write", id=note_id, content="x", requireExisting=True))["code"] == code
        assert (await client.ok("wiki_write", id="still/alive", content="yes"))["created"] is True

    serve(isolated_env, test)
    assert not (isolated_env / "outside.md").exists()


def test_arguments_of_the_wrong_type_are_a_tool_error(isolated_env: Path, vault: Path) -> None:
    async def test(client: Client) -> None:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("wiki_read", {"id": "x", "depth": "deep"}),
            ("wiki_read", {}),
            ("wiki_write", {"id": "x", "content": "y", "mode": "prepend"}),
            ("wiki_search", {"query": "x", "maxResults": 0}),
        ]
        calls.append(("wiki_unknown", {"id": "x"}))
        for name, arguments in calls:
            error = await client.error(name, **arguments)
            assert error["code"] == "usage" and error["message"], (name, arguments)
        assert (await client.ok("wiki_search", query="anything"))["total"] == 0

    serve(isolated_env, test)
    assert not vault.exists() or not list(vault.rglob("*.md"))


def test_reads_back_what_another_program_wrote_meanwhile(isolated_env: Path, vault: Path) -> None:
    async def test(client: Client) -> None:
        written = await client.ok("wiki_write", id="shared", content="first words")
        assert (await client.ok("wiki_search", query="zebra"))["total"] == 0
        # Another program rewrites the note in place and adds one, while the server is running.
        rewrite = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])"
        subprocess.run([sys.executable, "-c", rewrite, str(vault / "shared.md"), "a zebra was here\n"], check=True)
        subprocess.run([sys.executable, "-c", rewrite, str(vault / "added.md"), "another zebra\n"], check=True)
        read = await client.ok("wiki_read", id="shared")
        assert read["body"] == "a zebra was here\n" and read["modifiedExternally"] is True
        assert read["version"] != written["version"]
        found = await client.ok("wiki_search", query="zebra")
        assert sorted(hit["id"] for hit in found["hits"]) == ["added.md", "shared.md"]
        (vault / "added.md").unlink()
        assert [hit["id"] for hit in (await client.ok("wiki_search", query="zebra"))["hits"]] == ["shared.md"]

    serve(isolated_env, test)


def test_history_and_restore_through_git(isolated_env: Path, vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "n.md", "old text\n")
    old = commit_all(vault, "first")
    write_file(vault / "n.md", "new text\n")
    commit_all(vault, "second")

    async def test(client: Client) -> None:
        history = await client.ok("wiki_history", id="n")
        assert [c["message"] for c in history["commits"]] == ["second", "first"]
        assert (await client.ok("wiki_history", id="n", limit=1))["commits"][0]["message"] == "second"
        current = await client.ok("wiki_read", id="n")
        restored = await client.ok("wiki_restore", id="n", hash=old, baseVersion=current["version"])
        assert restored["hash"] == old and restored["commit"] is None
        assert (await client.ok("wiki_read", id="n"))["body"] == "old text\n"
        assert (await client.error("wiki_restore", id="n", hash="nosuchrev", baseVersion=restored["version"]))[
            "code"
        ] == "not_found"
        error = await client.error("wiki_restore", id="n", hash=old, baseVersion=current["version"])
        assert error["code"] == "conflict"

    serve(isolated_env, test)
    assert (vault / "n.md").read_text() == "old text\n"


def test_runtime_info_is_the_info_envelope(isolated_env: Path, vault: Path) -> None:
    results: dict[str, Any] = {}

    async def test(client: Client) -> None:
        results["plain"] = await client.ok("memory_runtime_info")
        results["checked"] = await client.ok(
            "memory_runtime_info", expectedCwd=str(isolated_env), expectedVaultRoot=str(vault)
        )
        results["wrong"] = await client.ok("memory_runtime_info", expectedVaultRoot=str(isolated_env / "elsewhere"))

    serve(isolated_env, test)
    assert results["plain"] == json.loads(cli(isolated_env, "info").stdout)
    assert results["checked"]["preflight"]["safeToWrite"] is True
    assert [m["field"] for m in results["wrong"]["mismatches"]] == ["vaultRoot"]
    assert results["wrong"]["preflight"]["safeToWrite"] is False


def test_diagnostics_go_to_stderr_never_into_the_protocol(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "latin1.md", b"caf\xe9 [[nowhere]]\n")

    async def test(client: Client) -> None:
        read = await client.ok("wiki_read", id="latin1")
        assert read["body"] == "caf\ufffd [[nowhere]]\n"
        assert (await client.ok("wiki_search", query="nowhere"))["total"] == 0

    stderr = serve(isolated_env, test)
    assert "not valid UTF-8" in stderr


def test_without_the_sdk_the_command_says_how_to_install_it(isolated_env: Path, vault: Path) -> None:
    probe = "import sys\nsys.modules['mcp'] = None\nfrom amem.cli import main\nsys.argv = ['amem', 'mcp']\nmain()\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert error["code"] == "usage" and 'pip install "amem[mcp]"' in error["message"]


def test_other_commands_do_not_load_the_sdk(isolated_env: Path, vault: Path) -> None:
    probe = (
        "import sys\nfrom amem.cli import run\n"
        "for argv in (['write', 'x', 'y'], ['read', 'x'], ['search', 'y'], ['--help']):\n    run(argv)\n"
        "print(sorted(m for m in ('mcp', 'mcp_types', 'pydantic', 'anyio', 'amem.mcp_server') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[-1] == "[]", result.stderr


def test_the_server_keeps_the_index_of_its_vault(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "seed.md", "seed\n")
    outcome: dict[str, Any] = {}

    async def test(client: Client) -> None:
        await client.ok("wiki_search", query="seed")
        second = await anyio.to_thread.run_sync(lambda: cli(isolated_env, "index", "--watch"))
        outcome["second"] = second
        write_file(vault / "seed.md", "changed in place\n")
        outcome["found"] = await client.ok("wiki_search", query="changed")

    serve(isolated_env, test)
    second = outcome["second"]
    assert second.returncode == 9 and "another amem keeper" in json.loads(second.stderr)["error"]["message"]
    assert [hit["id"] for hit in outcome["found"]["hits"]] == ["seed.md"]
    assert not (vault / ".amem-sync").exists()  # the server's keeper stopped with it
    from amem.config import load_config
    from amem.index.index import VaultIndex
    from amem.keeperproto.client import synced

    index = VaultIndex(load_config())
    try:
        assert synced(index) is False
    finally:
        index.close()


def test_sigterm_stops_the_server_and_its_keeper_while_the_client_holds_stdin(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "a.md", "alpha\n")
    amem = amem_bin(isolated_env.parent / "bin") / "amem"
    server = subprocess.Popen([str(amem), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Bounds against a hang, not measures: at a load of 20 on 2 cores the server took up to 34 s to
        # import the SDK and start its keeper.
        deadline = time.monotonic() + 300
        while not (vault / ".amem-sync").is_dir():  # the keeper is up
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.05)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=120) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert not (vault / ".amem-sync").exists()


@pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")
def test_semantic_search_through_the_server_is_fused_as_the_command_is(isolated_env: Path, vault: Path) -> None:
    config_home = Path(os.environ["XDG_CONFIG_HOME"]) / "amem"
    write_file(config_home / "config.yaml", "semantic: true\n")
    write_file(vault / "tokens.md", "# Token lifetime\nAccess tokens expire after one day; refresh them early.\n")
    write_file(vault / "deploy.md", "# Deploying\nShip the build to the staging servers first.\n")
    results: list[dict[str, Any]] = []

    async def test(client: Client) -> None:
        for _ in range(2):  # the second search reads the vectors the server keeps in memory
            results.append(await client.ok("wiki_search", query="how long do tokens live"))

    serve(isolated_env, test)
    assert results[0]["fused"] is True and results[0]["semantic"] == "ok"
    assert results[0]["hits"][0]["id"] == "tokens.md"
    assert results[1] == results[0]
    assert results[0] == json.loads(cli(isolated_env, "search", "how", "long", "do", "tokens", "live").stdout)
