"""`amem sync` before Click loads (`amem.change_fast`): a plain sync command line runs in the console
script's process without Click, and everything it does is the command's own, byte for byte: both streams,
the exit code, the vault's files and its repository's refs and objects, and the remote's, for an idle sync,
one that commits and pushes, one that pulls, and every failure (no repository, no remote, a remote that is
gone, a detached HEAD, a vault inside a larger repository, a Ctrl-C). A line it cannot tell exactly as the
command parses it goes to Click untouched.

Both sides run through test_write_fast's harness, at one fixed time, so that the commits each side makes
have the same hashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amem import change_fast, interrupt
from tests.conftest import write_file
from tests.test_write_fast import GIT_DATES, _tree, both

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_DATES, **IDENTITY}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def remote(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bare remote, and the vault a clone of it with two notes, synced once: the next sync has nothing to do."""
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    bare = vault.parent / "remote.git"
    git(vault.parent, "init", "-q", "--bare", "-b", "main", str(bare))
    write_file(vault / "notes/auth.md", "# Auth tokens\n\nHow a token is checked.\n")
    write_file(vault / "notes/keys.md", "# Keys\n\nSigning keys rotate.\n")
    git(vault, "init", "-q", "-b", "main")
    git(vault, "remote", "add", "origin", str(bare))
    first = both(vault.parent, vault, ["sync"], remote=bare)  # the first sync: the harness puts all back
    assert first.code == 0 and json.loads(first.stdout)["pushed"], first.stderr
    env = {**os.environ, **GIT_DATES}
    subprocess.run([sys.executable, "-m", "amem", "sync"], cwd=vault, check=True, capture_output=True, env=env)
    return bare


def other_machine(remote: Path, tmp_path: Path) -> Path:
    """A second clone that appends to a note and pushes: the vault's next sync pulls it."""
    clone = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    with open(clone / "notes/keys.md", "a", encoding="utf-8") as note:
        note.write("\nKeys live a year.\n")
    write_file(clone / "notes/new.md", "# New\n\nFrom the other machine.\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "other")
    git(clone, "push", "-q", "origin", "HEAD")
    return clone


# --- plain lines run before Click, as the command runs them -------------------------------------------


@pytest.mark.parametrize(
    ("args", "change"),
    [
        (["sync"], "idle"),
        (["sync"], "local"),
        (["sync"], "remote"),
        (["sync"], "both"),
        (["sync", "--no-push"], "both"),
        (["sync", "--remote", "origin"], "local"),
        (["sync", "--remote=origin", "--whole-repo"], "both"),
        (["--vault", "VAULT", "sync"], "remote"),
    ],
)
def test_a_plain_sync_runs_before_click_as_the_command_runs_it(
    tmp_path: Path, vault: Path, remote: Path, args: list[str], change: str
) -> None:
    if change in ("local", "both"):
        with open(vault / "notes/auth.md", "a", encoding="utf-8") as note:
            note.write("\nTokens expire.\n")
    if change in ("remote", "both"):
        other_machine(remote, tmp_path)
    args = [str(vault) if a == "VAULT" else a for a in args]
    fast = both(tmp_path, vault, args, remote=remote)
    assert fast.fast, fast.stderr
    assert fast.code == 0, fast.stderr
    outcome = json.loads(fast.stdout)
    assert bool(outcome["commit"]) == (change in ("local", "both"))  # a pull alone fast-forwards
    assert bool(outcome["pulled"]) == (change in ("remote", "both"))
    pushed = change in ("local", "both") and "--no-push" not in args
    assert bool(outcome["pushed"]) == pushed


def test_a_sync_that_fails_fails_as_the_command_does(tmp_path: Path, vault: Path, remote: Path) -> None:
    other = tmp_path / "elsewhere"
    cases: list[tuple[list[str], str]] = [(["sync", "--remote", "nowhere"], "git")]
    for args, code in cases:
        failed = both(tmp_path, vault, args, remote=remote)
        assert failed.fast and failed.code != 0
        assert json.loads(failed.stderr)["error"]["code"] == code
    git(vault, "remote", "set-url", "origin", str(other / "gone.git"))  # a remote that is not there
    gone = both(tmp_path, vault, ["sync"], remote=remote)
    assert gone.fast and json.loads(gone.stderr)["error"]["code"] == "git"
    git(vault, "remote", "remove", "origin")
    none = both(tmp_path, vault, ["sync"], remote=remote)
    assert none.fast and "no remote" in json.loads(none.stderr)["error"]["message"]
    git(vault, "checkout", "-q", "--detach")
    detached = both(tmp_path, vault, ["sync"], remote=remote)
    assert detached.fast and "detached" in json.loads(detached.stderr)["error"]["message"]


def test_a_vault_inside_a_larger_repository_is_refused_unless_asked(tmp_path: Path, isolated_env: Path) -> None:
    top = isolated_env / "repo"
    vault = top / "vault"
    write_file(vault / "a.md", "# A\n")
    write_file(top / "other.txt", "not a note\n")
    bare = isolated_env / "top.git"
    git(isolated_env, "init", "-q", "--bare", "-b", "main", str(bare))
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "start")
    git(top, "remote", "add", "origin", str(bare))
    refused = both(tmp_path, top, ["--vault", str(vault), "sync"], remote=bare)  # the harness keeps all of top
    assert refused.fast and json.loads(refused.stderr)["error"]["folder"] == "vault"
    whole = both(tmp_path, top, ["--vault", str(vault), "sync", "--whole-repo"], remote=bare)
    assert whole.fast and whole.code == 0 and json.loads(whole.stdout)["pushed"]


