"""`amem write` before Click loads (`amem.change_fast`): a plain write command line runs in the console
script's process without Click, and everything it does is the command's own, byte for byte: both streams,
the exit code, the notes it leaves and their git commits, for successes and for every failure (a stale
version, a missing note, a path outside the vault, stdin that is not UTF-8, a broken config, a full stdout,
a Ctrl-C). A line it cannot tell exactly as the command parses it goes to Click untouched, stdin unread.

Both sides run through the console script's own entry, at one fixed time (so that the appended headings and
the versions agree): the fast path as it is, the command's own path with AMEM_NO_KEEPER=1, each from the
same vault and cache."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem import change_fast, interrupt
from amem.index.keeper_ask import NO_KEEPER
from tests.conftest import write_file
from tests.test_keeper_fast import PROBE as keeper_probe

#: The console script's entry in a fresh interpreter (test_keeper_fast's probe, which writes the modules
#: it loaded to the file its first argument names) at a fixed time.
PROBE = (
    "from datetime import datetime, timezone\n"
    "import amem.timefmt\n"
    "amem.timefmt.now = lambda tz: datetime(2026, 12, 2, 9, 30, tzinfo=tz or timezone.utc)\n"
) + keeper_probe
#: git's dates, fixed so that a commit made on each side has the same hash.
GIT_DATES = {"GIT_AUTHOR_DATE": "2026-12-02T09:30:00Z", "GIT_COMMITTER_DATE": "2026-12-02T09:30:00Z"}


class Ran(NamedTuple):
    code: int
    stdout: str
    stderr: str
    #: ran before Click loaded
    fast: bool
    #: every file of the vault (its .git's refs and objects included): path -> bytes
    files: dict[str, bytes]


_probes = itertools.count()


def _tree(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    skip = (".git/index", ".git/logs/", ".git/COMMIT_EDITMSG")
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not str(path.relative_to(root)).startswith(skip)
    }


def run(
    tmp_path: Path,
    vault: Path,
    args: list[str],
    stdin: bytes | None = b"",
    own: bool = False,
    stdout: IO[Any] | None = None,
    remote: Path | None = None,
) -> Ran:
    """`amem ARGS` through the console script's entry, from the vault, cache and `remote` as they are now,
    all put back as they were afterwards; `own`: the command's own path (AMEM_NO_KEEPER=1). The files
    are the vault's, and the remote's under `remote/`."""
    modules = tmp_path / f"modules-{next(_probes)}"
    cache = Path(os.environ["XDG_CACHE_HOME"])
    saved = tmp_path / "saved"
    shutil.rmtree(saved, ignore_errors=True)
    folders = {"vault": vault, "cache": cache, **({"remote": remote} if remote is not None else {})}
    for name, folder in folders.items():
        if folder.exists():
            shutil.copytree(folder, saved / name, symlinks=True)
    env = {**os.environ, **GIT_DATES, **({NO_KEEPER: "1"} if own else {})}
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(modules), *args],
            input=stdin,
            stdout=stdout if stdout is not None else subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=120,
            env=env,
            cwd=tmp_path,
        )
        files = _tree(vault)
        if remote is not None:
            files |= {f"remote/{path}": data for path, data in _tree(remote).items()}
    finally:
        for name, folder in folders.items():
            shutil.rmtree(folder, ignore_errors=True)
            if (saved / name).exists():
                shutil.copytree(saved / name, folder, symlinks=True)
    loaded = set(modules.read_text().split(","))
    out = done.stdout.decode("utf-8", "replace") if isinstance(done.stdout, bytes) else ""
    return Ran(done.returncode, out, done.stderr.decode("utf-8", "replace"), "click" not in loaded, files)


def both(
    tmp_path: Path,
    vault: Path,
    args: list[str],
    stdin: bytes | None = b"",
    stdout: IO[Any] | None = None,
    remote: Path | None = None,
) -> Ran:
    """Run the line on each path from the same state; assert they did the same; the fast path's run."""
    fast = run(tmp_path, vault, args, stdin, stdout=stdout, remote=remote)
    own = run(tmp_path, vault, args, stdin, own=True, stdout=stdout, remote=remote)
    assert (fast.code, fast.stdout, fast.stderr) == (own.code, own.stdout, own.stderr), args
    assert fast.files == own.files, args
    assert not own.fast and "Traceback" not in fast.stderr
    return fast


