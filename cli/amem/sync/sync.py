"""`amem sync`: share one vault between machines through its git repository's remote.

One round: commit the vault's pending changes (only its files, the user's index otherwise untouched), fetch
the remote's branch, integrate it, push. Integration is git's own merge (`git merge-tree`, which runs the
note merge driver of `amem.gitvault.merge` for notes both sides changed), made without touching the user's
index or files except the paths the merge changed. A push the remote rejects because it moved meanwhile is
retried after integrating again.

A real conflict keeps both versions: the local one stays at the note's path, the remote one is written
beside it as a conflict copy, `<stem>.conflict-<commit><ext>`. Both are committed and pushed, so every
machine sees the conflict; the user merges the copy into the note by hand and deletes it, and the next sync
carries that through.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from .. import trust
from ..errors import GitError
from ..gitvault.git import (
    Repository,
    _failure,
    _identity,
    _IndexLock,
    _out,
    _run,
    _run_waiting_for_locks,
    _stderr,
    find_repository,
    head_commit,
    read_bytes,
    stored_ref,
)
from ..report import Reporter
from .attributes import DRIVER_NAME, force_note_driver, report_attributes, route_vault_notes

if TYPE_CHECKING:
    from ..config import Config

#: How often to integrate again when the remote moved between our fetch and our push.
PUSH_ATTEMPTS = 5


# Plain classes rather than dataclasses or NamedTuples: a sync would pay for defining them.
class SyncOutcome:
    def __init__(self, remote: str) -> None:
        self.remote = remote
        self.pulled: list[str] = []
        self.pushed: list[str] = []
        self.conflicts: list[str] = []
        #: The last commit amem made (pending changes or a merge), None when it made none.
        self.commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "pulled": self.pulled,
            "pushed": self.pushed,
            "conflicts": self.conflicts,
            "commit": self.commit,
            "remote": self.remote,
        }


class _Place:
    """Where the vault is in its repository and what it syncs with. (Plain classes rather than NamedTuples:
    an idle sync would pay for defining each.)"""

    __slots__ = (
        *("repo", "folder", "branch", "remote", "remote_ref", "tracking_ref", "settings", "head", "pending"),
        "ignored",
    )

    def __init__(
        self,
        repo: Repository,
        folder: str,
        branch: str,
        remote: str,
        remote_ref: str,
        tracking_ref: str,
        settings: dict[str, str],
        head: str | None = None,
        pending: bool = False,
        ignored: tuple[str, ...] = (),
    ) -> None:
        self.repo = repo
        #: The vault's folder relative to the repository's top ('' when the vault is the whole repository).
        self.folder = folder
        self.branch = branch
        self.remote = remote
        #: The remote's branch (`refs/heads/...`) and our copy of it (`refs/remotes/<remote>/...`).
        self.remote_ref = remote_ref
        self.tracking_ref = tracking_ref
        self.settings = settings
        #: HEAD's commit when the sync started (None before the first commit), and whether the vault's
        #: files had changes to commit.
        self.head = head
        self.pending = pending
        #: the vault's notes that git ignores (repository paths): never committed, so never synced
        self.ignored = ignored

    @property
    def pathspec(self) -> str:
        return self.folder or "."

    def note_id(self, rel: str) -> str | None:
        """The vault-relative id of a repository path, or None when it lies outside the vault."""
        if not self.folder:
            return rel
        prefix = self.folder + "/"
        return rel[len(prefix) :] if rel.startswith(prefix) else None


# --- where and with what ----------------------------------------------------------------------------


def _settings(repo: Repository) -> dict[str, str]:
    """The repository's git configuration (all levels), last value of each key."""
    proc = _run(["config", "-z", "--list"], repo.top, check=False)
    settings: dict[str, str] = {}
    for item in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = item.partition("\n")
        if key:
            settings[key] = value
    return settings


def _setting(settings: dict[str, str], section: str, name: str, key: str) -> str | None:
    """`section.name.key`: section and key are case-insensitive, the middle name is not."""
    return settings.get(f"{section}.{name}.{key}")


def _remotes(settings: dict[str, str]) -> list[str]:
    names = []
    for key in settings:
        if key.startswith("remote.") and key.endswith(".url"):
            names.append(key[len("remote.") : -len(".url")])
    return names


