"""`amem token`: the tokens `amem mcp --http` admits, kept as SHA-256 digests in the user's state folder and
never in the vault (SPEC §19)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from amem.tokens import find_token, load_tokens

TOKENS = Path("amem") / "tokens.json"


def tokens_file() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / TOKENS


def test_add_prints_the_token_once_and_keeps_only_its_digest(amem: Any, vault: Path) -> None:
    added = amem("token", "add", "alice")
    assert added.exit_code == 0
    shown = added.json
    secret = shown.pop("token")
    assert shown["name"] == "alice" and shown["scope"] == "read-write" and shown["created"]
    stored = tokens_file().read_text()
    assert secret not in stored
    assert json.loads(stored)["tokens"] == [{**shown, "sha256": hashlib.sha256(secret.encode()).hexdigest()}]
    assert stat.S_IMODE(tokens_file().stat().st_mode) == 0o600
    assert not vault.exists() or not any(vault.rglob("*"))


def test_two_tokens_are_different_and_long(amem: Any) -> None:
    first, second = (amem("token", "add", name).json["token"] for name in ("a", "b"))
    assert first != second
    assert len(first) >= 40


def test_list_shows_names_scopes_and_times_and_no_secret(amem: Any) -> None:
    secret = amem("token", "add", "alice").json["token"]
    amem("token", "add", "dashboard", "--read-only")
    listed = amem("token", "list")
    assert [(t["name"], t["scope"]) for t in listed.json["tokens"]] == [
        ("alice", "read-write"),
        ("dashboard", "read-only"),
    ]
    assert secret not in listed.stdout
    assert "sha256" not in listed.stdout


def test_list_with_no_tokens_is_empty(amem: Any) -> None:
    assert amem("token", "list").json == {"tokens": []}


def test_revoke_removes_the_token(amem: Any) -> None:
    secret = amem("token", "add", "alice").json["token"]
    amem("token", "add", "bob")
    revoked = amem("token", "revoke", "alice")
    assert revoked.exit_code == 0 and revoked.json["revoked"] is True
    assert [t["name"] for t in amem("token", "list").json["tokens"]] == ["bob"]
    assert find_token(load_tokens(), secret) is None


def test_a_name_taken_is_a_conflict_and_the_first_token_stays(amem: Any) -> None:
    secret = amem("token", "add", "alice").json["token"]
    again = amem("token", "add", "alice")
    assert again.exit_code == 4 and again.error["code"] == "conflict"
    record = find_token(load_tokens(), secret)
    assert record is not None and record.name == "alice"


def test_revoking_an_unknown_name_is_not_found(amem: Any) -> None:
    result = amem("token", "revoke", "nobody")
    assert result.exit_code == 3 and result.error["code"] == "not_found"


def test_names_that_would_mislead_the_audit_log_or_git_are_refused(amem: Any) -> None:
    for name in ("", "has space", "a\nb", "-dash", "x" * 65, "a<b>", "ünï"):
        result = amem("token", "add", name)
        assert result.exit_code == 2, name
    assert amem("token", "list").json == {"tokens": []}


def test_add_and_revoke_need_a_name_and_list_takes_none(amem: Any) -> None:
    assert amem("token", "add").exit_code == 2
    assert amem("token", "revoke").exit_code == 2
    assert amem("token", "list", "alice").exit_code == 2
    assert amem("token", "revoke", "alice", "--read-only").exit_code == 2


def test_a_damaged_tokens_file_is_a_config_error_not_an_empty_list(amem: Any) -> None:
    tokens_file().parent.mkdir(parents=True, exist_ok=True)
    tokens_file().write_text("{not json")
    result = amem("token", "list")
    assert result.exit_code == 7 and result.error["code"] == "config"


def test_concurrent_adds_keep_every_token(isolated_env: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "amem", "token", "add", f"t{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for i in range(6)
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert sorted(r.name for r in load_tokens()) == [f"t{i}" for i in range(6)]
