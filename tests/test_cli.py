"""The command line as users meet it: CliRunner for read and write, exit codes, JSON on the right stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from amem.errors import EXIT_CODES
from tests.conftest import write_file


def test_version_and_help(amem: Any) -> None:
    assert amem("--version").stdout.startswith("amem ")
    result = amem("--help")
    assert result.exit_code == 0
    assert "read" in result.stdout and "write" in result.stdout


def test_write_then_read(amem: Any, vault: Path) -> None:
    written = amem("write", "notes/x", "hello [[y]]")
    assert written.exit_code == 0, written.stderr
    assert written.json["id"] == "notes/x.md" and written.json["created"] is True
    read = amem("read", "notes/x")
    assert read.exit_code == 0
    assert read.json["version"] == written.json["version"]
    assert read.json["links"][0]["target"] == "y"
    assert read.stderr == ""


def test_output_is_one_line_when_not_a_terminal(amem: Any, vault: Path) -> None:
    out = amem("write", "n", "x").stdout
    assert out.count("\n") == 1 and out.endswith("\n")


def test_content_from_stdin(amem: Any, vault: Path) -> None:
    result = amem("write", "n", "--append", input="piped text\n")
    assert result.exit_code == 0
    assert "piped text" in (vault / "n.md").read_text()
    result = amem("write", "n", "-", input="dash text")
    assert "dash text" in (vault / "n.md").read_text()


def test_non_utf8_stdin_is_a_usage_error(amem: Any, vault: Path) -> None:
    result = amem("write", "n", input=b"\xff\xfe")
    assert result.exit_code == 2 and result.error["code"] == "usage"


def test_overwrite_and_base_version_conflict(amem: Any, vault: Path) -> None:
    first = amem("write", "n", "one").json
    second = amem("write", "n", "--overwrite", "--base-version", first["version"], "two")
    assert second.exit_code == 0 and second.json["mode"] == "overwrite"
    stale = amem("write", "n", "--base-version", first["version"], "three")
    assert stale.exit_code == EXIT_CODES["conflict"][0] == 4
    assert stale.error["code"] == "conflict" and "changed since version" in stale.error["message"]
    assert stale.stdout == ""
    assert "three" not in (vault / "n.md").read_text()


def test_require_existing(amem: Any, vault: Path) -> None:
    result = amem("write", "nope/n", "x", "--require-existing")
    assert result.exit_code == 3 and result.error["code"] == "not_found"
    assert not vault.exists()


def test_not_found(amem: Any, vault: Path) -> None:
    result = amem("read", "x")
    assert result.exit_code == 3
    assert result.error == {"code": "not_found", "message": 'cannot read note "x.md": no such note'}
    assert result.stdout == ""


def test_invalid_ids(amem: Any, vault: Path) -> None:
    for raw in ("../x", "/etc/passwd", "a\\b", "C:/x", "x.txt"):
        result = amem("read", raw)
        assert result.exit_code == 5, raw
        assert result.error["code"] == "invalid_id"
        result = amem("write", raw, "content")
        assert result.exit_code == 5, raw
    assert not vault.exists()


def test_usage_errors(amem: Any, vault: Path) -> None:
    result = amem("read")
    assert result.exit_code == 2 and result.error["code"] == "usage"
    result = amem("read", "x", "--depth", "-1")
    assert result.exit_code == 2
    result = amem("write", "n", "--no-such-flag")
    assert result.exit_code == 2
    result = amem("nonsense")
    assert result.exit_code == 2


def test_config_error_exit_code(amem: Any, isolated_env: Path) -> None:
    write_file(isolated_env / "bad.yaml", "maxLinkDepth: -3\n")
    result = amem("--config", str(isolated_env / "bad.yaml"), "read", "x")
    assert result.exit_code == 7
    assert result.error["code"] == "config" and "maxLinkDepth" in result.error["message"]


def test_unknown_config_key_warns_on_stderr(amem: Any, isolated_env: Path, vault: Path) -> None:
    write_file(isolated_env / "c.yaml", "colour: blue\n")
    result = amem("--config", str(isolated_env / "c.yaml"), "write", "n", "x")
    assert result.exit_code == 0
    assert "unknown config key 'colour'" in result.stderr
    json.loads(result.stdout)


def test_vault_flag(amem: Any, isolated_env: Path) -> None:
    result = amem("--vault", "elsewhere", "write", "n", "x")
    assert result.exit_code == 0
    assert (isolated_env / "elsewhere" / "n.md").is_file()


def test_internal_errors_are_json_not_tracebacks(amem: Any, vault: Path, monkeypatch: Any) -> None:
    from amem.ops import read as read_module

    def explode(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(read_module, "read_note", explode)
    result = amem("read", "x")
    assert result.exit_code == 1
    assert result.error == {"code": "internal", "message": "unexpected RuntimeError: boom"}
    assert "Traceback" not in result.stderr


def test_content_that_starts_with_a_dash_is_content(amem: Any, vault: Path) -> None:
    for content in ("- first item", "-5 degrees", "--- not frontmatter", "-\tindented"):
        result = amem("write", "list", content)
        assert result.exit_code == 0, (content, result.stderr)
        assert content in (vault / "list.md").read_text()
    frontmatter = "---\ntags: [auth]\n---\nTokens live 24 h.\n"
    result = amem("write", "auth", frontmatter, "--overwrite")  # options may still follow the content
    assert result.exit_code == 0 and result.json["mode"] == "overwrite", result.stderr
    assert amem("read", "auth").json["frontmatter"] == {"tags": ["auth"]}
    assert amem("write", "word", "--", "--foo").exit_code == 0  # a word that reads as an option: after --
    assert "--foo" in (vault / "word.md").read_text()
    typo = amem("write", "word", "--overwrit", "x")
    assert typo.exit_code == 2 and "--overwrit" in typo.error["message"]
