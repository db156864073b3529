"""Observation building: agentmemory's observation shape, previews, hashes, session ids and project names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from amem.fswatch.rules import IgnoreRules, WatchedRoot
from amem.watcher.observation import (
    MAX_PREVIEW_BYTES,
    SessionIds,
    cut_utf8,
    git_toplevel,
    is_text_file,
    iso_timestamp,
    new_session_id,
    observe_path,
    project_name,
)

from ..conftest import write_file

SESSION = re.compile(r"^fs-watcher-[0-9a-z]+-[0-9a-f]{6}$")


def make_root(path: Path, project: str = "demo") -> WatchedRoot:
    return WatchedRoot(path=str(path), project=project, rules=IgnoreRules(str(path)))


def test_change_observation_has_the_source_shape(tmp_path: Path) -> None:
    write_file(tmp_path / "notes.md", "hello world\n")
    obs = observe_path(make_root(tmp_path), str(tmp_path / "notes.md"), "fs-watcher-x-abcdef", False)
    assert obs is not None
    assert list(obs) == ["hookType", "sessionId", "project", "cwd", "timestamp", "data"]
    assert obs["hookType"] == "post_tool_use"
    assert obs["sessionId"] == "fs-watcher-x-abcdef"
    assert obs["project"] == "demo"
    assert obs["cwd"] == str(tmp_path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", obs["timestamp"])
    data = obs["data"]
    assert list(data)[:8] == ["source", "changeKind", "files", "content", "rootDir", "absPath", "size", "truncated"]
    assert data["source"] == "filesystem-watcher"
    assert data["changeKind"] == "file_change"
    assert data["files"] == ["notes.md"]
    assert data["content"] == "notes.md (12 bytes)\n\nhello world\n"
    assert data["rootDir"] == str(tmp_path)
    assert data["absPath"] == str(tmp_path / "notes.md")
    assert data["size"] == 12 and data["truncated"] is False
    assert data["tool_name"] == "file_edit notes.md"
    assert data["tool_input"] == {"sha256": "a948904f2f0f479b", "file_path": "notes.md"}
    assert data["tool_output"] == "hello world\n"  # the file's text first: the part the server searches


def test_delete_observation(tmp_path: Path) -> None:
    obs = observe_path(make_root(tmp_path), str(tmp_path / "gone" / "x.ts"), "s", False)
    assert obs is not None
    data = obs["data"]
    assert data["changeKind"] == "file_delete"
    assert data["content"] == "deleted: gone/x.ts"
    assert data["files"] == ["gone/x.ts"]
    assert data["tool_name"] == "file_delete gone/x.ts"
    assert data["tool_input"] == {"deleted": obs["timestamp"], "file_path": "gone/x.ts"}
    assert data["tool_output"] == "deleted: gone/x.ts"


def test_two_different_edits_never_share_a_tool_input(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    path = tmp_path / "a.txt"
    write_file(path, "one")
    first = observe_path(root, str(path), "s", False)
    write_file(path, "two")
    second = observe_path(root, str(path), "s", False)
    third = observe_path(root, str(path), "s", False)
    assert first and second and third
    assert first["data"]["tool_input"] != second["data"]["tool_input"]
    assert second["data"]["tool_input"] == third["data"]["tool_input"]  # the same bytes: a true duplicate


def test_preview_is_4096_bytes_without_splitting_a_character(tmp_path: Path) -> None:
    text = "a" + "é" * 3000  # 6001 bytes; byte 4096 falls inside a 2-byte character
    write_file(tmp_path / "big.md", text)
    obs = observe_path(make_root(tmp_path), str(tmp_path / "big.md"), "s", False)
    assert obs is not None
    data = obs["data"]
    assert data["truncated"] is True and data["size"] == 6001
    header, _, preview = data["content"].partition("\n\n")
    assert header == "big.md (6001 bytes, truncated)"
    assert len(preview.encode()) == 4095 and preview == text[:2048]
    assert "\ufffd" not in preview


def test_a_file_of_exactly_4096_bytes_is_not_truncated(tmp_path: Path) -> None:
    write_file(tmp_path / "x.txt", "x" * MAX_PREVIEW_BYTES)
    obs = observe_path(make_root(tmp_path), str(tmp_path / "x.txt"), "s", False)
    assert obs is not None and obs["data"]["truncated"] is False
    assert obs["data"]["content"].endswith("x" * MAX_PREVIEW_BYTES)


def test_a_secret_straddling_the_preview_limit_is_still_redacted(tmp_path: Path) -> None:
    secret = "Zq9" * 30
    jwt = f"eyJhbGciOiJIUzI1NiJ9.eyJ{secret}.{secret}"
    body = "x" * 4000 + " " + jwt + " " + "word " * 3000  # the JWT runs across byte 4096
    write_file(tmp_path / "t.txt", body)
    obs = observe_path(make_root(tmp_path), str(tmp_path / "t.txt"), "s", False)
    assert obs is not None
    _, _, preview = obs["data"]["content"].partition("\n\n")
    assert "Zq9" not in preview
    # The secret is recognised whole, and the preview ends with it: nothing from past byte 4096 is kept.
    assert preview == "x" * 4000 + " [REDACTED]"
    assert obs["data"]["truncated"] is True


@pytest.mark.parametrize("body_lines", [30, 80])
def test_a_private_key_cut_by_the_preview_limit_gets_no_end_marker(tmp_path: Path, body_lines: int) -> None:
    # 30 lines of 64: the END marker lies past byte 4096 but within the look-ahead; 80: past both.
    body = "\n".join("MIIEv" + "Q" * 59 for _ in range(body_lines))
    text = (
        "# notes\n"
        + "n" * 2500
        + "\n-----BEGIN RSA PRIVATE KEY-----\n"
        + body
        + "\n-----END RSA PRIVATE KEY-----\ntail\n"
    )
    write_file(tmp_path / "key.md", text)
    obs = observe_path(make_root(tmp_path), str(tmp_path / "key.md"), "s", False)
    assert obs is not None
    _, _, preview = obs["data"]["content"].partition("\n\n")
    assert preview.endswith("-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]")
    assert "-----END" not in preview and "tail" not in preview and "MIIEv" not in preview


def test_a_private_key_inside_the_preview_keeps_both_markers(tmp_path: Path) -> None:
    key = "MHcCAQEEI" * 5
    text = f"-----BEGIN EC PRIVATE KEY-----\n{key}\n-----END EC PRIVATE KEY-----\n" + "after " * 1000
    write_file(tmp_path / "k.txt", text)
    obs = observe_path(make_root(tmp_path), str(tmp_path / "k.txt"), "s", False)
    assert obs is not None
    _, _, preview = obs["data"]["content"].partition("\n\n")
    assert preview.startswith("-----BEGIN EC PRIVATE KEY-----\n[REDACTED]\n-----END EC PRIVATE KEY-----\nafter ")
    # The redacted key is shorter than the key; the preview still ends where the file's byte 4096 is.
    assert len(preview) == MAX_PREVIEW_BYTES - (len(key) - len("[REDACTED]"))


def test_binary_files_send_the_path_only_unless_allowed(tmp_path: Path) -> None:
    write_file(tmp_path / "img.png", b"\x89PNG\r\n\x1a\nPASSWORD=x")
    root = make_root(tmp_path)
    obs = observe_path(root, str(tmp_path / "img.png"), "s", False)
    assert obs is not None and obs["data"]["content"] == "img.png (18 bytes)"
    allowed = observe_path(root, str(tmp_path / "img.png"), "s", True)
    assert allowed is not None
    assert allowed["data"]["content"].startswith("img.png (18 bytes)\n\n")
    assert "PASSWORD=[REDACTED]" in allowed["data"]["content"]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.ts", True),
        ("A.PY", True),
        ("x.graphql", True),
        (".env", True),
        (".env.local", True),
        ("prod.env", True),
        ("x.png", False),
        ("Makefile", False),
        ("x.env.bak", False),
        (".envrc", False),
    ],
)
def test_text_files_by_extension_and_env_by_name(name: str, text: bool) -> None:
    assert is_text_file(name) is text


def test_folders_symlinks_and_fifos_produce_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (tmp_path / "dir").mkdir()
    write_file(tmp_path / "target.txt", "t")
    (tmp_path / "link.txt").symlink_to(tmp_path / "target.txt")
    os.mkfifo(tmp_path / "pipe")
    for name in ("dir", "link.txt", "pipe"):
        assert observe_path(root, str(tmp_path / name), "s", False) is None


def test_paths_are_redacted_too(tmp_path: Path) -> None:
    write_file(tmp_path / "password=hunter2.txt", "x")
    obs = observe_path(make_root(tmp_path), str(tmp_path / "password=hunter2.txt"), "s", False)
    assert obs is not None
    assert "hunter2" not in repr(obs)
    assert obs["data"]["files"] == ["password=[REDACTED]"]
    assert obs["data"]["content"] == "password=[REDACTED] (1 bytes)\n\nx"


def test_cut_utf8() -> None:
    assert cut_utf8("aé".encode(), 2) == b"a"
    assert cut_utf8("a€".encode(), 3) == b"a"
    assert cut_utf8("a€".encode(), 4) == "a€".encode()
    assert cut_utf8("😀x".encode(), 4) == "😀".encode()


def test_timestamp_is_javascript_to_iso_string() -> None:
    moment = datetime(2026, 9, 10, 1, 6, 57, 123456, tzinfo=UTC)
    assert iso_timestamp(moment) == "2026-09-10T01:06:57.123Z"


def test_session_ids() -> None:
    first, second = new_session_id(), new_session_id()
    assert SESSION.match(first) and SESSION.match(second) and first != second
    generated = SessionIds()
    assert SESSION.match(generated.current)
    old = generated.current
    new = generated.rotate(old)
    assert new != old and SESSION.match(new)
    assert generated.rotate(old) == new  # a second report of the same full session changes nothing
    configured = SessionIds("mine")
    assert configured.current == "mine"
    assert configured.rotate("mine") == "mine-2"
    assert configured.rotate("mine-2") == "mine-3"


def test_project_is_the_git_top_level_name_even_from_a_sub_folder(tmp_path: Path) -> None:
    repo = tmp_path / "my-repo"
    sub = repo / "packages" / "web"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    top = git_toplevel(str(sub))
    assert top is not None and os.path.basename(top) == "my-repo"
    assert project_name(str(sub), top) == "my-repo"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_name(str(plain), git_toplevel(str(plain))) == "plain"


HOOK_PROBE = """\
import json, sys
from amem.watcher.observation import git_toplevel, project_name
folder = sys.argv[1]
top = git_toplevel(folder)
print(json.dumps({"top": top, "project": project_name(folder, top)}))
"""


@pytest.mark.parametrize("how", ["linked-worktree", "git-dir-flag"])
def test_inside_a_git_hook_the_project_is_the_watched_folders_repository(tmp_path: Path, how: str) -> None:
    """git exports GIT_DIR (and GIT_WORK_TREE) to its hooks; a watcher started there must still name the
    repository that holds the folder it watches, not the one whose hook runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@e")

    def git(cwd: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    watched = tmp_path / "my-repo" / "packages" / "web"
    watched.mkdir(parents=True)
    git(tmp_path / "my-repo", "init", "-q")
    hooked = tmp_path / "hooked"
    hooked.mkdir()
    git(hooked, "init", "-q")
    write_file(hooked / "a.txt", "a")
    git(hooked, "add", "a.txt")
    git(hooked, "commit", "-q", "-m", "first")
    probe = write_file(tmp_path / "probe.py", HOOK_PROBE)
    out = tmp_path / "hook-output.json"
    hook = hooked / ".git" / "hooks" / "pre-commit"
    write_file(
        hook, f'#!/bin/sh\nenv | grep "^GIT_" > "{out}.env"\n"{sys.executable}" "{probe}" "{watched}" > "{out}"\n'
    )
    hook.chmod(0o755)
    if how == "linked-worktree":
        git(hooked, "worktree", "add", "-q", str(tmp_path / "linked"))
        where, args = tmp_path / "linked", ["commit", "-q", "--allow-empty", "-m", "in a hook"]
    else:
        where = tmp_path
        args = [f"--git-dir={hooked / '.git'}", f"--work-tree={hooked}", "commit", "-q", "--allow-empty", "-m", "x"]
    git(where, *args)
    assert "GIT_DIR=" in Path(f"{out}.env").read_text(), "the hook ran with git's repository variables"
    result = json.loads(out.read_text())
    assert result == {"top": os.path.realpath(tmp_path / "my-repo"), "project": "my-repo"}
