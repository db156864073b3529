"""Shell completion: note ids from the vault a folder at a time, never an error, and the checked-in bash,
zsh and fish scripts driven by the real shells."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amem.cli import cli
from amem.completion import COMPLETE_VAR, AmemBashComplete, id_candidates
from amem.config import load_config
from amem.index.index import VaultIndex

from .conftest import write_file
from .installed import amem_bin, path_with

REPO = Path(__file__).resolve().parents[1]
IDS = sorted(
    [
        "notes/auth.md",
        "notes/deep/a.md",
        "notes/deep/b.md",
        "notes/v1.2.final.md",
        "top.md",
        "notes/x.markdown",
        "nested/one/two/three.md",
    ]
)


def complete(args: list[str], incomplete: str) -> list[str]:
    """What amem answers a shell for `amem ARGS… INCOMPLETE<TAB>`, in this process."""
    shell = AmemBashComplete(cli, {}, "amem", COMPLETE_VAR)
    return [item.value for item in shell.get_completions(args, incomplete)]


@pytest.fixture
def notes(vault: Path) -> Path:
    for note_id in IDS:
        write_file(vault / note_id, f"# {note_id}\n")
    return vault


# --- which candidates ---------------------------------------------------------------------------------


def test_candidates_go_folder_by_folder() -> None:
    exts = (".md", ".markdown")
    assert id_candidates(IDS, "", exts) == ["nested/", "notes/", "top"]
    assert id_candidates(IDS, "no", exts) == ["notes/"]
    assert id_candidates(IDS, "notes/", exts) == [
        "notes/auth",
        "notes/deep/",
        "notes/v1.2.final.md",
        "notes/x.markdown",
    ]
    assert id_candidates(IDS, "notes/deep/", exts) == ["notes/deep/a", "notes/deep/b"]
    assert id_candidates(IDS, "nested/one/", exts) == ["nested/one/two/"]
    assert id_candidates(IDS, "zzz", exts) == []


def test_candidates_drop_the_extension_only_when_it_reads_back_as_the_same_note() -> None:
    exts = (".md", ".markdown")
    assert id_candidates(IDS, "notes/a", exts) == ["notes/auth"]  # as users type ids
    assert id_candidates(IDS, "notes/auth.", exts) == ["notes/auth.md"]  # the user started the extension
    assert id_candidates(IDS, "notes/x", exts) == ["notes/x.markdown"]  # not the first extension
    assert id_candidates(IDS, "notes/v", exts) == ["notes/v1.2.final.md"]  # "v1.2.final" is a .final file


def test_ids_complete_for_every_command_taking_an_id(notes: Path) -> None:
    for command in (["read"], ["write"], ["history"], ["restore"], ["delete"], ["move"], ["move", "notes/auth"]):
        assert complete(command, "notes/d") == ["notes/deep/"], command
    assert complete(["restore", "notes/auth"], "") == []  # HASH is not a note id


def test_ids_come_from_the_index_when_it_exists_and_it_is_kept_fresh(notes: Path) -> None:
    index = VaultIndex(load_config())
    index.refresh()
    index.close()
    assert complete(["read"], "notes/deep/") == ["notes/deep/a", "notes/deep/b"]
    write_file(notes / "notes" / "deep" / "c.md", "new\n")
    (notes / "notes" / "deep" / "a.md").unlink()
    assert complete(["read"], "notes/deep/") == ["notes/deep/b", "notes/deep/c"]


def test_a_vault_that_does_not_exist_completes_nothing(vault: Path) -> None:
    assert complete(["read"], "") == []


def test_the_vault_flag_typed_on_the_line_is_used(notes: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write_file(other / "elsewhere" / "z.md", "z\n")
    assert complete(["--vault", str(other), "read"], "") == ["elsewhere/"]


def test_completion_never_raises_and_never_prints(
    notes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_file(notes / "notes" / "latin1.md", b"caf\xe9\n")  # the index warns about it on stderr
    VaultIndex(load_config()).refresh()
    capsys.readouterr()
    assert "notes/auth" in complete(["read"], "notes/")
    monkeypatch.setenv("AMEM_CONFIG", str(notes / "missing.yaml"))  # a config error
    assert complete(["read"], "notes/") == []
    assert capsys.readouterr() == ("", "")


# --- the real protocol and shells ---------------------------------------------------------------------


def run_complete(shell: str, words: str, cword: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=cword, **{COMPLETE_VAR: f"{shell}_complete"})
    return subprocess.run([sys.executable, "-m", "amem"], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_each_shells_reply_format(notes: Path, isolated_env: Path) -> None:
    bash = run_complete("bash", "amem read notes/", "2", isolated_env)
    assert bash.returncode == 0 and bash.stderr == ""
    assert bash.stdout.splitlines() == ["plain,notes/auth", "plain,notes/deep/", "plain,notes/v1.2.final.md"]
    zsh = run_complete("zsh", "amem rea", "1", isolated_env)
    assert zsh.stdout.splitlines()[:2] == ["plain", "read"]  # then the description, on one line
    fish = run_complete("fish", "amem read notes/d", "notes/d", isolated_env)
    assert fish.stdout.splitlines() == ["plain\tnotes/deep/\t"]


def test_bash_script(notes: Path, isolated_env: Path, tmp_path: Path) -> None:
    amem = amem_bin(tmp_path / "bin") / "amem"
    script = (
        f"source {REPO / 'completions' / 'amem.bash'}\n"
        'c() { COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=();'
        f' _amem_completion {amem}; printf "%s|" "${{COMPREPLY[@]}}"; echo; }}\n'
        "complete -p amem\n"
        "c amem rea\n"
        "c amem read no\n"
        "c amem read notes/deep/\n"
    )
    result = subprocess.run(
        ["bash", "--norc", "-c", script], cwd=isolated_env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "complete -o nosort -F _amem_completion amem",
        "read|",
        "notes/|",
        "notes/deep/a|notes/deep/b|",
    ]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script(notes: Path, isolated_env: Path, tmp_path: Path) -> None:
    # Outside a completion widget compadd and _describe do not exist: stand-ins print what they were given.
    script = (
        "compdef() { : }\n"
        'compadd() { print -r -- "compadd ${@[1,-3]} :: ${(Pj:|:)${@[-1]}}" }\n'
        '_describe() { print -r -- "_describe :: ${(Pj:|:)3}" }\n'
        f"source {REPO / 'completions' / '_amem'}\n"
        "words=(amem read no); CURRENT=3; _amem_completion\n"
        "words=(amem read notes/deep/); CURRENT=3; _amem_completion\n"
        "words=(amem rea); CURRENT=2; _amem_completion\n"
    )
    env = dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))
    result = subprocess.run(
        ["zsh", "-f", "-c", script], cwd=isolated_env, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "compadd -U -V unsorted -S  :: notes/"  # a folder: no space after it
    assert lines[1] == "compadd -U -V unsorted :: notes/deep/a|notes/deep/b"
    assert lines[2].startswith("_describe :: read:Read note ID")


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_script(notes: Path, isolated_env: Path, tmp_path: Path) -> None:
    script = (
        f"source {REPO / 'completions' / 'amem.fish'}\n"
        "complete -C 'amem read no'\n"
        "complete -C 'amem read notes/deep/'\n"
        "complete -C 'amem read --de'\n"
    )
    env = dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))
    result = subprocess.run(
        ["fish", "--no-config", "-c", script], cwd=isolated_env, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "notes/",
        "notes/deep/a",
        "notes/deep/b",
        "--depth\tFollow links this many levels deep (default: maxLinkDepth, 1).",
    ]


def test_notes_in_dot_folders_complete_short_when_hidden_folders_are_indexed(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_file(tmp_path / "config.yaml", "indexHiddenDirs: true\n")
    monkeypatch.setenv("AMEM_CONFIG", str(config))
    write_file(vault / ".hidden" / "x.md", "x\n")
    assert complete(["read"], ".hidden/") == [".hidden/x"]
