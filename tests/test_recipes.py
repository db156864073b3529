"""The recipes (docs/guide/recipes.md), run as users run them: the exact files in docs/recipes/, the installed `amem` on
PATH, real shells and git in a temporary repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .installed import amem_bin, path_with

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "docs" / "recipes"

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="the recipes use jq (.ci/run installs it)")


def recipe(name: str) -> str:
    text = (RECIPES / name).read_text(encoding="utf-8")
    # The recipes page shows this exact text (tests/test_docs.py checks the page block by block as well).
    assert f"```sh\n{text}```\n" in (REPO / "docs" / "guide" / "recipes.md").read_text(encoding="utf-8")
    return text


@pytest.fixture
def env(isolated_env: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of a user's shell: the isolated HOME and XDG folders, amem on PATH."""
    return dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    result = run(["git", *args], repo, env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture
def repo(isolated_env: Path, env: dict[str, str]) -> Path:
    repo = isolated_env / "project"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "config", "user.name", "Recipe Tester")
    git(repo, env, "config", "user.email", "tester@example.org")
    return repo


def test_post_commit_hook_records_each_commit(repo: Path, env: dict[str, str]) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(recipe("post-commit"))
    hook.chmod(0o755)

    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('hello')\n")
    git(repo, env, "add", "src")
    first = run(["git", "commit", "-q", "-m", "Add the app"], repo, env)
    (repo / "src" / "app.py").write_text("print('hello, world')\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "usage.md").write_text("Run it.\n")
    git(repo, env, "add", "src", "docs")
    second = run(["git", "commit", "-q", "-m", "Greet the world and document it"], repo, env)
    for commit in (first, second):
        assert commit.returncode == 0 and "could not record" not in commit.stderr, commit.stderr

    # The default vault is .amem/memory/ at the repository's top level; one note a month.
    notes = sorted((repo / ".amem" / "memory" / "commits").glob("*.md"))
    assert notes, "the hook wrote no note"
    bodies = ""
    for note in notes:
        read = run(["amem", "read", f"commits/{note.stem}"], repo / "src", env)  # from a sub-folder, too
        assert read.returncode == 0, read.stderr
        bodies += read.stdout
    for rev, subject, files in (
        ("HEAD~1", "Add the app", ["src/app.py"]),
        ("HEAD", "Greet the world and document it", ["docs/usage.md", "src/app.py"]),
    ):
        full = git(repo, env, "rev-parse", rev)
        assert f"## {full[:7]} {subject}" in bodies
        assert f"- hash: {full}" in bodies
        assert "\\n- files:\\n" + "".join(f"  - {name}\\n" for name in files) in bodies
    found = run(["amem", "search", "greet world"], repo, env)
    assert found.returncode == 0 and '"id":"commits/' in found.stdout


def test_amem_open_opens_the_top_hit_in_the_editor(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    for note_id, text in (
        ("notes/auth", "Auth tokens expire after 24 hours."),
        ("notes/cache", "Cache entries live five minutes."),
        ("notes/tokens-history", "We once used opaque tokens."),
    ):
        assert run(["amem", "write", note_id, text], repo, env).returncode == 0
    opened = tmp_path / "opened"
    editor = tmp_path / "editor"
    editor.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{opened}"\n')
    editor.chmod(0o755)
    source = f". {RECIPES / 'amem-open.sh'}\n"

    shells = [("bash", str(editor))]
    if shutil.which("zsh"):
        shells.append(("zsh", f"{editor} --wait"))  # zsh does not split "$EDITOR" by itself
    for shell, editor_command in shells:
        opened.unlink(missing_ok=True)
        result = run([shell, "-c", source + "amem_open auth token"], repo, dict(env, EDITOR=editor_command))
        assert result.returncode == 0, result.stderr
        expected = [str(repo / ".amem" / "memory" / "notes" / "auth.md")]
        assert opened.read_text().splitlines() == (["--wait", *expected] if shell == "zsh" else expected)

    opened.unlink()
    nothing = run(["bash", "-c", source + "amem_open zebra"], repo, dict(env, EDITOR=str(editor)))
    assert nothing.returncode == 1 and "no note matches: zebra" in nothing.stderr
    assert not opened.exists()


@pytest.mark.slow
def test_agent_loop_rereads_and_retries_after_a_conflict(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "agent-remember"
    script.write_text(recipe("agent-remember.sh"))
    script.chmod(0o755)
    assert run(["amem", "write", "notes/auth", "Auth tokens expire after 24 hours."], repo, env).returncode == 0

    # Another agent writes to the note between this agent's read and its write: an `amem` in front of the
    # real one makes that competing write (once) just before passing the first write on.
    real = Path(env["PATH"].split(os.pathsep)[0]) / "amem"
    once = tmp_path / "competed"
    racer = tmp_path / "racer"
    racer.mkdir()
    (racer / "amem").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = write ] && mkdir "{once}" 2>/dev/null; then\n'
        f'    "{real}" write "$2" --append "Another agent: signing keys rotate monthly." >/dev/null\n'
        "fi\n"
        f'exec "{real}" "$@"\n'
    )
    (racer / "amem").chmod(0o755)
    racing = dict(env, PATH=f"{racer}{os.pathsep}{env['PATH']}")

    fact = "Refresh tokens five minutes before they expire."
    result = run([str(script), "auth token", fact], repo, racing)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("changed since it was read") == 1
    assert '"code": "conflict"' in result.stderr
    assert "added to notes/auth.md" in result.stderr
    body = run(["amem", "read", "notes/auth"], repo, env).stdout
    for text in ("Auth tokens expire after 24 hours.", "Another agent: signing keys rotate monthly.", fact):
        assert body.count(text) == 1, text  # nobody's update was lost, and the fact went in once

    again = run([str(script), "auth token", fact], repo, env)
    assert again.returncode == 0 and "already has it" in again.stderr
    assert run(["amem", "read", "notes/auth"], repo, env).stdout.count(fact) == 1

    new = run([str(script), "deploys", "Deploys go out on Tuesdays."], repo, env)
    assert new.returncode == 0 and "added to notes/deploys" in new.stderr, new.stderr  # a new note: no search hit
    assert "Deploys go out on Tuesdays." in run(["amem", "read", "notes/deploys"], repo, env).stdout
