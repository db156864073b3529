"""What a commit would hold under a folder, for `amem check --staged` (which a pre-commit hook runs): the
index git commits from, its entries and its changes against HEAD, HEAD's entries, and blobs' bytes."""

from __future__ import annotations

import os
from typing import NamedTuple

from .git import Repository, _run, find_repository

#: The modes of index and tree entries that hold a file's bytes (plain and executable; a symlink's blob is
#: the path it points to).
REGULAR_MODES = ("100644", "100755")
#: A submodule's commit (a gitlink): nothing of it is in this repository.
GITLINK_MODE = "160000"


class Entry(NamedTuple):
    """A path of the index or of a tree, with its mode and object name."""

    path: str
    mode: str
    oid: str


class StagedChange(NamedTuple):
    """A path the commit adds, copies, deletes, modifies, renames or changes the type of (`status`, one of
    `ACDMRT`), with its new mode and object (`000000…` for a deletion) and the path and entry it had in HEAD
    (None when it is new there; for a rename or copy, the source)."""

    status: str
    path: str
    mode: str
    oid: str
    before: Entry | None


class CommitIndex(NamedTuple):
    """The index a commit is made from: git's own, or the one git names in `GIT_INDEX_FILE` for the
    pre-commit hook (`commit -a`, `commit PATHS` and partial commits build a temporary one)."""

    repo: Repository
    env: dict[str, str]


def commit_index(repo: Repository, warnings: list[str]) -> CommitIndex:
    """The index named by an inherited `GIT_INDEX_FILE` (a relative one taken from the working directory,
    as git does), unless the repository git works in here is not `repo`: that index is another
    repository's, and `repo`'s own is read (with a warning)."""
    named = os.environ.get("GIT_INDEX_FILE")
    if not named:
        return CommitIndex(repo, {})
    git_dir = os.environ.get("GIT_DIR")
    if git_dir:
        working_git_dir: str | None = os.path.abspath(git_dir)
    else:
        here = find_repository(os.getcwd())
        working_git_dir = here.git_dir if here is not None else None
    if working_git_dir is not None and os.path.realpath(working_git_dir) != os.path.realpath(repo.git_dir):
        warnings.append(
            "the commit is made in another repository than the vault's: what the vault has staged is checked"
        )
        return CommitIndex(repo, {})
    return CommitIndex(repo, {"GIT_INDEX_FILE": os.path.abspath(named)})


def _under(folder: str) -> list[str]:
    return ["--", folder] if folder else []


def _inside(path: bytes, folder: str) -> str | None:
    """A repository path as a path under `folder` (its prefix cut), None when it lies outside."""
    name = os.fsdecode(path)
    return name[len(folder) :] if name.startswith(folder) else None


def has_head(repo: Repository) -> bool:
    return _run(["rev-parse", "--verify", "--quiet", "HEAD"], repo.top, check=False).returncode == 0


def staged_changes(index: CommitIndex, folder: str) -> list[StagedChange]:
    """What the index changes against HEAD (or, before the first commit, every staged path) under `folder`
    ('' for the whole repository, else ending in `/`), by path under it, renames found as `git commit`
    shows them."""
    repo = index.repo
    empty_tree = ["hash-object", "-t", "tree", os.devnull]
    base = "HEAD" if has_head(repo) else _run(empty_tree, repo.top).stdout.decode().strip()
    args = ["diff-index", "--cached", "-z", "-M", "--diff-filter=ACDMRT", base, *_under(folder)]
    fields = _run(args, repo.top, env=index.env).stdout.split(b"\0")
    changes: list[StagedChange] = []
    at = 0
    while at + 1 < len(fields) and fields[at].startswith(b":"):
        old_mode, new_mode, old_oid, new_oid, status = fields[at][1:].decode("ascii").split(" ")
        kind = status[0]
        old, new = (fields[at + 1], fields[at + 2]) if kind in "RC" else (fields[at + 1], fields[at + 1])
        at += 3 if kind in "RC" else 2
        path, old_path = _inside(new, folder), _inside(old, folder)
        if path is not None:
            before = Entry(old_path, old_mode, old_oid) if kind != "A" and old_path is not None else None
            changes.append(StagedChange(kind, path, new_mode, new_oid, before))
    return changes


def _entries(out: bytes, oid_field: int, folder: str) -> list[Entry]:
    """The entries under `folder` of `ls-files --stage -z` (`mode oid stage`, oid_field 1) or `ls-tree -z`
    (`mode type oid`, oid_field 2), a tab and the path after each; one per path."""
    entries: dict[str, Entry] = {}
    for line in out.split(b"\0"):
        head, _, path = line.partition(b"\t")
        name = _inside(path, folder)
        if head and name is not None:
            fields = head.decode("ascii").split(" ")
            entries[name] = Entry(name, fields[0], fields[oid_field])
    return list(entries.values())


def staged_entries(index: CommitIndex, folder: str) -> list[Entry]:
    """Every entry of the index under `folder`, by path under it: the tree the commit would hold."""
    out = _run(["ls-files", "-z", "--stage", *_under(folder)], index.repo.top, env=index.env).stdout
    return _entries(out, 1, folder)


def head_entries(repo: Repository, folder: str) -> list[Entry]:
    """Every file of HEAD's tree under `folder`, by path under it; HEAD must name a commit."""
    out = _run(["ls-tree", "-r", "-z", "--full-tree", "HEAD", *_under(folder)], repo.top).stdout
    return _entries(out, 2, folder)