def small_vault(vault: Path) -> None:
    write_file(vault / "notes/auth.md", "---\ntags: [auth]\n---\n# Auth tokens\n\nHow a token is checked.\n")
    write_file(vault / "notes/keys.md", "# Keys\n\nSigning keys rotate.\n")
    write_file(vault / "bad.md", b"# Bad\n\nnot utf-8 \xff\n")


def version_of(vault: Path, note: str) -> str:
    return hashlib.sha1((vault / note).read_bytes()).hexdigest()


# --- plain lines run before Click, as the command runs them -------------------------------------------


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["write", "notes/auth", "One more fact."], b""),
        (["write", "notes/new", "--append", "- a list item"], b""),
        (["write", "notes/auth", "---\ntags: [x]\n---\nbody"], b""),
        (["write", "--overwrite", "notes/keys", "-5 degrees"], b""),
        (["write", "notes/auth", "-"], "from stdin, 认证\n".encode()),
        (["write", "notes/auth"], b"piped\n"),
        (["write", "notes/auth", "--require-existing", "--", "--not-an-option"], b""),
        (["--vault", "VAULT", "write", "fresh", "text"], b""),
        (["write", "notes/auth", "--base-version", "VERSION", "guarded"], b""),
        (["write", "notes/auth", "--base-version=VERSION", "--overwrite", "guarded"], b""),
    ],
)
def test_a_plain_write_runs_before_click_as_the_command_runs_it(
    tmp_path: Path, vault: Path, args: list[str], stdin: bytes
) -> None:
    small_vault(vault)
    version = version_of(vault, "notes/auth.md")
    args = [str(vault) if a == "VAULT" else a.replace("VERSION", version) for a in args]
    fast = both(tmp_path, vault, args, stdin)
    assert fast.fast, fast.stderr
    assert fast.code == 0 and json.loads(fast.stdout)["version"]


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [
        (["write", "notes/auth", "--base-version", "0" * 40, "stale"], b"", "conflict"),
        (["write", "notes/none", "--require-existing", "text"], b"", "not_found"),
        (["write", "../outside", "text"], b"", "invalid_id"),
        (["write", "notes/auth"], b"\xff\xfe not utf-8", "usage"),
        (["write", "notes/auth"], b"  \n", "usage"),  # nothing to append
        (["write", "notes/auth", "--append", "--overwrite", "x"], b"", "usage"),
        (["write", "bad", "appended"], b"", None),  # a note that is not UTF-8
    ],
)
def test_a_plain_write_that_fails_fails_as_the_command_does_and_changes_nothing(
    tmp_path: Path, vault: Path, args: list[str], stdin: bytes, code: str | None
) -> None:
    small_vault(vault)
    fast = both(tmp_path, vault, args, stdin)
    assert fast.fast and fast.code != 0
    error = json.loads(fast.stderr)["error"]
    assert code is None or error["code"] == code, error
    assert fast.files == _tree(vault)  # nothing written


def test_a_commit_is_the_commands_own_commit(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    env = {**os.environ, **GIT_DATES}
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "i"]):
        subprocess.run(["git", *command], cwd=vault, check=True, env=env)
    fast = both(tmp_path, vault, ["write", "notes/auth", "--commit", "committed"])
    assert fast.fast and "commit" in json.loads(fast.stdout)


@pytest.mark.parametrize(
    "args",
    [
        ["write", "--help"],
        ["write", "notes/auth", "--bogus", "x"],
        ["write", "notes/auth", "--base-version", "-x", "text"],
        ["write", "notes/auth", "--append", "--append", "x"],
        ["write", "notes/auth", "--append=yes", "x"],
        ["write"],
        ["write", "a", "b", "c"],
        ["--config", "/nonexistent", "write", "notes/auth", "x"],
        ["write", "notes/auth", "--base-version"],
    ],
)
def test_a_line_click_must_judge_goes_to_click_with_stdin_unread(tmp_path: Path, vault: Path, args: list[str]) -> None:
    small_vault(vault)
    fast = both(tmp_path, vault, args, b"piped\n")
    assert not fast.fast


