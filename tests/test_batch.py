"""`amem batch` (SPEC §17): one command a line as a JSON list of its arguments, one JSON result a line, in
order; a bad line is an error line and the batch goes on; each line's result, error and exit code are the
command's own. Through CliRunner and through the installed `amem` with real pipes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.installed import amem_bin, installed_runner


def ndjson(*lines: list[str]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def results(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def batch(amem: Any, text: str, *root: str) -> list[dict[str, Any]]:
    """The lines `amem [ROOT…] batch` prints for `text` on stdin; the batch itself must exit 0."""
    result = amem(*root, "batch", input=text)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return results(result.stdout)


def test_lines_run_in_order_and_a_write_is_seen_by_the_next_read(amem: Any, vault: Path) -> None:
    lines = batch(
        amem,
        ndjson(
            ["write", "notes/x", "--append", "a fact"],
            ["read", "notes/x", "--max-chars", "2000"],
            ["write", "notes/x", "--overwrite", "- a list item"],
            ["read", "notes/x"],
        ),
    )
    assert [line["exit"] for line in lines] == [0, 0, 0, 0]
    first, read, overwritten, again = (line["result"] for line in lines)
    assert first["created"] is True and first["id"] == "notes/x.md"
    assert "a fact" in read["body"] and read["version"] == first["version"]
    assert again["body"].strip() == "- a list item" and again["version"] == overwritten["version"]


def test_a_line_gives_what_the_command_gives(amem: Any, vault: Path) -> None:
    write_file(vault / "x.md", "# x\n\nA note.\n")
    lines = batch(amem, ndjson(["read", "x"], ["read", "nothing-here"], ["list"]))
    for line, args in zip(lines, (["read", "x"], ["read", "nothing-here"], ["list"]), strict=True):
        alone = amem(*args)
        assert line["exit"] == alone.exit_code
        if alone.exit_code == 0:
            assert line["result"] == alone.json
        else:
            assert line["error"] == alone.error
    assert lines[1]["exit"] == 3 and lines[1]["error"]["code"] == "not_found"


def test_a_stale_base_version_is_a_conflict_line(amem: Any, vault: Path) -> None:
    old = amem("write", "x", "first").json["version"]
    amem("write", "x", "second")
    lines = batch(amem, ndjson(["write", "x", "--base-version", old, "third"], ["read", "x"]))
    alone = amem("write", "x", "--base-version", old, "third")
    assert lines[0] == {"exit": 4, "error": alone.error}
    assert lines[0]["error"]["code"] == "conflict"
    assert "third" not in lines[1]["result"]["body"]


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        "",
        '{"read": "x"}',
        "[]",
        '["read", 3]',
        '"read x"',
        '["\\ud800"]',
    ],
    ids=["not-json", "blank", "object", "empty-list", "not-strings", "string", "lone-surrogate"],
)
def test_a_bad_line_is_an_error_line_and_the_batch_goes_on(amem: Any, vault: Path, line: str) -> None:
    first, after = batch(amem, line + "\n" + ndjson(["write", "x", "still here"]))
    assert first["exit"] == 2 and first["error"]["code"] == "usage"
    assert "JSON list" in first["error"]["message"] or "Unicode" in first["error"]["message"]
    assert after["exit"] == 0


def test_a_line_that_is_not_utf8_is_an_error_line(amem: Any, vault: Path) -> None:
    first, after = batch(amem, b'["read", "\xff"]\n' + ndjson(["list"]).encode())  # type: ignore[arg-type]
    assert first["exit"] == 2 and "not JSON" in first["error"]["message"]
    assert after["exit"] == 0


def test_an_unknown_command_suggests_the_nearest_one(amem: Any, vault: Path) -> None:
    (line,) = batch(amem, ndjson(["serch", "x"]))
    assert line["exit"] == 2
    assert line["error"] == amem("serch", "x").error
    assert "Did you mean search?" in line["error"]["message"]


@pytest.mark.parametrize(
    "args",
    [
        ["watch"],
        ["mcp"],
        ["batch"],
        ["help", "read"],
        ["index", "--watch"],
        ["read", "x", "--help"],
        ["write", "-h"],
        ["--vault", "elsewhere", "read", "x"],
        ["--version"],
    ],
    ids=lambda args: " ".join(args),
)
def test_commands_that_serve_or_print_text_are_refused(amem: Any, vault: Path, args: list[str]) -> None:
    refused, after = batch(amem, ndjson(args, ["index"]))
    assert refused["exit"] == 2 and refused["error"]["code"] == "usage"
    assert "batch" in refused["error"]["message"]
    assert after["exit"] == 0 and after["result"]["notes"] == 0


@pytest.mark.parametrize("args", [["write", "x", "-"], ["write", "x"], ["edit", "x", "--prepend", "-"]])
def test_content_from_stdin_is_refused_and_stdin_stays_the_batchs(amem: Any, vault: Path, args: list[str]) -> None:
    write_file(vault / "x.md", "# x\n\nA note.\n")
    refused, written = batch(amem, ndjson(args, ["write", "y", "from the line"]))
    assert refused["exit"] == 2 and "CONTENT comes in the line" in refused["error"]["message"]
    assert (vault / "x.md").read_text() == "# x\n\nA note.\n"
    assert written["exit"] == 0 and written["result"]["id"] == "y.md"


def test_warnings_are_carried_in_the_line(amem: Any, vault: Path) -> None:
    write_file(vault / "bad.md", b"# bad\n\n\xff here\n")
    ok, clean = batch(amem, ndjson(["read", "bad"], ["list"]))
    alone = amem("read", "bad")
    assert ok["exit"] == 0 and ok["result"] == alone.json
    assert ok["warnings"] == [alone.stderr.strip().removeprefix("amem: warning: ")]
    assert "not valid UTF-8" in ok["warnings"][0]
    assert "warnings" not in clean


def test_a_failed_lines_warnings_are_in_its_error(amem: Any, vault: Path, tmp_path: Path) -> None:
    config = write_file(tmp_path / "config.yaml", f"vaultRoot: {vault}\nbogusKey: 1\n")
    failed, ok = batch(amem, ndjson(["read", "nothing-here"], ["write", "x", "a"]), "--config", str(config))
    alone = amem("--config", str(config), "read", "nothing-here")
    assert failed == {"exit": 3, "error": alone.error}
    assert any("bogusKey" in warning for warning in failed["error"]["warnings"])
    assert ok["exit"] == 0 and any("bogusKey" in warning for warning in ok["warnings"])


def test_vault_applies_to_every_line(amem: Any, vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    lines = batch(amem, ndjson(["write", "a", "one"], ["write", "b", "two"], ["list"]), "--vault", str(other))
    assert [note["id"] for note in lines[2]["result"]["notes"]] == ["a.md", "b.md"]
    assert sorted(p.name for p in other.iterdir()) == ["a.md", "b.md"]
    assert not vault.exists()


def test_empty_input_prints_nothing_and_exits_0(amem: Any, vault: Path) -> None:
    assert batch(amem, "") == []


def test_a_last_line_without_a_newline_runs(amem: Any, vault: Path) -> None:
    (line,) = batch(amem, json.dumps(["write", "x", "last"]))
    assert line["exit"] == 0


def test_batch_takes_no_arguments(amem: Any, vault: Path) -> None:
    result = amem("batch", "read", input="")
    assert result.exit_code == 2 and result.error["code"] == "usage"
    assert "Got unexpected extra argument" in result.error["message"] and " batch [OPTIONS]" in result.error["message"]


# --- the installed amem, with real pipes ---------------------------------------------------------------


def test_the_installed_amem_runs_a_batch(tmp_path: Path, vault: Path) -> None:
    program = str(amem_bin(tmp_path / "bin") / "amem")
    text = ndjson(["write", "x", "a fact"], ["nope"], ["read", "x"], ["write", "y", "-"], ["read", "nothing"])
    done = subprocess.run([program, "batch"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    lines = results(done.stdout)
    assert [line["exit"] for line in lines] == [0, 2, 0, 2, 3]
    assert "a fact" in lines[2]["result"]["body"]
    run = installed_runner(tmp_path, vault)
    assert lines[4]["error"] == run("read", "nothing").error


def test_each_answer_comes_before_the_next_line_is_sent(tmp_path: Path, vault: Path) -> None:
    """A co-process: every result is flushed as its line is done, while stdin stays open."""
    program = str(amem_bin(tmp_path / "bin") / "amem")
    with subprocess.Popen(
        [program, "batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for i in range(3):
            proc.stdin.write(json.dumps(["write", "log", f"fact {i}"]) + "\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            assert answer["exit"] == 0 and answer["result"]["created"] is (i == 0)
        proc.stdin.write(json.dumps(["read", "log"]) + "\n")
        proc.stdin.flush()
        assert "fact 2" in json.loads(proc.stdout.readline())["result"]["body"]
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0


def test_ctrl_c_ends_the_batch_with_130(tmp_path: Path, vault: Path) -> None:
    program = str(amem_bin(tmp_path / "bin") / "amem")
    with subprocess.Popen(
        [program, "batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(json.dumps(["write", "x", "a"]) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["exit"] == 0  # running, and waiting for the next line
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        assert json.loads(proc.stderr.read())["error"]["code"] == "interrupted"
