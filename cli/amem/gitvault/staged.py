"""What git has staged under a folder: the changed paths, the staged tree's paths, and a file's staged and
HEAD contents (for `amem check --staged`, which a pre-commit hook runs)."""

from __future__ import annotations

import os
from typing import NamedTuple

from .git import Repository, _run


class StagedChange(NamedTuple):
    """A path the commit would add or change, and the path it had in HEAD (None when it is new)."""

    path: str
    before: str | None


def _under(folder: str) -> list[str]:
    return ["--", folder] if folder else []


def staged_changes(repo: Repository, folder: str) -> list[StagedChange]:
    """The files added, copied, modified or renamed in git's index compared with HEAD (or, before the
    first commit, every staged file), under `folder` ('' for the whole repository), by repository path."""
    has_head = _run(["rev-parse", "--verify", "--quiet", "HEAD"], repo.top, check=False).returncode == 0
    base = "HEAD" if has_head else _run(["hash-object", "-t", "tree", os.devnull], repo.top).stdout.decode().strip()
    args = ["diff", "--cached", "--name-status", "-z", "-M", "--diff-filter=ACMR", base, *_under(folder)]
    fields = [os.fsdecode(f) for f in _run(args, repo.top).stdout.split(b"\0") if f]
    changes: list[StagedChange] = []
    at = 0
    while at < len(fields):
        status = fields[at]
        if status[0] in "RC":
            old, new = fields[at + 1], fields[at + 2]
            changes.append(StagedChange(new, old if status[0] == "R" and has_head else None))
            at += 3
        else:
            changes.append(StagedChange(fields[at + 1], fields[at + 1] if status[0] == "M" else None))
            at += 2
    return changes


def staged_paths(repo: Repository, folder: str) -> list[str]:
    """Every file in git's index under `folder`: the tree the commit would hold."""
    out = _run(["ls-files", "-z", "--cached", *_under(folder)], repo.top).stdout
    return [os.fsdecode(path) for path in out.split(b"\0") if path]


def staged_content(repo: Repository, path: str) -> bytes:
    """The bytes git has staged for `path` (`git show :path`)."""
    return _run(["cat-file", "blob", f":{path}"], repo.top).stdout


def head_content(repo: Repository, path: str) -> bytes | None:
    """The bytes of `path` in HEAD, or None when HEAD has no such file."""
    proc = _run(["cat-file", "blob", f"HEAD:{path}"], repo.top, check=False)
    return proc.stdout if proc.returncode == 0 else None
