"""`amem check --staged` judges the commit git is about to make (SPEC §16): the documented pre-commit hook,
installed in real repositories, under real `git commit -a`, `git commit PATHS`, partial staging, type
changes, renames and deletions that break other notes' links, and a submodule named like a note."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import write_file
from tests.gitrepo import commit_all, git, init_repo, set_identity
from tests.installed import amem_bin, installed_runner, path_with

RECIPE = Path(__file__).resolve().parent.parent / "docs" / "recipes" / "pre-commit-check.md"


def _install_hook(repo: Path) -> None:
    blocks = re.findall(r"```sh\n(.*?)```", RECIPE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1
    hook = Path(git(repo, "rev-parse", "--git-path", "hooks")) / "pre-commit"
    hook = hook if hook.is_absolute() else repo / hook
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(blocks[0])
    hook.chmod(0o755)


def _start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notes: dict[str, str | bytes]) -> tuple[Path, Path]:
    """A repository whose folder `memory` is the vault, holding `notes`, committed, with the hook installed."""
    set_identity(monkeypatch)
    repo = init_repo(tmp_path / "project")
    vault = repo / "memory"
    monkeypatch.setenv("AMEM_VAULT", str(vault))
    for name, text in notes.items():
        write_file(vault / name, text)
    commit_all(repo, "start")
    _install_hook(repo)
    return repo, vault


def _commit(tmp_path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git commit -q -m change ARGS` as a user runs it, the installed amem on PATH for the hook."""
    env = {**os.environ, "PATH": path_with(amem_bin(tmp_path / "bin"))}
    argv = ["git", "commit", "-q", "-m", "change", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _refused(done: subprocess.CompletedProcess[str], *lines: str) -> None:
    assert done.returncode != 0, done.stderr
    assert "found problems (exit 11)" in done.stderr, done.stderr
    for line in lines:
        assert line in done.stderr, done.stderr


def _accepted(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr


def _stage_blob(repo: Path, path: str, text: str) -> None:
    """Stage `text` as `path` without touching the working file, as `git add -p` does."""
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=text, capture_output=True, text=True, check=True
    ).stdout.strip()
    git(repo, "update-index", "--cacheinfo", f"100644,{blob},{path}")


def _subjects(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


# --- the index git names ---------------------------------------------------------------------------------


def test_commit_a_is_judged_by_the_working_files_it_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, vault = _start(tmp_path, monkeypatch, {"index.md": "# Index\n", "b.md": "# B\n"})
    write_file(vault / "index.md", "# Index\nsee [[nowhere]]\n")  # changed in the working file only
    _refused(_commit(tmp_path, repo, "-a"), "index.md:2: broken-link: [[nowhere]]")
    assert _subjects(repo) == ["start"]
    write_file(vault / "index.md", "# Index\nsee [[b]]\n")
    _accepted(_commit(tmp_path, repo, "-a"))
    assert _subjects(repo) == ["change", "start"]


def test_commit_a_in_a_linked_worktree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _ = _start(tmp_path, monkeypatch, {"index.md": "# Index\n"})
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", str(tree))
    monkeypatch.setenv("AMEM_VAULT", str(tree / "memory"))
    write_file(tree / "memory" / "index.md", "# Index\nsee [[nowhere]]\n")
    _refused(_commit(tmp_path, tree, "-a"), "index.md:2: broken-link")
    write_file(tree / "memory" / "index.md", "# Index\nsee [[index]]\n")
    _accepted(_commit(tmp_path, tree / "memory", "-a"))


def test_commit_paths_is_judged_by_those_paths_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, vault = _start(tmp_path, monkeypatch, {"index.md": "# Index\n", "b.md": "# B\n"})
    write_file(vault / "broken.md", "# Broken\n[[nowhere]]\n")
    git(repo, "add", "memory/broken.md")  # staged, but not in the commit below
    write_file(vault / "index.md", "# Index\nsee [[b]]\n")
    _accepted(_commit(tmp_path, repo, "memory/index.md"))
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "memory/index.md"
    assert git(repo, "diff", "--cached", "--name-only") == "memory/broken.md"  # still staged
    # Committing the broken note by its path, from the vault's folder, is refused.
    _refused(_commit(tmp_path, vault, "broken.md"), "broken.md:2: broken-link")
    assert _subjects(repo) == ["change", "start"]


def test_a_note_staged_in_part_is_judged_as_the_commit_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, vault = _start(tmp_path, monkeypatch, {"index.md": "# Index\n", "b.md": "# B\n"})
    write_file(vault / "index.md", "# Index\nsee [[b]]\nand [[nowhere]]\n")
    _stage_blob(repo, "memory/index.md", "# Index\nsee [[b]]\n")  # the clean hunk only
    _accepted(_commit(tmp_path, repo))
    assert git(repo, "show", "HEAD:memory/index.md") == "# Index\nsee [[b]]"
    # `git commit PATHS` commits the working file, broken hunk and all, whatever is staged.
    _stage_blob(repo, "memory/index.md", "# Index\nsee [[b]]\nclean\n")
    _refused(_commit(tmp_path, repo, "memory/index.md"), "index.md:3: broken-link: [[nowhere]]")
    assert _subjects(repo) == ["change", "start"]


def test_a_hook_of_another_repository_does_not_read_its_index_against_the_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One hook for every repository (core.hooksPath) while AMEM_VAULT names a vault in another one: a
    # commit there says nothing of the vault, which has nothing staged.
    _start(tmp_path, monkeypatch, {"index.md": "[[b]]\n", "b.md": "# B\n"})
    other = init_repo(tmp_path / "other")
    write_file(other / "memory" / "index.md", "[[b]]\n")  # the vault's note, but no b.md
    write_file(other / "notes.txt", "one\n")
    commit_all(other, "start")
    _install_hook(other)
    write_file(other / "notes.txt", "two\n")
    done = _commit(tmp_path, other, "-a")
    _accepted(done)
    assert "the commit is made in another repository than the vault's" in done.stderr


# --- what the commit changes -----------------------------------------------------------------------------


def test_a_type_change_that_brings_a_broken_link_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, vault = _start(tmp_path, monkeypatch, {"real.md": "# Real\n"})
    (vault / "alias.md").symlink_to("real.md")
    commit_all(repo, "a symlinked note")
    (vault / "alias.md").unlink()
    write_file(vault / "alias.md", "# Alias\n[[nowhere]]\n")
    git(repo, "add", "-A")
    assert git(repo, "diff", "--cached", "--name-status") == "T\tmemory/alias.md"
    _refused(_commit(tmp_path, repo), "alias.md:2: broken-link: [[nowhere]]")
    write_file(vault / "alias.md", "# Alias\n[[real]]\n")
    git(repo, "add", "-A")
    _accepted(_commit(tmp_path, repo))


LINKED: dict[str, str | bytes] = {
    "a.md": "# A\n\nsee [[b]] and [[b#Part]]\n",
    "b.md": "# B\n\n## Part\n",
    "c.md": "# C\n![[pic.png]] and [the b](b.md)\n",
    "pic.png": b"\x89PNG\r\n",
}


@pytest.mark.parametrize(
    ("change", "refusals"),
    [
        (
            ["mv", "memory/b.md", "memory/renamed.md"],
            [
                "a.md:3: broken-link: [[b]] resolves to no note and no file of the vault: the commit renames "
                '"b.md" to "renamed.md"',
                "c.md:2: broken-link: [[b.md]]",
            ],
        ),
        (["rm", "-q", "memory/b.md"], ["a.md:3: broken-link: [[b]]", 'the commit removes "b.md"', "c.md:2"]),
        (["rm", "-q", "memory/pic.png"], ["c.md:2: broken-link: [[pic.png]]", 'removes "pic.png"']),
    ],
)
def test_a_rename_or_delete_that_breaks_other_notes_links_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: list[str], refusals: list[str]
) -> None:
    repo, _ = _start(tmp_path, monkeypatch, LINKED)
    git(repo, *change)
    _refused(_commit(tmp_path, repo), *refusals)
    assert _subjects(repo) == ["start"]


def test_a_rename_that_links_still_reach_or_that_fixes_them_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, vault = _start(tmp_path, monkeypatch, {**LINKED, "c.md": "# C\n![[pic.png]]\n"})
    (vault / "sub").mkdir()
    (vault / "assets").mkdir()
    git(repo, "mv", "memory/b.md", "memory/sub/b.md")  # [[b]] still finds it by its name
    git(repo, "mv", "memory/pic.png", "memory/assets/pic.png")
    _accepted(_commit(tmp_path, repo))
    git(repo, "mv", "memory/sub/b.md", "memory/renamed.md")
    write_file(vault / "a.md", "# A\n\nsee [[renamed]] and [[renamed#Part]]\n")
    git(repo, "add", "memory/a.md")
    _accepted(_commit(tmp_path, repo))
    # A link broken before the commit is not this commit's doing.
    write_file(vault / "d.md", "[[never]]\n")
    write_file(vault / "e.md", "# E\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "d and e")
    git(repo, "rm", "-q", "memory/e.md")
    _accepted(_commit(tmp_path, repo))


def test_a_removal_reports_what_the_check_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, vault = _start(tmp_path, monkeypatch, LINKED)
    run = installed_runner(tmp_path, vault)
    git(repo, "rm", "-q", "memory/b.md")
    done = run("check", "--staged")
    assert done.code == 11, done.stderr
    assert [(p["kind"], p["id"], p["line"], p["target"]) for p in done.json["problems"]] == [
        ("broken-link", "a.md", 3, "b"),
        ("broken-link", "c.md", 2, "b.md"),
    ]
    assert [p["id"] for p in run("check", "--staged", "a").json["problems"]] == ["a.md"]


# --- what git cannot show ----------------------------------------------------------------------------


def test_a_submodule_named_like_a_note_is_skipped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, vault = _start(tmp_path, monkeypatch, {"index.md": "# Index\n"})
    inner = init_repo(tmp_path / "inner")
    write_file(inner / "readme.md", "inner\n")
    commit = commit_all(inner, "inner")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{commit},memory/x.md")
    done = installed_runner(tmp_path, vault)("check", "--staged")
    assert done.code == 0, done.stderr
    assert done.json["problems"] == []
    assert '"x.md" is a submodule: what it holds is not checked' in done.stderr
    committed = _commit(tmp_path, repo)
    _accepted(committed)
    assert "x.md" in committed.stderr  # the hook passes the warning on
    assert git(repo, "ls-tree", "HEAD", "memory/x.md").startswith("160000 commit")


def test_a_staged_path_git_cannot_show_is_skipped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, vault = _start(tmp_path, monkeypatch, {"index.md": "# Index\n"})
    missing = "1" * len(git(repo, "rev-parse", "HEAD"))
    git(repo, "update-index", "--add", "--info-only", "--cacheinfo", f"100644,{missing},memory/ghost.md")
    done = installed_runner(tmp_path, vault)("check", "--staged")
    assert done.code == 0, done.stderr
    assert 'git cannot show the staged "ghost.md": it is not checked' in done.stderr
