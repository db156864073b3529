"""What stands in the way of a pull: files in the work tree that the move from HEAD to the merged commit
would replace or delete and that are not committed, and the note locks that keep writers out meanwhile.

`git read-tree -m -u` refuses to overwrite a changed tracked file or an untracked one, but a file git ignores
(`.git/info/exclude`, a `.gitignore`, the global excludes) it treats as expendable and overwrites: a note
written in an ignored folder would be lost for good. So before the work tree moves, sync asks git itself
which of the paths the move touches hold content HEAD does not have (the file, a file where a folder is to
be, or the files of a folder where a file is to be), and decides:

- a vault note, or any vault file git does not ignore, is committed first (forced, if git ignores it). The
  merge then meets it as it meets any local change: merged by amem's rules, or, when both sides wrote
  something different, kept at its path with the remote's version beside it as a conflict copy, reported
  in `conflicts` on both machines. Once the remote's version arrives the path is shared whatever the ignore
  rules say, so keeping both in the shared history is the one way neither is lost.
- anything else (a file git ignores that is not a note, such as a secret, or any file outside the vault
  under `--whole-repo`) is never committed: the sync stops with nothing moved and names it.

While this check and the move run, sync holds the write lock of every vault note the move touches, so a
concurrent `amem write` either lands before (and is committed first) or waits and lands after (and is left
for the next sync): never overwritten, never an error blaming the note.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..atomicfile import is_temporary
from ..gitvault.git import Repository, _run

if TYPE_CHECKING:
    from ..config import Config

#: How long sync waits for one note's writer to release its lock before it goes on without that lock.
LOCK_WAIT_SECONDS = 3.0


@dataclass
class Move:
    """The paths (repository paths) that moving from one commit to another changes, by git's status letter."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # modified, type-changed or deleted

    @property
    def all(self) -> list[str]:
        return self.added + self.changed


def planned_move(repo: Repository, head: str | None, new: str) -> Move:
    move = Move()
    if head is None:
        raw = _run(["ls-tree", "-r", "-z", "--name-only", new], repo.top).stdout
        move.added = [os.fsdecode(name) for name in raw.split(b"\0") if name]
        return move
    raw = _run(["diff-tree", "-r", "-z", "--no-renames", "--name-status", head, new], repo.top).stdout
    fields = raw.split(b"\0")
    for status, name in zip(fields[0::2], fields[1::2], strict=False):
        if name:
            (move.added if status == b"A" else move.changed).append(os.fsdecode(name))
    return move


def _candidates(top: str, move: Move) -> list[str]:
    """The work-tree files the move would touch: each path that exists, the files of a folder standing
    where a file is to be, and a file standing where a folder is to be."""
    found: dict[str, None] = {}
    for rel in move.all:
        path = os.path.join(top, rel)
        if os.path.isdir(path) and not os.path.islink(path):
            for folder, _, names in os.walk(path):
                for name in names:
                    found[os.path.relpath(os.path.join(folder, name), top).replace(os.sep, "/")] = None
        elif os.path.lexists(path):
            found[rel] = None
    for rel in move.added:
        parts = rel.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            ancestor = "/".join(parts[:depth])
            path = os.path.join(top, ancestor)
            if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
                found[ancestor] = None
                break
    return list(found)


def uncommitted(repo: Repository, head: str | None, paths: list[str], scratch: str) -> list[str]:
    """Which of `paths` (existing work-tree files) hold content that `head` does not: git's own answer, its
    clean filters applied, through `git add --force` into a scratch index seeded from `head`."""
    if not paths:
        return []
    env = {"GIT_INDEX_FILE": os.path.join(scratch, "in-the-way")}
    if head is not None:
        _run(["read-tree", head], repo.top, env=env)
    listing = b"".join(os.fsencode(p) + b"\0" for p in paths)
    args = ["add", "--force", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"]
    _run(args, repo.top, env=env, input=listing, check=False)  # a file gone meanwhile is not in the way
    if head is None:
        raw = _run(["ls-files", "-z"], repo.top, env=env).stdout
    else:
        raw = _run(["diff-index", "--cached", "-z", "--name-only", "--no-renames", head], repo.top, env=env).stdout
    wanted = set(paths)
    return [name for name in (os.fsdecode(n) for n in raw.split(b"\0") if n) if name in wanted]


def ignored(repo: Repository, paths: list[str]) -> set[str]:
    if not paths:
        return set()
    listing = b"".join(os.fsencode(p) + b"\0" for p in paths)
    # check-ignore refuses --literal-pathspecs; it matches the names against the ignore rules only.
    proc = _run(["check-ignore", "-z", "--stdin"], repo.top, input=listing, check=False, literal_pathspecs=False)
    return {os.fsdecode(n) for n in proc.stdout.split(b"\0") if n}


def _amems_own(path: str) -> bool:
    """amem's temporaries and the keeper's folder: never in a commit, never anyone's work to keep."""
    return is_temporary(os.path.basename(path)) or ".amem-sync" in path.split("/")[:-1]


@dataclass
class InTheWay:
    #: Vault files to commit before the move (repository paths).
    commit: list[str] = field(default_factory=list)
    #: Files the move would destroy and that sync must not commit.
    refuse: list[str] = field(default_factory=list)


def in_the_way(
    repo: Repository, folder: str, extensions: tuple[str, ...], head: str | None, move: Move, scratch: str
) -> InTheWay:
    found = uncommitted(repo, head, _candidates(repo.top, move), scratch)
    way = InTheWay()
    prefix = f"{folder}/" if folder else ""
    suffixes = tuple(e.lower() for e in extensions)
    found = [p for p in found if not _amems_own(p)]
    inside = [p for p in found if p.startswith(prefix)]
    others = [p for p in inside if not p.lower().endswith(suffixes)]
    hidden = ignored(repo, others)
    for path in found:
        if path in inside and path not in hidden:
            way.commit.append(path)
        else:
            way.refuse.append(path)
    return way


class NoteLocks:
    """The write locks of the vault notes a move touches, held until closed; taken without ever blocking
    for long (a writer holds one for a few milliseconds), so that sync and a multi-note `move` cannot
    deadlock."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.held: dict[str, int] = {}

    def take(self, paths: list[str]) -> None:
        from ..store.write import lock_file

        for path in sorted(set(paths) - set(self.held)):
            fd = lock_file(self.config, path)
            deadline = time.monotonic() + LOCK_WAIT_SECONDS
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self.held[path] = fd
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        os.close(fd)  # git's own check of changed files still guards this one
                        break
                    time.sleep(0.005)

    def close(self) -> None:
        for fd in self.held.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.held.clear()


def note_paths(repo: Repository, folder: str, extensions: tuple[str, ...], move: Move) -> list[str]:
    """The absolute paths of the vault's notes among a move's paths (the files writers lock)."""
    prefix = f"{folder}/" if folder else ""
    suffixes = tuple(e.lower() for e in extensions)
    return [os.path.join(repo.top, p) for p in move.all if p.startswith(prefix) and p.lower().endswith(suffixes)]


def raise_fd_limit(wanted: int) -> None:
    """Let this process hold `wanted` more files open (one lock per note of a large pull), within the hard
    limit."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        need = wanted + 256
        if soft != resource.RLIM_INFINITY and soft < need:
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else min(need, hard), hard)
            )
    except (ImportError, ValueError, OSError):
        pass