def test_a_broken_config_and_its_warnings_are_the_commands_own(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "amem/config.yaml"
    write_file(config, "noSuchKey: 1\n")
    warned = both(tmp_path, vault, ["write", "notes/auth", "x"])
    assert warned.fast and warned.code == 0 and "noSuchKey" in warned.stderr
    write_file(config, "maxLinkDepth: deep\n")
    broken = both(tmp_path, vault, ["write", "notes/auth", "x"])
    assert broken.fast and json.loads(broken.stderr)["error"]["code"] == "config"
    config.unlink()
    not_a_folder = both(tmp_path, vault, ["--vault", str(vault / "notes/auth.md"), "write", "a", "x"])
    assert not_a_folder.fast and json.loads(not_a_folder.stderr)["error"]["code"] == "config"


def test_a_full_stdout_says_the_note_was_written(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    with open("/dev/full", "w") as full:
        fast = both(tmp_path, vault, ["write", "notes/auth", "x"], stdout=full)
    assert fast.fast
    error = json.loads(fast.stderr)["error"]
    assert error["code"] == "io" and error["written"]["id"] == "notes/auth.md"
    assert b"\nx\n" in fast.files["notes/auth.md"]


def test_a_swallowed_ctrl_c_ends_the_write_before_it_reads_or_writes(
    vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    small_vault(vault)
    before = _tree(vault)
    interrupt.install()
    monkeypatch.setattr(interrupt, "_swallowed", True)
    assert change_fast.answer(["write", "notes/auth", "x"]) == 130
    out, err = capsys.readouterr()
    assert out == ""
    assert json.loads(err) == {"error": {"code": "interrupted", "message": "interrupted (Ctrl-C)"}}
    assert _tree(vault) == before


def test_every_option_the_fast_path_takes_is_the_commands_own() -> None:
    import click

    from amem.commands.write import command

    options = {p.opts[0]: p.is_flag for p in command.params if isinstance(p, click.Option)}
    taken = {name: True for name in change_fast.FLAGS} | {name: False for name in change_fast.VALUED}
    assert taken == {name: flag for name, flag in options.items() if name != "--help"}


# --- random lines -------------------------------------------------------------------------------------

CONTENTS = ["plain words", "- item", "---\ntitle: t\n---\nbody", "-5 degrees", "--", "-", "认证令牌", "  ", "a\n\nb"]


@st.composite
def write_lines(draw: st.DrawFn, version: str) -> tuple[list[str], bytes, bool]:
    """A write command line, what its stdin holds, and whether it is plain."""
    target = draw(st.sampled_from(["notes/auth", "notes/keys", "new", "sub/new.md", "Auth", "../x", "bad", ""]))
    content = draw(st.sampled_from([None, *CONTENTS]))
    options = draw(
        st.lists(
            st.sampled_from(
                [["--append"], ["--overwrite"], ["--require-existing"], ["--base-version", version]]
                + [[f"--base-version={'0' * 40}"]]
            ),
            max_size=3,
            unique_by=lambda o: o[0].split("=")[0],
        )
    )
    plain = draw(st.integers(0, 9)) > 0
    if not plain:
        options.append(draw(st.sampled_from([["--bogus"], ["-h"], ["--base-version", "-1"], ["--commit=1"]])))
    words = [word for option in options for word in option]
    positional = [target] + ([] if content is None else [content])
    needs_dashes = content is not None and content[:1] == "-" and change_fast.OPTION_LIKE.fullmatch(content)
    if content == "--" or needs_dashes or draw(st.booleans()):
        line = [*words, "--", *positional]
    else:
        cut = draw(st.integers(0, len(positional)))
        line = [*positional[:cut], *words, *positional[cut:]]
    stdin = draw(st.sampled_from([b"", b"piped text\n", b"\xff", "认证\n".encode()]))
    return ["write", *line], stdin, plain


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_random_write_line_does_what_the_command_does(tmp_path: Path, vault: Path, data: st.DataObject) -> None:
    small_vault(vault)
    args, stdin, plain = data.draw(write_lines(version_of(vault, "notes/auth.md")))
    fast = both(tmp_path, vault, args, stdin)
    assert fast.fast == plain, (args, fast.stderr)
