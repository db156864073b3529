"""Ignore rules: the defaults, user regexes, .gitignore files, and amem's own folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.fswatch.rules import IgnoreRules

from ..conftest import write_file


@pytest.mark.parametrize(
    "rel",
    [
        ".git/config",
        "node_modules/x/index.js",
        "a/node_modules/b.js",
        "dist/app.js",
        "pkg/build/out.o",
        ".next/cache/x",
        "web/.turbo/log",
        "coverage/lcov.info",
        ".DS_Store",
        "sub/.DS_Store",
        "npm-debug.log",
        "logs/app.log",
        "yarn.lock",
        "deep/Cargo.lock",
    ],
)
def test_default_patterns_ignore_at_any_depth(tmp_path: Path, rel: str) -> None:
    rules = IgnoreRules(str(tmp_path))
    assert rules.is_path_ignored(rel)


@pytest.mark.parametrize(
    "rel",
    ["src/app.py", "distance.txt", "builder/x.md", "logbook.md", "locks/x.txt", ".gitignore", "docs/node_modules.md"],
)
def test_ordinary_paths_are_kept(tmp_path: Path, rel: str) -> None:
    assert not IgnoreRules(str(tmp_path)).is_path_ignored(rel)


@pytest.mark.parametrize("folder", ["node_modules", "a/dist", ".git", "coverage"])
def test_default_folders_are_pruned(tmp_path: Path, folder: str) -> None:
    assert IgnoreRules(str(tmp_path)).is_ignored(folder, is_dir=True)


def test_a_folder_named_like_a_log_file_is_not_pruned(tmp_path: Path) -> None:
    rules = IgnoreRules(str(tmp_path))
    assert not rules.is_ignored("archive.log", is_dir=True)
    assert rules.is_ignored("archive.log", is_dir=False)


def test_user_regexes_match_the_relative_path(tmp_path: Path) -> None:
    rules = IgnoreRules(str(tmp_path), patterns=[r"tmp/", r"^\.cache/", r"\.swp$", r"^generated"])
    assert rules.is_ignored("tmp", is_dir=True)  # a regex written for a folder prunes the folder
    assert rules.is_path_ignored("a/tmp/x.txt")
    assert rules.is_ignored(".cache", is_dir=True)
    assert rules.is_path_ignored("notes/.x.md.swp")
    assert rules.is_path_ignored("generated/types.ts")
    assert not rules.is_path_ignored("src/.cache/keep.md")  # anchored: only at the root
    assert not rules.is_path_ignored("src/main.ts")


def test_gitignore_at_the_root_and_nested_with_negation(tmp_path: Path) -> None:
    write_file(tmp_path / ".gitignore", "*.tmp\n!keep.tmp\nout/\n/rootonly.md\n# comment\n")
    write_file(tmp_path / "pkg" / ".gitignore", "secret.txt\n!*.keep.tmp\n")
    rules = IgnoreRules(str(tmp_path))
    rules.load_gitignore("")
    rules.load_gitignore("pkg")
    assert rules.is_path_ignored("a.tmp")
    assert not rules.is_path_ignored("keep.tmp")
    assert rules.is_ignored("out", is_dir=True) and rules.is_ignored("x/out", is_dir=True)
    assert not rules.is_ignored("out", is_dir=False)  # `out/` names folders only
    assert rules.is_path_ignored("rootonly.md") and not rules.is_path_ignored("sub/rootonly.md")
    assert rules.is_path_ignored("pkg/secret.txt") and not rules.is_path_ignored("secret.txt")
    assert not rules.is_path_ignored("pkg/x.keep.tmp")  # the deeper file overrides the root's *.tmp
    assert rules.is_path_ignored("pkg/x.tmp")


def test_no_gitignore_turns_gitignore_off(tmp_path: Path) -> None:
    write_file(tmp_path / ".gitignore", "*.md\n")
    rules = IgnoreRules(str(tmp_path), use_gitignore=False)
    rules.load_gitignore("")
    assert not rules.is_path_ignored("notes.md")


def test_gitignore_above_the_root_inside_the_repository(tmp_path: Path) -> None:
    write_file(tmp_path / ".gitignore", "sub/generated/\n*.bak\n")
    root = tmp_path / "sub"
    root.mkdir()
    rules = IgnoreRules(str(root), git_toplevel=str(tmp_path))
    assert rules.is_ignored("generated", is_dir=True)
    assert rules.is_path_ignored("x.bak")
    assert not rules.is_path_ignored("x.md")


def test_reloading_a_changed_gitignore(tmp_path: Path) -> None:
    rules = IgnoreRules(str(tmp_path))
    assert not rules.load_gitignore("")
    write_file(tmp_path / ".gitignore", "*.md\n")
    assert rules.load_gitignore("")
    assert rules.is_path_ignored("a.md")
    (tmp_path / ".gitignore").unlink()
    assert rules.load_gitignore("")
    assert not rules.is_path_ignored("a.md")


def test_amem_own_folders_are_excluded(tmp_path: Path) -> None:
    vault = tmp_path / ".amem" / "memory"
    rules = IgnoreRules(str(tmp_path), excluded=[str(vault), str(tmp_path / "elsewhere")])
    assert rules.is_ignored(".amem/memory", is_dir=True)
    assert rules.is_path_ignored(".amem/memory/observations/2026-01-01.md")
    assert not rules.is_path_ignored(".amem/config.yaml")
    assert not rules.root_excluded


def test_a_root_inside_the_vault_is_excluded_whole(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    assert IgnoreRules(str(vault / "notes"), excluded=[str(vault)]).root_excluded
    assert IgnoreRules(str(vault), excluded=[str(vault)]).root_excluded


def test_exclusions_through_a_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "mem").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    rules = IgnoreRules(str(link), excluded=[str(real / "mem")])
    assert rules.is_ignored("mem", is_dir=True)


def test_a_root_the_repository_ignores_keeps_its_files(tmp_path: Path) -> None:
    write_file(tmp_path / ".gitignore", "generated/\n*.bak\n")
    root = tmp_path / "generated"
    root.mkdir()
    rules = IgnoreRules(str(root), git_toplevel=str(tmp_path))
    assert not rules.is_path_ignored("x.bak")
    assert not rules.is_path_ignored("api.ts")
