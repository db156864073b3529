"""Claude's memory tool on a vault (SPEC §20): `amem memory-tool` as installed, in a subprocess, and
`VaultMemoryTool` through the real `anthropic` SDK, its tool runner driven by a local mock of the
Messages API (no network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.installed import Run, amem_bin

Tool = Callable[..., Run]


@pytest.fixture
def tool(tmp_path: Path, vault: Path) -> Tool:
    """`tool(command="view", path="/memories")`: the installed `amem memory-tool` with that input on stdin."""
    program = str(amem_bin(tmp_path / "bin") / "amem")

    def invoke(raw: str | None = None, **command: Any) -> Run:
        data = raw if raw is not None else json.dumps(command)
        done = subprocess.run(
            [program, "memory-tool"], input=data, capture_output=True, text=True, cwd=vault.parent, timeout=60
        )
        return Run(done)

    return invoke


def ok(run: Run) -> str:
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    return run.stdout.removesuffix("\n")


def refused(run: Run, code: str) -> str:
    assert run.code != 0 and run.stdout == "", (run.code, run.stdout)
    assert run.error["code"] == code, run.error
    return str(run.error["message"])


# --- each command, worded as the SDK's own local-filesystem tool words it -----------------------------------


def test_create_then_view_numbers_the_lines_and_keeps_the_bytes(tool: Tool, vault: Path) -> None:
    assert ok(tool(command="create", path="/memories/prefs.md", file_text="- tabs\n- dark mode\n")) == (
        "File created successfully at: /memories/prefs.md"
    )
    assert (vault / "memories" / "prefs.md").read_bytes() == b"- tabs\n- dark mode\n"  # no created/updated
    assert ok(tool(command="view", path="/memories/prefs.md")) == (
        "Here's the content of /memories/prefs.md with line numbers:\n     1\t- tabs\n     2\t- dark mode\n     3\t"
    )
    assert ok(tool(command="view", path="/memories/prefs.md", view_range=[2, -1])) == (
        "Here's the content of /memories/prefs.md with line numbers:\n     2\t- dark mode\n     3\t"
    )
    assert ok(tool(command="view", path="/memories/prefs.md", view_range=[1, 1])).endswith("     1\t- tabs")


def test_view_of_a_folder_lists_two_levels_with_sizes_and_no_hidden_items(tool: Tool, vault: Path) -> None:
    write_file(vault / "memories" / "a.md", "x" * 2048)
    write_file(vault / "memories" / "sub" / "b.md", "hello\n")
    write_file(vault / "memories" / "sub" / "deep" / "c.md", "too deep\n")
    write_file(vault / "memories" / ".hidden.md", "secret\n")
    lines = ok(tool(command="view", path="/memories")).split("\n")
    assert lines[0] == "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:"
    assert lines[1].endswith("\t/memories")
    assert lines[2:] == ["2K\t/memories/a.md", lines[3], "6B\t/memories/sub/b.md", lines[5]]
    assert lines[3].endswith("\t/memories/sub/") and lines[5].endswith("\t/memories/sub/deep/")
    assert "c.md" not in "\n".join(lines) and "hidden" not in "\n".join(lines[1:])


def test_an_empty_memory_is_an_empty_listing_and_creates_nothing(tool: Tool, vault: Path) -> None:
    assert ok(tool(command="view", path="/memories")).endswith("\n0B\t/memories")
    assert not vault.exists()


def test_create_of_an_existing_file_is_refused_and_changes_nothing(tool: Tool, vault: Path) -> None:
    write_file(vault / "memories" / "x.md", "mine\n")
    assert refused(tool(command="create", path="/memories/x.md", file_text="other"), "conflict") == (
        "File /memories/x.md already exists"
    )
    assert (vault / "memories" / "x.md").read_text() == "mine\n"


def test_str_replace_must_match_exactly_once(tool: Tool, vault: Path) -> None:
    note = write_file(vault / "memories" / "p.md", "a\nuse tabs\nc\nd\ne\nf\n")
    assert ok(tool(command="str_replace", path="/memories/p.md", old_str="tabs", new_str="spaces")) == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\ta\n     2\tuse spaces\n     3\tc\n     4\td"
    )
    assert note.read_bytes() == b"a\nuse spaces\nc\nd\ne\nf\n"
    message = refused(tool(command="str_replace", path="/memories/p.md", old_str="zzz", new_str="y"), "usage")
    assert message == "No replacement was performed, old_str `zzz` did not appear verbatim in /memories/p.md."
    message = refused(tool(command="str_replace", path="/memories/p.md", old_str="\n", new_str="y"), "usage")
    assert message.startswith("No replacement was performed. Multiple occurrences of old_str `\n` in lines: 1, 2, 3")
    assert message.endswith(". Please ensure it is unique")
    write_file(note, "x\nx\n")
    message = refused(tool(command="str_replace", path="/memories/p.md", old_str="x", new_str="y"), "usage")
    assert message == (
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 2. Please ensure it is unique"
    )
    assert note.read_bytes() == b"x\nx\n"


def test_insert_at_a_line_and_out_of_range(tool: Tool, vault: Path) -> None:
    note = write_file(vault / "memories" / "p.md", "one\r\nthree")
    assert ok(tool(command="insert", path="/memories/p.md", insert_line=1, insert_text="two\n")) == (
        "The file /memories/p.md has been edited."
    )
    assert note.read_bytes() == b"one\r\ntwo\nthree\n"
    assert refused(tool(command="insert", path="/memories/p.md", insert_line=9, insert_text="x"), "usage") == (
        "Invalid `insert_line` parameter: 9. It should be within the range [0, 3]."
    )


def test_concurrent_inserts_each_land_once(tmp_path: Path, vault: Path) -> None:
    note = write_file(vault / "memories" / "log.md", "end\n")
    program = str(amem_bin(tmp_path / "bin") / "amem")
    inputs = [
        json.dumps({"command": "insert", "path": "/memories/log.md", "insert_line": 0, "insert_text": f"n{i}"})
        for i in range(6)
    ]
    procs = [
        subprocess.Popen([program, "memory-tool"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in inputs
    ]
    for proc, data in zip(procs, inputs, strict=True):  # every input given before any result is awaited
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.close()
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.read() == "The file /memories/log.md has been edited.\n"
        assert proc.wait(timeout=60) == 0
    lines = note.read_text().splitlines()
    assert sorted(lines) == sorted([*(f"n{i}" for i in range(6)), "end"]) and lines[-1] == "end"


def test_edits_of_a_missing_file_say_it_does_not_exist(tool: Tool, vault: Path) -> None:
    expected = "The path /memories/none.md does not exist. Please provide a valid path."
    assert refused(tool(command="view", path="/memories/none.md"), "not_found") == expected
    assert refused(tool(command="str_replace", path="/memories/none.md", old_str="a", new_str="b"), "not_found") == (
        expected
    )
    assert refused(tool(command="insert", path="/memories/none.md", insert_line=0, insert_text="a"), "not_found") == (
        expected
    )
    assert refused(tool(command="delete", path="/memories/none.md"), "not_found") == (
        "The path /memories/none.md does not exist"
    )
    assert not (vault / "memories").exists()


def test_delete_a_file_and_a_folders_notes(tool: Tool, vault: Path) -> None:
    write_file(vault / "memories" / "a.md", "a\n")
    write_file(vault / "memories" / "old" / "b.md", "b\n")
    write_file(vault / "memories" / "old" / "deeper" / "c.md", "c\n")
    assert ok(tool(command="delete", path="/memories/a.md")) == "Successfully deleted /memories/a.md"
    assert ok(tool(command="delete", path="/memories/old")) == "Successfully deleted /memories/old"
    assert sorted(p.name for p in (vault / "memories").rglob("*")) == []
    assert refused(tool(command="delete", path="/memories"), "usage") == "Cannot delete the /memories directory itself"
    assert (vault / "memories").is_dir()


def test_an_extension_that_is_not_a_notes_is_refused_naming_the_allowed_ones(tool: Tool, vault: Path) -> None:
    message = refused(tool(command="create", path="/memories/x.txt", file_text="x"), "invalid_id")
    assert message == "The path /memories/x.txt is not a memory file: a memory file's name ends in .md"
    assert not vault.exists()


def test_a_bad_input_is_a_usage_error(tool: Tool) -> None:
    assert "JSON object" in refused(tool("not json"), "usage")
    assert "Unknown command" in refused(tool(command="format", path="/memories"), "usage")
    assert "file_text" in refused(tool(command="create", path="/memories/x.md"), "usage")
    assert "view_range" in refused(tool(command="view", path="/memories", view_range=[1]), "usage")


# --- containment ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/memories/../x.md", "Path /memories/../x.md would escape /memories directory"),
        ("/memories/%2e%2e/x.md", "Path /memories/%2e%2e/x.md would escape /memories directory"),
        ("/memories/a/%2E%2E/%2e%2e%2fx.md", "Path /memories/a/%2E%2E/%2e%2e%2fx.md would escape /memories directory"),
        ("/etc/passwd", "Path must start with /memories, got: /etc/passwd"),
        ("/memoriesX/a.md", "Path must start with /memories, got: /memoriesX/a.md"),
        ("memories/a.md", "Path must start with /memories, got: memories/a.md"),
    ],
)
def test_paths_that_leave_the_memory_folder_are_refused(tool: Tool, vault: Path, path: str, message: str) -> None:
    write_file(vault / "x.md", "outside the memory folder\n")
    for command in (
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "delete", "path": path},
    ):
        assert refused(tool(**command), "invalid_id") == message
    assert (vault / "x.md").read_text() == "outside the memory folder\n"


def test_symlinks_that_lead_out_are_refused(tool: Tool, vault: Path, tmp_path: Path) -> None:
    secret = write_file(tmp_path / "outside" / "secret.md", "token\n")
    memories = vault / "memories"
    write_file(memories / "ok.md", "fine\n")
    (memories / "leak.md").symlink_to(secret)
    (memories / "elsewhere").symlink_to(secret.parent, target_is_directory=True)
    for command in (
        {"command": "view", "path": "/memories/leak.md"},
        {"command": "str_replace", "path": "/memories/leak.md", "old_str": "token", "new_str": "x"},
        {"command": "view", "path": "/memories/elsewhere/secret.md"},
        {"command": "create", "path": "/memories/elsewhere/new.md", "file_text": "x"},
        {"command": "delete", "path": "/memories/elsewhere/secret.md"},
        {"command": "rename", "old_path": "/memories/ok.md", "new_path": "/memories/elsewhere/ok.md"},
    ):
        assert refused(tool(**command), "invalid_id") == "Path would escape /memories directory via symlink"
    listing = ok(tool(command="view", path="/memories"))
    assert "leak" not in listing and "elsewhere" not in listing and "ok.md" in listing
    assert secret.read_text() == "token\n" and sorted(p.name for p in secret.parent.iterdir()) == ["secret.md"]


def test_a_memory_folder_that_is_a_symlink_out_of_the_vault_is_refused(tool: Tool, vault: Path, tmp_path: Path) -> None:
    write_file(tmp_path / "outside" / "secret.md", "token\n")
    vault.mkdir()
    (vault / "memories").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert refused(tool(command="view", path="/memories"), "invalid_id") == (
        "Path would escape /memories directory via symlink"
    )


# --- the notes are the vault's ---------------------------------------------------------------------------


def test_rename_rewrites_links_and_search_finds_the_note(tool: Tool, vault: Path, amem: Any) -> None:
    write_file(vault / "memories" / "prefs.md", "The user prefers kumquats.\n")
    write_file(vault / "memories" / "index.md", "See [[prefs]].\n")
    write_file(vault / "notes" / "home.md", "---\ntitle: Home\n---\nMemory: [[memories/prefs|the prefs]]\n")
    assert ok(tool(command="rename", old_path="/memories/prefs.md", new_path="/memories/user/likes.md")) == (
        "Successfully renamed /memories/prefs.md to /memories/user/likes.md"
    )
    assert not (vault / "memories" / "prefs.md").exists()
    assert (vault / "memories" / "user" / "likes.md").read_text() == "The user prefers kumquats.\n"
    home = (vault / "notes" / "home.md").read_text()
    assert "[[user/likes|the prefs]]" in home and "updated:" in home  # an ordinary note, as move does
    assert (vault / "memories" / "index.md").read_text() == "See [[likes]].\n"  # a memory file: links only
    result = amem("search", "kumquats")
    assert result.exit_code == 0
    assert [hit["id"] for hit in json.loads(result.stdout)["hits"]] == ["memories/user/likes.md"]


def test_rename_of_a_folder_moves_its_notes_and_refuses_an_existing_destination(tool: Tool, vault: Path) -> None:
    write_file(vault / "memories" / "old" / "a.md", "a\n")
    write_file(vault / "memories" / "old" / "in" / "b.md", "b\n")
    write_file(vault / "memories" / "taken.md", "t\n")
    assert refused(tool(command="rename", old_path="/memories/old", new_path="/memories/taken.md"), "conflict") == (
        "The destination /memories/taken.md already exists"
    )
    assert ok(tool(command="rename", old_path="/memories/old", new_path="/memories/new"))
    assert sorted(p.relative_to(vault).as_posix() for p in (vault / "memories").rglob("*.md")) == [
        "memories/new/a.md",
        "memories/new/in/b.md",
        "memories/taken.md",
    ]
    assert not (vault / "memories" / "old").exists()


def test_the_folder_is_the_configured_one(tool: Tool, vault: Path) -> None:
    write_file(Path(os.environ["XDG_CONFIG_HOME"]) / "amem" / "config.yaml", "memoryTool:\n  folder: agents/mem\n")
    ok(tool(command="create", path="/memories/x.md", file_text="x\n"))
    assert (vault / "agents" / "mem" / "x.md").read_text() == "x\n"


@pytest.mark.parametrize("folder", ["../out", "/tmp", ".hidden", "a/../../b", "''"])
def test_a_folder_outside_the_vault_is_a_config_error(tool: Tool, vault: Path, folder: str) -> None:
    write_file(Path(os.environ["XDG_CONFIG_HOME"]) / "amem" / "config.yaml", f"memoryTool:\n  folder: {folder}\n")
    assert "memoryTool.folder" in refused(tool(command="view", path="/memories"), "config")


# --- through the anthropic SDK ---------------------------------------------------------------------------


def test_vault_memory_tool_executes_commands_and_raises_tool_errors(vault: Path) -> None:
    from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
    from anthropic.types.beta import BetaMemoryTool20250818CreateCommand, BetaMemoryTool20250818ViewCommand

    from amem.memorytool import VaultMemoryTool

    memory = VaultMemoryTool(vault=vault)
    assert isinstance(memory, BetaAbstractMemoryTool)
    assert memory.to_dict() == {"type": "memory_20250818", "name": "memory"}
    create = BetaMemoryTool20250818CreateCommand(command="create", path="/memories/a.md", file_text="hi\n")
    assert memory.execute(create) == "File created successfully at: /memories/a.md"
    view = BetaMemoryTool20250818ViewCommand(command="view", path="/memories/a.md")
    assert memory.execute(view) == "Here's the content of /memories/a.md with line numbers:\n     1\thi\n     2\t"
    with pytest.raises(ToolError) as caught:
        memory.execute(create)
    assert caught.value.content == "File /memories/a.md already exists"
    with pytest.raises(ToolError) as caught:
        memory.execute(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/%2e%2e/x.md"))
    assert caught.value.content == "Path /memories/%2e%2e/x.md would escape /memories directory"


def _message(index: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": f"msg_{index}",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _tool_use(name: str, **command: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": name, "name": "memory", "input": command}


def test_the_sdks_tool_runner_calls_the_vault_and_sends_the_results_back(vault: Path) -> None:
    import anthropic
    import httpx2 as httpx  # the HTTP client of anthropic 2.x (httpx's successor, the same API)

    from amem.memorytool import VaultMemoryTool

    replies = [
        _message(
            1,
            [
                _tool_use("t1", command="create", path="/memories/prefs.md", file_text="- tabs\n"),
                _tool_use("t2", command="view", path="/memories/../x.md"),
            ],
            "tool_use",
        ),
        _message(
            2,
            [_tool_use("t3", command="str_replace", path="/memories/prefs.md", old_str="tabs", new_str="spaces")],
            "tool_use",
        ),
        _message(3, [{"type": "text", "text": "Noted."}], "end_turn"),
    ]
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/messages"
        requests.append(json.loads(request.content))
        return httpx.Response(200, json=replies[len(requests) - 1])

    client = anthropic.Anthropic(api_key="x", http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    runner = client.beta.messages.tool_runner(
        model="claude-test",
        max_tokens=256,
        messages=[{"role": "user", "content": "I prefer spaces now."}],
        tools=[VaultMemoryTool(vault=vault)],
    )
    final = runner.until_done()
    assert [block.type for block in final.content] == ["text"]
    assert len(requests) == 3
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = [
        {key: block.get(key) for key in ("tool_use_id", "content", "is_error")}
        for body in requests[1:]
        for block in body["messages"][-1]["content"]
    ]
    assert [(r["tool_use_id"], r["is_error"]) for r in results] == [("t1", None), ("t2", True), ("t3", None)]
    assert _text(results[0]["content"]) == "File created successfully at: /memories/prefs.md"
    assert _text(results[1]["content"]) == "Path /memories/../x.md would escape /memories directory"
    assert _text(results[2]["content"]).startswith("The memory file has been edited.")
    assert (vault / "memories" / "prefs.md").read_bytes() == b"- spaces\n"


def _text(content: object) -> str:
    """A tool result's content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    assert isinstance(content, list)
    return "".join(str(block["text"]) for block in content if block.get("type") == "text")


def test_the_sdk_is_not_loaded_by_the_package(vault: Path) -> None:
    code = "import sys, amem.memorytool.store; print('anthropic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