def _locate(config: Config, remote: str | None, whole_repo: bool) -> _Place:
    """Where the sync happens: the vault's repository, its folder in it, the branch, the remote and its
    branch, and whether the vault has changes to commit; a GitError that says what to do otherwise."""
    repo = _repository_of(config.vault_dir)
    real_vault, real_top = os.path.realpath(config.vault_dir), os.path.realpath(repo.top)
    folder = "" if real_vault == real_top else repo.relpath(config.vault_dir)
    head, branch, pending, ignored = _status(repo, folder, config.extensions)
    if any(path.endswith("/") for path in ignored):
        from .ignored import holding_notes

        ignored = holding_notes(repo.top, folder, ignored, config.extensions, config.index_hidden_dirs)
    if branch == "(detached)":
        raise GitError("the vault's git repository is not on a branch (detached HEAD); check out a branch to sync")
    if folder and not whole_repo:
        raise GitError(
            f"the vault is the folder {folder}/ of a larger git repository; `amem sync` would commit only the "
            f"vault's files, but then merge the remote's changes into that repository's branch {branch} and push "
            f"it, the repository's other commits included. Run `amem sync --whole-repo` to do that",
            folder=folder,
        )
    settings = _settings(repo)
    chosen = _chosen_remote(settings, branch, remote)
    merge = _setting(settings, "branch", branch, "merge")
    tracked_remote = _setting(settings, "branch", branch, "remote")
    remote_ref = merge if merge and tracked_remote == chosen else f"refs/heads/{branch}"
    tracking_ref = f"refs/remotes/{chosen}/{remote_ref.removeprefix('refs/heads/')}"
    return _Place(repo, folder, branch, chosen, remote_ref, tracking_ref, settings, head, pending, ignored)


def _repository_of(vault: str) -> Repository:
    if not os.path.isdir(vault):
        raise GitError("the vault does not exist yet, so there is nothing to sync; write a note first")
    repo = find_repository(vault)
    if repo is None:
        raise GitError(
            "the vault is not in a git repository, so it has nothing to sync with; run `git init` in the vault, "
            "then `git remote add origin URL` (any git remote: a bare repository on a server, GitHub, GitLab)"
        )
    return repo


def _status(
    repo: Repository, folder: str, extensions: tuple[str, ...]
) -> tuple[str | None, str, bool, tuple[str, ...]]:
    """HEAD's commit (None before the first), the branch (`(detached)` when none), whether the vault's
    files have changes, and the vault's notes and folders that git ignores (a folder as `name/`, its files
    unlisted: git does not walk an ignored folder, however large): one `git status` call says all four."""
    status = _run(
        ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--ignored=matching"]
        + ["--", folder or "."],
        repo.top,
    )
    head: str | None = None
    branch = "(detached)"
    pending = False
    ignored: list[str] = []
    suffixes = tuple(ext.lower() for ext in extensions)
    for item in status.stdout.split(b"\0"):
        if item.startswith(b"# branch.oid "):
            oid = item[len(b"# branch.oid ") :].decode("ascii")
            head = None if oid == "(initial)" else oid
        elif item.startswith(b"# branch.head "):
            branch = os.fsdecode(item[len(b"# branch.head ") :])
        elif item.startswith(b"! "):
            path = os.fsdecode(item[2:])
            if path.endswith("/") or path.lower().endswith(suffixes):
                ignored.append(path)
        elif item and not item.startswith(b"#"):
            pending = True
    return head, branch, pending, tuple(ignored)


def _chosen_remote(settings: dict[str, str], branch: str, remote: str | None) -> str:
    """The remote to sync with: the one named, else the branch's, else `origin`, else the only one."""
    known = _remotes(settings)
    chosen = remote or _setting(settings, "branch", branch, "remote")
    if chosen is None or chosen == ".":
        chosen = "origin" if "origin" in known else (known[0] if len(known) == 1 else None)
    if chosen is None:
        if known:
            raise GitError(
                f"the vault's git repository has several remotes ({', '.join(sorted(known))}); "
                "name the one to sync with: `amem sync --remote NAME`"
            )
        raise GitError(
            "the vault's git repository has no remote to sync with; add one with `git remote add origin URL` "
            "(a bare repository on a server, GitHub, GitLab, or a local path)"
        )
    if chosen not in known:
        raise GitError(f"the vault's git repository has no remote named {chosen}; add it with `git remote add`")
    return chosen


