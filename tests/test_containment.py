"""Symlinks never let a note's bytes come from outside the vault: not through the index scan, search
snippets, linked notes, backlinks, completion, the watcher's vault sink, nor `read` itself."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.cli import cli
from amem.completion import AmemBashComplete

from .conftest import write_file

#: In every byte and every name outside the vault; no output may ever hold it.
MARK = "zqxsecret"
OUTSIDE_NOTE = f"{MARK} the password file. [[n0]] common words here\n"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout + result.stderr


def complete(vault: Path, incomplete: str) -> list[str]:
    shell = AmemBashComplete(cli, {}, "amem", "_AMEM_COMPLETE")
    return [item.value for item in shell.get_completions(["--vault", str(vault), "read"], incomplete)]


# --- the one rule -------------------------------------------------------------------------------------


def test_may_read_is_true_only_inside_the_real_vault(tmp_path: Path) -> None:
    from amem.notes.ids import may_read

    vault, outside = tmp_path / "vault", tmp_path / "outside"
    write_file(vault / "a.md", "a")
    write_file(outside / "s.md", "s")
    (vault / "in.md").symlink_to(vault / "a.md")
    (vault / "out.md").symlink_to(outside / "s.md")
    (vault / "broken.md").symlink_to(vault / "nowhere.md")
    (vault / "loop.md").symlink_to(vault / "loop.md")
    (vault / "dir").symlink_to(outside)
    real = os.path.realpath(vault)
    assert may_read(str(vault / "a.md"), real) and may_read(str(vault / "in.md"), real)
    for name in ("out.md", "broken.md", "loop.md", "dir/s.md", "../outside/s.md"):
        assert not may_read(str(vault / name), real), name


# --- the case, command by command --------------------------------------------------------------


def test_a_link_to_etc_passwd_leaks_through_no_command(amem: Any, vault: Path, tmp_path: Path) -> None:
    secret = write_file(tmp_path / "outside" / "passwd", OUTSIDE_NOTE)
    write_file(vault / "notes" / "l.md", "common [[pw]] and [[pw2]]\n")
    write_file(vault / "notes" / "two.md", "[[l]] common\n")  # two hops from pw
    (vault / "notes" / "pw.md").symlink_to(secret)
    (vault / "notes" / "sub").symlink_to(secret.parent)  # a folder leading out
    write_file(vault / "notes" / "pw2.md", "inside [[sub/passwd]]\n")
    outputs = [
        amem("search", "common"),
        amem("search", MARK),
        amem("search", "password"),
        amem("read", "notes/l", "--depth", "3"),
        amem("read", "notes/two", "--depth", "3"),
        amem("read", "notes/pw2", "--depth", "3"),
        amem("read", "notes/pw"),
        amem("read", "notes/sub/passwd"),
    ]
    for result in outputs:
        assert MARK not in result.stdout + result.stderr
    read = amem("read", "notes/l", "--depth", "3").json
    assert [link["resolved"] for link in read["links"]] == [None, "notes/pw2.md"]
    assert amem("read", "notes/pw").error["code"] == "invalid_id"
    assert not any(MARK in c or "passwd" in c for c in complete(vault, "notes/"))
    assert amem("search", "common").json["total"] == 2  # l and two, not the file outside


# --- property: any tree of links ------------------------------------------------------------------------

NAMES = ("n0", "n1", "n2", "sub/n3")
TARGETS = ("outside-file", "outside-folder", "inside-note", "inside-folder", "chain", "self", "broken")


@st.composite
def trees(draw: Any) -> list[tuple[str, str, int]]:
    """Symlinks as (name, kind, index): `name` in the vault, `kind` of target, index for chains."""
    count = draw(st.integers(min_value=1, max_value=6))
    links = []
    for i in range(count):
        folder = draw(st.sampled_from(("", "sub/", "deep/er/")))
        kind = draw(st.sampled_from(TARGETS))
        name = f"{folder}l{i}" + ("" if kind in ("outside-folder", "inside-folder") else ".md")
        links.append((name, kind, draw(st.integers(min_value=0, max_value=count - 1))))
    return links


def build(root: Path, links: list[tuple[str, str, int]]) -> Path:
    vault, outside = root / "vault", root / "out"
    write_file(outside / "hidden.md", OUTSIDE_NOTE)
    write_file(outside / "inner" / "hidden2.md", OUTSIDE_NOTE)
    link_words = " ".join(f"[[{name}]] [[{name}/hidden]] [[{name}/inner/hidden2]]" for name, _, _ in links)
    for name in NAMES:
        write_file(vault / f"{name}.md", f"# {name}\ncommon words {link_words} [[hidden]] [[hidden2]]\n")
    for name, kind, index in links:
        path = vault / name
        path.parent.mkdir(parents=True, exist_ok=True)
        target: Path | str = {
            "outside-file": outside / "hidden.md",
            "outside-folder": outside,
            "inside-note": vault / "n0.md",
            "inside-folder": vault / "sub",
            "chain": vault / links[index][0],
            "self": path,
            "broken": vault / "missing.md",
        }[kind]
        os.symlink(target, path)
    return vault


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(links=trees())
def test_no_command_shows_bytes_from_outside_the_vault(
    links: list[tuple[str, str, int]], isolated_env: Path, tmp_path: Path
) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as scratch:
        vault = build(Path(scratch), links)
        flag = ("--vault", str(vault))
        ids = [f"{name}.md" for name in NAMES] + [name for name, _, _ in links]
        ids += [f"{name}/hidden" for name, _, _ in links] + [f"{name}/inner/hidden2" for name, _, _ in links]
        outputs = [run(*flag, "search", "common"), run(*flag, "search", MARK), run(*flag, "search", "password")]
        for note_id in ids:
            outputs.append(run(*flag, "read", note_id, "--depth", "4"))
        for status, text in outputs:
            assert MARK not in text, text
            assert "Traceback" not in text and status in (0, 3, 5), text
        for incomplete in ("", "sub/", "deep/", "deep/er/", "l0/"):
            assert not any("hidden" in value for value in complete(vault, incomplete))