def test_a_vault_that_is_no_repository_fails_as_the_command_does(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "a.md", "# A\n")
    failed = both(tmp_path, vault, ["sync"])
    assert failed.fast and failed.code != 0
    assert "not in a git repository" in json.loads(failed.stderr)["error"]["message"]
    missing = both(tmp_path, vault.parent / "none", ["--vault", str(vault.parent / "none"), "sync"])
    assert missing.fast and json.loads(missing.stderr)["error"]["code"] == "git"


@pytest.mark.parametrize(
    "args",
    [
        ["sync", "--help"],
        ["sync", "--bogus"],
        ["sync", "extra"],
        ["sync", "--", "extra"],
        ["sync", "--remote"],
        ["sync", "--remote", "-x"],
        ["sync", "--remote="],
        ["sync", "--no-push", "--no-push"],
        ["sync", "--no-push=1"],
        ["sync", "-h"],
        ["--config", "/nonexistent", "sync"],
    ],
)
def test_a_sync_line_click_must_judge_goes_to_click(tmp_path: Path, vault: Path, remote: Path, args: list[str]) -> None:
    fast = both(tmp_path, vault, args, remote=remote)
    assert not fast.fast


def test_a_broken_config_and_its_warnings_are_the_commands_own(tmp_path: Path, vault: Path, remote: Path) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "amem/config.yaml"
    write_file(config, "noSuchKey: 1\n")
    warned = both(tmp_path, vault, ["sync"], remote=remote)
    assert warned.fast and warned.code == 0 and "noSuchKey" in warned.stderr
    write_file(config, "maxLinkDepth: deep\n")
    broken = both(tmp_path, vault, ["sync"], remote=remote)
    assert broken.fast and json.loads(broken.stderr)["error"]["code"] == "config"


def test_a_swallowed_ctrl_c_ends_the_sync_before_it_runs_git(
    vault: Path, remote: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(vault / "notes/auth.md", "a", encoding="utf-8") as note:
        note.write("\nNot committed.\n")
    before = _tree(vault), _tree(remote)
    interrupt.install()
    monkeypatch.setattr(interrupt, "_swallowed", True)
    assert change_fast.answer(["sync"]) == 130
    out, err = capsys.readouterr()
    assert out == ""
    assert json.loads(err) == {"error": {"code": "interrupted", "message": "interrupted (Ctrl-C)"}}
    assert (_tree(vault), _tree(remote)) == before


def test_every_option_the_fast_path_takes_is_the_commands_own() -> None:
    import click

    from amem.commands.sync import command

    flags, valued, least, most = change_fast.COMMANDS["sync"]
    options = {p.opts[0]: p.is_flag for p in command.params if isinstance(p, click.Option)}
    taken = {name: True for name in flags} | {name: False for name in valued}
    assert taken == {name: flag for name, flag in options.items() if name != "--help"}
    assert (least, most) == (0, 0) and not [p for p in command.params if isinstance(p, click.Argument)]