def driver_command() -> str:
    """How git starts the note merge driver: this interpreter, so it finds this amem."""
    return f"{shlex.quote(sys.executable)} -m amem.gitvault.merge %O %A %B %L %P"


def _set_up_merging(config: Config, place: _Place, reporter: Reporter) -> bool:
    """Register the note merge driver in the repository config and for the vault's notes in `.gitattributes`;
    True when `.gitattributes` had to be written. A `.gitattributes` that is a symlink or no file at all (a
    remote can commit one that leads anywhere) is neither read nor written through: the notes merge by
    amem's rules all the same, routed by the repository's `info/attributes`."""
    command = driver_command()
    force_note_driver(place.repo, place.folder, config.extensions)
    if place.settings.get(f"merge.{DRIVER_NAME}.driver") != command:
        _run(["config", f"merge.{DRIVER_NAME}.name", "amem: append-aware merge of notes"], place.repo.top)
        _run(["config", f"merge.{DRIVER_NAME}.driver", command], place.repo.top)
    return route_vault_notes(config.vault_dir, config.extensions, reporter)


# --- committing the vault's pending changes ---------------------------------------------------------


#: amem's own files, never committed: its temporaries and the index keeper's folder (pathspec magic).
_OWN_FILES = (":(exclude,glob)**/*.amem-tmp", ":(exclude,glob)**/.amem-sync/**")


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _stage(place: _Place, index_env: dict[str, str], forced: list[str] | None) -> None:
    """Stage into the scratch index: every change under the vault's folder but amem's own files, and
    removals of own files an older amem committed; or, with `forced`, exactly those paths, ignored or not."""
    repo = place.repo
    if forced is not None:
        listing = b"".join(os.fsencode(p) + b"\0" for p in forced)
        args = ["add", "--force", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"]
        _run(args, repo.top, env=index_env, input=listing, check=False)
        return
    spec = f":(literal){place.pathspec}"
    _run(["add", "-A", "--", spec, *_OWN_FILES], repo.top, env=index_env, literal_pathspecs=False)
    base = f"{_glob_escape(place.folder)}/" if place.folder else ""
    own = [f":(glob){base}**/*.amem-tmp", f":(glob){base}**/.amem-sync/**"]
    listed = _run(["ls-files", "-z", "--", *own], repo.top, env=index_env, literal_pathspecs=False).stdout
    if listed:
        _run(["update-index", "--force-remove", "-z", "--stdin"], repo.top, env=index_env, input=listed)


def _commit_pending(place: _Place, reporter: Reporter, pending: bool, *, forced: list[str] | None = None) -> str | None:
    """Commit every change under the vault's folder (as `git add -A` there would, amem's own files left
    out), and nothing else; with `forced`, exactly those paths. Returns the commit, None when nothing changed.

    The commit is built in a temporary index seeded from HEAD; afterwards the user's index takes the
    committed entries for the vault's paths only, so whatever else is staged stays staged and uncommitted."""
    repo, spec = place.repo, place.pathspec
    if not pending:
        return None
    ident_env, warnings = _identity(repo)
    for message in warnings:
        reporter.warn(message)
    from ..gitvault.gitlocal import scratch_folder

    with _IndexLock(repo) as index_lock, scratch_folder(repo.git_dir) as scratch:
        head = head_commit(repo)
        index_env = {"GIT_INDEX_FILE": os.path.join(scratch, "commit")}
        if head is not None:
            _run(["read-tree", head], repo.top, env=index_env)
        _stage(place, index_env, forced)
        tree = _out(_run(["write-tree"], repo.top, env=index_env))
        unchanged = head is not None and tree == _out(_run(["rev-parse", f"{head}^{{tree}}"], repo.top))
        commit = head if unchanged else _make_commit(repo, tree, head, forced is not None, ident_env)
        # The user's index follows the commit for the vault's paths, also when nothing was new: a sync
        # killed between moving HEAD and publishing the index left it behind HEAD, in the pull's way.
        if commit is not None:
            _index_follows(index_lock, repo, commit, spec, scratch, reporter)
    return None if unchanged else commit


def _make_commit(repo: Repository, tree: str, head: str | None, forced: bool, ident_env: dict[str, str]) -> str:
    message = "amem: sync" if not forced else "amem: sync (local files the pull would replace)"
    commit_args = ["-c", "user.useConfigOnly=true", "commit-tree", tree, "-m", message]
    if head is not None:
        commit_args += ["-p", head]
    commit = _out(_run(commit_args, repo.top, env=ident_env))
    proc = _run_waiting_for_locks(["update-ref", "-m", f"commit: {message}", "HEAD", commit, head or ""], repo.top)
    if proc.returncode != 0:
        raise GitError(f"could not commit the vault's changes: {_failure(['update-ref'], proc)}; try again")
    return commit


def _index_follows(
    index_lock: _IndexLock, repo: Repository, commit: str, spec: str, scratch: str, reporter: Reporter
) -> None:
    """The user's index takes `commit`'s entries for the vault's paths; everything else in it stays."""
    copy = os.path.join(scratch, "user-index")
    if os.path.exists(index_lock.index):
        import shutil

        shutil.copyfile(index_lock.index, copy)
    proc = _run(["reset", "-q", commit, "--", spec], repo.top, env={"GIT_INDEX_FILE": copy}, check=False)
    if proc.returncode == 0:
        index_lock.publish(read_bytes(copy))
    else:
        reporter.warn(
            f"committed {commit[:12]}, but could not update the git index for the vault's files "
            f"({_failure(['reset'], proc)}); `git reset -q` brings it in line"
        )


# --- fetching, integrating, pushing -----------------------------------------------------------------


def _fetch(place: _Place, head: str | None) -> str | None:
    """Fetch the remote's branch into its tracking ref; its commit, or None when the remote has no such branch.
    `head` is the local branch's commit: a remote that holds just that (nothing to pull) is seen in the
    tracking ref's file, without one more git process."""
    refspec = f"+{place.remote_ref}:{place.tracking_ref}"
    # No automatic maintenance in the fetch: it is one more git process in every sync, and a sync that
    # brought in or made nothing has nothing new for it; `_maintain` runs it after a sync that did.
    args = ["-c", "maintenance.auto=false", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head"]
    proc = _run([*args, place.remote, refspec], place.repo.top, check=False)
    if proc.returncode != 0:
        if "couldn't find remote ref" in _stderr(proc):
            return None
        raise GitError(_hide_url(place, f"git fetch failed: {_problem(proc)}"))
    if head is not None and stored_ref(place.repo, place.tracking_ref, place.settings) == head:
        return head  # HEAD's commit: a commit, as `^{commit}` asks
    return _out(_run(["rev-parse", "--verify", "--quiet", f"{place.tracking_ref}^{{commit}}"], place.repo.top))


def _is_ancestor(repo: Repository, older: str, newer: str) -> bool:
    return _run(["merge-base", "--is-ancestor", older, newer], repo.top, check=False).returncode == 0


def _changed(repo: Repository, old: str | None, new: str, spec: str) -> list[str]:
    """Repository paths that differ between two commits (all of `new`'s when `old` is None), under `spec`."""
    if old is None:
        raw = _run(["ls-tree", "-r", "-z", "--name-only", new, "--", spec], repo.top).stdout
    else:
        raw = _run(["diff", "--name-only", "--no-renames", "-z", old, new, "--", spec], repo.top).stdout
    return [os.fsdecode(name) for name in raw.split(b"\0") if name]


class _Merge:
    __slots__ = ("commit", "conflicted")

    def __init__(self, commit: str, conflicted: list[str]) -> None:
        self.commit = commit
        #: The notes (repository paths) whose remote version was kept beside them as a conflict copy.
        self.conflicted = conflicted


_NO_ENTRY = "0" * 40


def _merge(place: _Place, head: str, theirs: str, extensions: tuple[str, ...]) -> _Merge:
    """A merge commit of HEAD and the remote's commit, made without the work tree.

    git merges the tree (`merge-tree`); the notes both sides changed are merged here, in this process,
    with the same rules as the merge driver a plain `git merge` uses, instead of one driver process per
    note. A real conflict keeps ours at the path and theirs in a conflict copy beside it."""
    repo = place.repo
    # The driver is switched off for this merge: each note it would merge comes back as a conflict with
    # its three versions, merged below.
    argv = ["-c", f"merge.{DRIVER_NAME}.driver=false", "merge-tree", "--write-tree", "-z"]
    proc = _run([*argv, "--allow-unrelated-histories", head, theirs], repo.top, check=False)
    if proc.returncode not in (0, 1):
        raise GitError(_failure(["merge-tree"], proc))
    fields = proc.stdout.split(b"\0")
    tree = fields[0].decode("ascii")
    stages: dict[str, dict[int, tuple[str, str]]] = {}
    if proc.returncode == 1:
        for item in fields[1:]:
            if not item:
                break  # the conflicted entries end with an empty field; messages follow
            meta, _, name = item.partition(b"\t")
            mode, oid, stage = meta.decode("ascii").split()
            stages.setdefault(os.fsdecode(name), {})[int(stage)] = (mode, oid)
    kept: list[str] = []
    if stages:
        tree, kept = _resolve(repo, tree, theirs, stages, extensions)
    ident_env, _ = _identity(repo)
    message = f"amem: sync with {place.remote}"
    args = ["-c", "user.useConfigOnly=true", "commit-tree", tree, "-p", head, "-p", theirs, "-m", message]
    return _Merge(_out(_run(args, repo.top, env=ident_env)), kept)


def _read_blobs(repo: Repository, oids: list[str]) -> dict[str, bytes]:
    """The contents of blobs, in one `git cat-file --batch`."""
    if not oids:
        return {}
    unique = list(dict.fromkeys(oids))
    out = _run(["cat-file", "--batch"], repo.top, input="".join(f"{o}\n" for o in unique).encode()).stdout
    blobs: dict[str, bytes] = {}
    pos = 0
    for oid in unique:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        blobs[oid] = out[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return blobs


def _write_blobs(repo: Repository, contents: list[bytes], scratch: str) -> list[str]:
    """Store contents as blobs, in one `git hash-object`; their ids in order."""
    paths = []
    for n, data in enumerate(contents):
        path = os.path.join(scratch, f"blob-{n}")
        with open(path, "wb") as handle:
            handle.write(data)
        paths.append(path)
    proc = _run(["hash-object", "-w", "--no-filters", "--stdin-paths"], repo.top, input="\n".join(paths).encode())
    return proc.stdout.decode("ascii").split()


class _Settled:
    """How the conflicted paths of a merge are settled: tree entries `(mode, oid, path)` (oid _NO_ENTRY
    removes the path), notes merged by content (their blobs still to be written), and the paths whose
    remote version goes into a conflict copy."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, str]] = []
        self.merged: list[tuple[str, str, bytes]] = []  # (mode, path, text)
        self.conflicted: list[str] = []


def _settle(path: str, found: dict[int, tuple[str, str]], blobs: dict[str, bytes], notes: bool, out: _Settled) -> None:
    """Settle one conflicted path: a note both sides changed merged by content when it can be; otherwise
    ours at the path (theirs to a conflict copy when it differs), or the side that did not delete it."""
    from ..gitvault.merge import merge_texts

    ours, other = found.get(2), found.get(3)
    if ours is not None and other is not None and notes:
        base = blobs[found[1][1]] if 1 in found else b""
        clean, text = merge_texts(
            *(x.decode("utf-8", "surrogateescape") for x in (base, blobs[ours[1]], blobs[other[1]])), name=path
        )
        if clean:
            out.merged.append((ours[0], path, text.encode("utf-8", "surrogateescape")))
            return
    if ours is not None:
        out.entries.append((ours[0], ours[1], path))
        if other is not None and other[1] != ours[1]:
            out.conflicted.append(path)
    elif other is not None:
        out.entries.append((other[0], other[1], path))
    else:
        out.entries.append(("0", _NO_ENTRY, path))


def _resolve(
    repo: Repository,
    tree: str,
    theirs: str,
    stages: dict[str, dict[int, tuple[str, str]]],
    extensions: tuple[str, ...],
) -> tuple[str, list[str]]:
    """The merged tree with every conflicted path settled: notes merged by content where they can be;
    otherwise our version at the path and theirs beside it in a conflict copy. When one side deleted
    the file and the other changed it, the changed version stays: nothing is lost."""
    from ..gitvault.gitlocal import scratch_folder

    suffixes = tuple(e.lower() for e in extensions)
    blobs = _read_blobs(repo, [oid for found in stages.values() for _, oid in found.values()])
    settled = _Settled()
    for path, found in stages.items():
        _settle(path, found, blobs, path.lower().endswith(suffixes), settled)
    with scratch_folder(repo.git_dir) as scratch:
        entries = settled.entries
        written = _write_blobs(repo, [text for _, _, text in settled.merged], scratch)
        entries += [(mode, oid, path) for (mode, path, _), oid in zip(settled.merged, written, strict=True)]
        kept = _conflict_copies(repo, tree, theirs, stages, settled.conflicted, entries)
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "merge")}
        _run(["read-tree", tree], repo.top, env=env)
        info = b"".join(f"{mode} {oid}\t".encode() + os.fsencode(path) + b"\0" for mode, oid, path in entries)
        _run(["update-index", "-z", "--index-info"], repo.top, env=env, input=info)
        return _out(_run(["write-tree"], repo.top, env=env)), kept


def _conflict_copies(
    repo: Repository,
    tree: str,
    theirs: str,
    stages: dict[str, dict[int, tuple[str, str]]],
    conflicted: list[str],
    entries: list[tuple[str, str, str]],
) -> list[str]:
    """Add to `entries` the remote version of each conflicted note beside it, under a conflict-copy name
    no file of the tree holds; the notes kept that way."""
    from ..notes.conflicts import conflict_copy_name

    if not conflicted:
        return []
    listing = _run(["ls-tree", "-r", "-z", "--name-only", tree], repo.top).stdout
    taken = {os.fsdecode(name) for name in listing.split(b"\0") if name}
    kept: list[str] = []
    for path in conflicted:
        mode, oid = stages[path][3]
        folder, name = os.path.split(path)
        siblings = {os.path.basename(t) for t in taken if os.path.dirname(t) == folder}
        copy = conflict_copy_name(name, theirs, siblings)
        copy_path = f"{folder}/{copy}" if folder else copy
        taken.add(copy_path)
        entries.append((mode, oid, copy_path))
        kept.append(path)
    return kept


def _advance(place: _Place, head: str, new: str) -> None:
    """Move the work tree, the index and HEAD from `head` to `new`, as a checkout would: only the paths that
    differ change, local changes to other paths (staged or not) stay, and a local change in the way stops it."""
    repo = place.repo
    proc = _run_waiting_for_locks(["read-tree", "-m", "-u", head, new], repo.top)
    if proc.returncode != 0:
        lines = [line.strip() for line in _stderr(proc).splitlines() if line.strip()]
        detail = next((line for line in lines if line.startswith(("error:", "fatal:"))), lines[0] if lines else "")
        files = [line for line in lines if not line.startswith(("error:", "fatal:", "Please", "Aborting"))]
        raise GitError(
            "cannot bring in the remote's changes: local changes that are not the vault's would be overwritten "
            f"({detail.removeprefix('error: ').removeprefix('fatal: ').rstrip(':')}"
            f"{': ' + ', '.join(files) if files else ''}); commit or stash them, then sync again"
        )
    proc = _run_waiting_for_locks(["update-ref", "-m", "amem: sync", "HEAD", new, head], repo.top)
    if proc.returncode != 0:
        raise GitError(f"could not move HEAD after merging: {_failure(['update-ref'], proc)}; sync again")


def _push(place: _Place, commit: str) -> bool:
    """Push `commit` to the remote's branch; False when the remote moved (rejected as not a fast-forward)."""
    proc = _run(
        ["push", "--quiet", "--porcelain", place.remote, f"{commit}:{place.remote_ref}"], place.repo.top, check=False
    )
    if proc.returncode == 0:
        return True
    text = _stderr(proc) + proc.stdout.decode("utf-8", "replace")
    if "[rejected]" in text or "fetch first" in text or "non-fast-forward" in text or "stale info" in text:
        return False
    raise GitError(_hide_url(place, f"git push failed: {_problem(proc)}"))


def _problem(proc: subprocess.CompletedProcess[bytes]) -> str:
    """What went wrong, from a network command's stderr: its first `fatal:` or `error:` line (the lines
    after it are advice), else its first line."""
    lines = [line.strip() for line in _stderr(proc).splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal: ", "error: ")):
            return line.removeprefix("fatal: ").removeprefix("error: ")
    return lines[0] if lines else f"exit status {proc.returncode}"


def _hide_url(place: _Place, message: str) -> str:
    """git's message with the remote's URL (a host path, for a local remote) shown as the remote's name."""
    url = place.settings.get(f"remote.{place.remote}.url")
    if url:
        for spelling in {url, os.path.realpath(url) if os.path.isabs(url) else url}:
            message = message.replace(spelling, f"<remote {place.remote}>")
    return message


def _ids(place: _Place, paths: list[str], extensions: tuple[str, ...]) -> list[str]:
    """The note ids among repository paths: in the vault, a note's extension, and a UTF-8 name (no scan
    lists another, and JSON cannot carry it)."""
    ids = []
    for path in paths:
        note = place.note_id(path)
        utf8 = note is not None and (
            note.isascii() or note.encode("utf-8", "surrogatepass").decode("utf-8", "replace") == note
        )
        if note is not None and utf8 and note.lower().endswith(tuple(e.lower() for e in extensions)):
            ids.append(note)
    return ids


def _target(
    place: _Place,
    head: str | None,
    theirs: str | None,
    extensions: tuple[str, ...],
    outcome: SyncOutcome,
    conflicted: list[str],
) -> str | None:
    """The commit the vault moves to: ours, theirs (a fast-forward) or a merge of both."""
    repo = place.repo
    if theirs is None or theirs == head:
        return head
    if head is None:
        return theirs
    if _is_ancestor(repo, theirs, head):
        return head
    if _is_ancestor(repo, head, theirs):
        return theirs
    merged = _merge(place, head, theirs, extensions)
    outcome.commit = merged.commit
    conflicted += [p for p in merged.conflicted if p not in conflicted]
    return merged.commit


#: How often to commit local files found in the pull's way and merge again before giving up.
GUARD_ATTEMPTS = 5


def _integrate(
    config: Config,
    place: _Place,
    reporter: Reporter,
    head: str | None,
    theirs: str | None,
    outcome: SyncOutcome,
    conflicted: list[str],
) -> tuple[str | None, str | None]:
    """Bring the remote's commit in: (the commit the vault is now at, the last commit made here of local
    files that stood in the pull's way, or None). See `sync_guard` for what stands in the way and why."""
    repo, local = place.repo, None
    new = _target(place, head, theirs, config.extensions, outcome, conflicted)
    if new is None or new == head:
        return new, local  # nothing to bring in: no locks, no guard
    from ..gitvault.gitlocal import scratch_folder
    from .guard import NoteLocks, in_the_way, note_paths, planned_move, raise_fd_limit

    locks = NoteLocks(config)
    try:
        for _ in range(GUARD_ATTEMPTS):
            if new is None or new == head:
                return new, local
            move = planned_move(repo, head, new)
            notes = note_paths(repo, place.folder, config.extensions, move)
            raise_fd_limit(len(notes))
            locks.take(notes)
            with scratch_folder(repo.git_dir) as scratch:
                way = in_the_way(repo, place.folder, config.extensions, head, move, scratch)
            if way.refuse:
                raise GitError(_refusal(place, way.refuse))
            if not way.commit:
                if head is None:
                    _advance_from_nothing(place, new)
                else:
                    _advance(place, head, new)
                return new, local
            made = _commit_pending(place, reporter, True, forced=way.commit)
            if made is not None:
                head = local = outcome.commit = made
                new = _target(place, head, theirs, config.extensions, outcome, conflicted)
    finally:
        locks.close()
    raise GitError("the vault's files kept changing while sync brought in the remote's changes; sync again")


def _refusal(place: _Place, paths: list[str]) -> str:
    shown = ", ".join(place.note_id(p) or p for p in sorted(paths)[:10])
    more = f" and {len(paths) - 10} more" if len(paths) > 10 else ""
    return (
        f"cannot bring in the remote's changes: uncommitted local files would be overwritten or deleted by them "
        f"({shown}{more}), and sync does not commit them (git ignores them, or they lie outside the vault); "
        "nothing was changed. Commit them or move them aside, then sync again"
    )


def sync_vault(
    config: Config, *, remote: str | None = None, push: bool = True, whole_repo: bool = False, reporter: Reporter
) -> SyncOutcome:
    """One sync round for the vault: commit, fetch, integrate, push (retried when the remote moved)."""
    place = _locate(config, remote, whole_repo)
    repo = place.repo
    outcome = SyncOutcome(remote=place.remote)
    project_file = trust.project_file(config.project_dir)
    project_bytes = trust.read_project_file(project_file)
    from ..gitvault.gitlocal import clear_leftovers

    clear_leftovers(repo.git_dir)
    if place.ignored:
        from .ignored import ignored_message

        reporter.warn(ignored_message(place.folder, place.ignored))
    wrote_attributes = _set_up_merging(config, place, reporter)
    made = _commit_pending(place, reporter, place.pending or wrote_attributes)
    if made is not None:
        outcome.commit = made
    start = made or place.head
    conflicted: list[str] = []
    head = start
    for attempt in range(PUSH_ATTEMPTS):
        if attempt:
            head = head_commit(repo)
        theirs = _fetch(place, head)
        new, local = _integrate(config, place, reporter, head, theirs, outcome, conflicted)
        if local is not None:
            start = local  # committed here before the pull: ours, not pulled
        if new is None or not push or new == theirs:
            break
        if _push(place, new):
            outcome.pushed = _ids(place, _changed(repo, theirs, new, place.pathspec), config.extensions)
            break
    else:
        raise GitError(f"the remote {place.remote} kept moving; {PUSH_ATTEMPTS} pushes were rejected, sync again")
    pulled: list[str] = []
    end = new
    if end is not None and end != start:
        # What differs from what we had before integrating: the remote's changes, never our own.
        pulled = _changed(repo, start, end, place.pathspec)
    outcome.pulled = _ids(place, pulled, config.extensions)
    if end is not None and end != start:
        report_attributes(place.repo, start, end, config.extensions, reporter)
        _report_project_file(project_file, project_bytes, reporter)
    outcome.conflicts = _conflicts(config, place, conflicted, outcome.pulled, reporter)
    _maintain(place, made_or_got=outcome.commit is not None or theirs not in (None, place.head) or end != place.head)
    return outcome


def _report_project_file(path: str, before: bytes | None, reporter: Reporter) -> None:
    """Warn when the pull changed the project's .amem/config.yaml (SPEC §1)."""
    if (changed := trust.change_warning(path, before)) is not None:
        reporter.warn(changed)


#: How git spells a false boolean setting.
_FALSE = ("false", "no", "off", "0")


def _maintain(place: _Place, *, made_or_got: bool) -> None:
    """What the fetch would have run: git's automatic maintenance (packing loose objects when there are
    many), after a sync that made commits or received any, unless the repository's `maintenance.auto`
    turns it off. Its failure is not the sync's."""
    if not made_or_got or place.settings.get("maintenance.auto", "true").strip().lower() in _FALSE:
        return
    _run(["maintenance", "run", "--auto", "--quiet"], place.repo.top, check=False)


def _conflicts(
    config: Config, place: _Place, conflicted: list[str], pulled: list[str], reporter: Reporter
) -> list[str]:
    """The vault's conflicts: the files this merge kept both ways, and the conflict copies that arrived."""
    # Every conflicted file of the vault is reported, a note or not; one outside it (a project file,
    # under --whole-repo) is said as a warning, with its repository path.
    conflicts: list[str] = []
    for path in conflicted:
        inside = place.note_id(path)
        if inside is not None:
            conflicts.append(inside)
        else:
            reporter.warn(f"{path} changed differently on both sides: kept the local version, the remote one beside it")
    if pulled:
        from ..notes.conflicts import original_of_copy
    for note in pulled:
        folder, name = os.path.split(note)
        original = original_of_copy(name)
        # A conflict copy that arrived (not one whose removal arrived) is a conflict here too.
        if original is not None and os.path.lexists(os.path.join(config.vault_dir, note)):
            origin = f"{folder}/{original}" if folder else original
            if origin not in conflicts:
                conflicts.append(origin)
    return conflicts


def _advance_from_nothing(place: _Place, new: str) -> None:
    """The first sync of a repository with no commits yet: check out the remote's branch."""
    repo = place.repo
    proc = _run_waiting_for_locks(["read-tree", "-m", "-u", new], repo.top)
    if proc.returncode != 0:
        raise GitError(f"cannot check out the remote's branch: {_failure(['read-tree'], proc)}")
    proc = _run_waiting_for_locks(["update-ref", "-m", "amem: sync", "HEAD", new, ""], repo.top)
    if proc.returncode != 0:
        raise GitError(f"could not set HEAD: {_failure(['update-ref'], proc)}")
