"""Git plumbing for `history`, `restore` and `--commit`: the `git` executable, explicit arguments, no shell.

Loaded only by the commands that need git, so `read`, `write` and `search` never pay for it.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading  # loaded by subprocess already
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..errors import GitError, NotFound

if TYPE_CHECKING:
    from os import PathLike
    from typing import TypeAlias

    from ..config import Config
    from ..notes.ids import NoteRef
    from ..report import Reporter
    from ..results import HistoryResult

    #: A path as the git layer takes it: a str, or a Path from a caller that holds one. The layer itself
    #: never makes a Path: an idle `amem sync` would pay for loading `pathlib`.
    AnyPath: TypeAlias = "str | PathLike[str]"

#: How long to wait for another git process (or amem) to release `index.lock` or a ref lock.
LOCK_WAIT_SECONDS = 3.0
#: How often to rebuild a commit when HEAD moved under us between reading it and updating it.
HEAD_RACE_ATTEMPTS = 20

FALLBACK_NAME = "amem"
FALLBACK_EMAIL = "amem@localhost"

GIT_MISSING = "git is not installed or not on PATH; install git to use amem history, restore and --commit"

# Variables a git hook (or a caller) may export that would point our commands at another repository or
# index than the one holding the vault; amem always locates the repository from the note's own folder.
# `check --staged` alone passes an inherited GIT_INDEX_FILE back in (`gitvault.staged.commit_index`).
_REPO_LOCATION_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_NAMESPACE",
)


# --- running git ------------------------------------------------------------------------------------

_SAFE = ("-c", "safe.bareRepository=explicit")


def _environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_LOCATION_ENV}
    # Error texts are matched below (lock held, not a repository), so they must not be translated.
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    # Never wait on a credential or editor prompt: amem runs unattended in hooks and agents.
    env["GIT_TERMINAL_PROMPT"] = "0"
    if extra:
        env.update(extra)
    return env


def _run(
    args: Sequence[str],
    cwd: AnyPath,
    *,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    literal_pathspecs: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    # --literal-pathspecs: a note called `*.md` or `:(glob)x.md` is a file name, never a pattern. A caller
    # that needs pathspec magic (an exclusion) turns it off and spells each of its paths `:(literal)...`.
    # safe.bareRepository=explicit: a folder of the vault that a clone brought shaped as a git directory
    # (HEAD, objects/, refs/, a config naming programs to run) is never taken for the vault's repository.
    argv = ["git", *_SAFE, "--literal-pathspecs", *args] if literal_pathspecs else ["git", *_SAFE, *args]
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            capture_output=True,
            env=_environment(env),
            check=False,
        )
    except FileNotFoundError as exc:
        if exc.filename == "git":
            raise GitError(GIT_MISSING) from None
        raise GitError("cannot run git: the vault's folder disappeared while amem was using it") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror}") from None
    if check and proc.returncode != 0:
        raise GitError(_failure(args, proc))
    return proc


def _stderr(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stderr.decode("utf-8", "replace").strip()


#: An absolute path in git's words, which amem must not show.
_HOST_PATH = r"(?<![\w./-])/[^\s'\"]*"


def _failure(args: Sequence[str], proc: subprocess.CompletedProcess[bytes]) -> str:
    subcommand = next((a for a in args if not a.startswith("-") and "=" not in a), "git")
    lines = [line for line in _stderr(proc).splitlines() if line.strip()]
    # git's first error line says what went wrong; hints and advice follow it.
    errors = [line for line in lines if line.startswith(("fatal: ", "error: "))]
    detail = (errors or lines or [f"exit status {proc.returncode}"])[0]
    for prefix in ("fatal: ", "error: "):
        detail = detail.removeprefix(prefix)
    return f"git {subcommand} failed: {re.sub(_HOST_PATH, '<path>', detail)}"


def _out(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def _lock_busy(stderr: str) -> bool:
    """True when git failed only because another process holds index.lock or a ref's .lock file."""
    return ".lock" in stderr and ("File exists" in stderr or "Unable to create" in stderr)


def _run_waiting_for_locks(
    args: Sequence[str], cwd: AnyPath, *, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a command that takes a git lock, retrying briefly while someone else holds it."""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    delay = 0.02
    while True:
        proc = _run(args, cwd, env=env, check=False)
        if proc.returncode == 0 or not _lock_busy(_stderr(proc)):
            return proc
        if time.monotonic() >= deadline:
            raise GitError(_busy_message())
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


# --- the repository ---------------------------------------------------------------------------------


# NamedTuples and plain classes rather than dataclasses: `amem sync` would pay for the dataclasses module.
class Repository(NamedTuple):
    """A git work tree: its top-level folder and its (absolute) git directory, as git prints them."""

    top: str
    git_dir: str

    def relpath(self, path: AnyPath) -> str:
        """The '/'-separated path git knows `path` by: symlinks resolved, as git sees the file system."""
        real = os.path.realpath(path)
        rel = os.path.relpath(real, os.path.realpath(self.top))
        if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise GitError("the note lies outside the git repository that holds the vault")
        return rel.replace(os.sep, "/")


def _nearest_existing_dir(path: AnyPath) -> str:
    folder = os.path.realpath(path)
    while not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


def find_repository(path: AnyPath) -> Repository | None:
    """The git work tree holding `path` (which need not exist yet), or None when there is none."""
    start = _nearest_existing_dir(path)
    proc = _run(["rev-parse", "--show-toplevel", "--absolute-git-dir"], start, check=False)
    if proc.returncode == 0:
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) >= 2:
            return Repository(top=lines[0], git_dir=lines[1])
    message = _stderr(proc)
    if "not a git repository" in message:
        return None
    # Anything else (dubious ownership, a bare repository, inside .git) must not be mistaken for "no
    # repository": that would make --commit initialise a second repository inside the user's.
    raise GitError(f"cannot use the git repository holding the vault: {_failure(['rev-parse'], proc)}")


def stored_ref(repo: Repository, ref: str, settings: Mapping[str, str]) -> str | None:
    """The object name `ref` holds as git's files backend stores it (its loose file, else its line in
    `packed-refs`), read without a git process; `settings` are the repository's (`git config --list`).
    None whenever that cannot be told for certain here (a linked worktree, whose refs lie in the common
    folder; another ref storage; a symbolic ref; anything unexpected): ask git then."""
    git_dir = repo.git_dir
    if "extensions.refstorage" in settings or os.path.exists(os.path.join(git_dir, "commondir")):
        return None
    try:
        with open(os.path.join(git_dir, *ref.split("/")), "rb") as handle:
            loose: bytes | None = handle.read(200)
    except FileNotFoundError:
        loose = None
    except OSError:
        return None
    if loose is not None:
        return _object_name(loose.rstrip(b"\n"))
    try:
        with open(os.path.join(git_dir, "packed-refs"), "rb") as handle:
            packed = handle.read()
    except OSError:
        return None
    wanted = b" " + os.fsencode(ref)
    for line in packed.split(b"\n"):
        if line.endswith(wanted) and not line.startswith((b"#", b"^")):
            return _object_name(line[: -len(wanted)])
    return None


def _object_name(text: bytes) -> str | None:
    """`text` when it is a full object name (SHA-1 or SHA-256 hex), else None."""
    if len(text) in (40, 64) and not text.strip(b"0123456789abcdef"):
        return text.decode("ascii")
    return None


def require_repository(path: AnyPath) -> Repository:
    repo = find_repository(path)
    if repo is None:
        raise GitError(
            "the vault is not in a git repository; run `git init` in the vault (or its project), "
            "or write with --commit, which initialises one"
        )
    return repo


def init_repository(root: AnyPath) -> Repository:
    """`git init` at `root` (the vault root) and return the new repository."""
    os.makedirs(root, exist_ok=True)
    _run(["init", "--quiet"], root)
    repo = find_repository(root)
    if repo is None:  # pragma: no cover - git init succeeded but git does not see it
        raise GitError("git init did not create a repository at the vault root")
    return repo


def head_commit(repo: Repository) -> str | None:
    """HEAD's commit hash, or None while the current branch has no commits yet. A HEAD that names a
    commit git cannot read (a damaged repository) is a GitError, never "no commits"."""
    proc = _run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], repo.top, check=False)
    if proc.returncode == 0:
        return _out(proc)
    if _run(["rev-parse", "--verify", "--quiet", "HEAD"], repo.top, check=False).returncode != 0:
        return None  # an unborn branch: HEAD names no object at all
    args = ["log", "-1", "--format=%H", "HEAD"]
    damaged = _run(args, repo.top, check=False)
    raise GitError(f"the git repository holding the vault is damaged: {_failure(args, damaged)}")


# --- reading history --------------------------------------------------------------------------------


class LogEntry(NamedTuple):
    hash: str
    timestamp: int
    author_name: str
    author_email: str
    subject: str
    #: The file's path in this commit (it differs from today's path before a rename).
    path: str

    @property
    def author(self) -> str:
        return f"{self.author_name} <{self.author_email}>"


_RECORD = "\x1e"
_FIELD = "\x1f"


def _log_args(limit: int | None) -> list[str]:
    args = [
        "log",
        "--follow",
        "-z",
        "--name-only",
        "--no-color",
        f"--format={_RECORD}%H{_FIELD}%at{_FIELD}%an{_FIELD}%ae{_FIELD}%s",
    ]
    if limit is not None:
        args.append(f"--max-count={limit}")
    return args


def file_log(repo: Repository, rel: str, limit: int | None = None) -> list[LogEntry]:
    """The commits that changed `rel`, newest first, following renames; empty before the first commit."""
    if head_commit(repo) is None:
        return []
    return _parse_log(_run([*_log_args(limit), "HEAD", "--", rel], repo.top).stdout)


def note_log(path: AnyPath, limit: int | None = None) -> list[LogEntry]:
    """`file_log` for the file at `path` in whatever repository holds it, in one git process: git finds
    the repository from the note's folder, and its failure says whether there is one."""
    real = os.path.realpath(path)
    folder = _nearest_existing_dir(os.path.dirname(real))
    rel = os.path.relpath(real, folder)
    proc = _run([*_log_args(limit), "--", rel], folder, check=False)
    if proc.returncode == 0:
        return _parse_log(proc.stdout)
    message = _stderr(proc)
    if "not a git repository" in message:
        require_repository(folder)  # raises the same error as every other git command
    if "does not have any commits yet" in message:
        return []
    if "outside repository" in message:
        raise GitError("the note lies outside the git repository that holds the vault")
    raise GitError(_failure(["log"], proc))


def _parse_log(stdout: bytes) -> list[LogEntry]:
    raw = stdout.decode("utf-8", "surrogateescape")
    entries = []
    for record in raw.split(_RECORD)[1:]:
        # With -z: "<fields>\0\n<path>\0" (the path is absent for a merge, which lists no files).
        header, _, names = record.partition("\0")
        hash_, at, name, email, subject = header.split(_FIELD, 4)
        path = next((n.strip("\n") for n in names.split("\0") if n.strip("\n")), "")
        entries.append(LogEntry(hash_, int(at), name, email, subject, path))
    return entries


def resolve_commit(repo: Repository, rev: str) -> str | None:
    """The full hash of the commit `rev` names (short hash, tag, HEAD~2, …), or None when git knows none."""
    if not rev.strip() or "\0" in rev:
        return None
    proc = _run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], repo.top, check=False)
    return _out(proc) if proc.returncode == 0 else None


def short_hash(repo: Repository, full: str) -> str:
    return _out(_run(["rev-parse", "--short", full], repo.top))


def _tree_entry(repo: Repository, commit: str, rel: str) -> tuple[str, str, str] | None:
    """(mode, type, object id) of `rel` in `commit`, or None when the commit has no such path."""
    proc = _run(["ls-tree", "-z", "--full-tree", commit, "--", rel], repo.top)
    for item in proc.stdout.split(b"\0"):
        meta, _, name = item.partition(b"\t")
        if name and os.fsdecode(name) == rel:
            mode, kind, oid = meta.decode("ascii").split()
            return mode, kind, oid
    return None


def path_at(repo: Repository, commit: str, rel: str) -> tuple[str, str] | None:
    """Where the file known today as `rel` lived in `commit` and its blob id, following renames.

    A hash listed by `history` from before a rename names the note under its old path, and restoring
    to it must still work.
    """
    if (found := _note_blob(repo, commit, rel)) is not None:
        return rel, found
    names: list[str] = []
    for entry in file_log(repo, rel):
        if entry.hash == commit and entry.path:
            # The commit itself changed the file: its name there is certain.
            names.insert(0, entry.path)
        elif entry.path and entry.path not in names:
            names.append(entry.path)
    for name in names:
        if (found := _note_blob(repo, commit, name)) is not None:
            return name, found
    return None


def _note_blob(repo: Repository, commit: str, rel: str) -> str | None:
    found = _tree_entry(repo, commit, rel)
    # A symlink (120000), folder or submodule at that path holds no note content to restore.
    if found is not None and found[1] == "blob" and found[0] in ("100644", "100755"):
        return found[2]
    return None


def read_blobs(repo: Repository, oids: Sequence[str]) -> dict[str, bytes]:
    """The bytes of objects as git stores them, in one `git cat-file --batch`; an object the repository
    does not have is left out."""
    unique = list(dict.fromkeys(oids))
    if not unique:
        return {}
    out = _run(["cat-file", "--batch"], repo.top, input="".join(f"{o}\n" for o in unique).encode()).stdout
    blobs: dict[str, bytes] = {}
    pos = 0
    for oid in unique:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        pos = header_end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            blobs[oid] = out[pos : pos + size]
            pos += size + 1
    return blobs


def blob_content(repo: Repository, oid: str, rel: str) -> bytes:
    """A blob's bytes as a checkout would write them (smudge and eol filters applied for `rel`)."""
    return _run(["cat-file", "--filters", f"--path={rel}", oid], repo.top).stdout


# --- committing one path ----------------------------------------------------------------------------


class CommitOutcome:
    def __init__(self, hash: str | None, initialised: bool = False, warnings: list[str] | None = None) -> None:
        #: The new commit, or None when HEAD already held exactly this content (nothing was committed).
        self.hash = hash
        self.initialised = initialised
        self.warnings: list[str] = [] if warnings is None else warnings


#: The author name of the commits the current thread makes, when its caller names one (the HTTP server: the
#: token's name); the email and the committer stay the user's.
_thread_author = threading.local()


def author_commits_as(name: str | None) -> None:
    """Name the author of the commits this thread makes from now on; None: the user's identity again."""
    _thread_author.name = name


def _identity(repo: Repository) -> tuple[dict[str, str], list[str]]:
    """Environment for commit-tree: the user's identity when git has one, else amem's fallback; the author's
    name is the one `author_commits_as` gave this thread, if any.

    `user.useConfigOnly` stops git from inventing `root@host.(none)` from the machine, which it may or
    may not accept depending on the host name; amem's choice must not depend on that.
    """
    env: dict[str, str] = {}
    for role in ("AUTHOR", "COMMITTER"):
        proc = _run(["-c", "user.useConfigOnly=true", "var", f"GIT_{role}_IDENT"], repo.top, check=False)
        if proc.returncode != 0:
            env[f"GIT_{role}_NAME"] = FALLBACK_NAME
            env[f"GIT_{role}_EMAIL"] = FALLBACK_EMAIL
    warnings = []
    if env:
        warnings.append(
            f"git has no user identity (user.name and user.email); committed as "
            f"{FALLBACK_NAME} <{FALLBACK_EMAIL}>. Set one with `git config --global user.name ...` "
            "and `git config --global user.email ...`"
        )
    author = getattr(_thread_author, "name", None)
    if author:
        env["GIT_AUTHOR_NAME"] = author
    return env, warnings


def read_bytes(path: AnyPath) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def file_mode(path: AnyPath) -> str:
    """The mode `git add` would record for the file: 100755 when its owner may execute it."""
    try:
        st = os.stat(path)
    except OSError:
        return "100644"
    # As `git add` decides on a file system that keeps modes: the owner's execute bit.
    return "100755" if st.st_mode & 0o100 else "100644"


def _ref_moved(stderr: str) -> bool:
    return "but expected" in stderr or "reference already exists" in stderr


class _IndexLock:
    """The user's `index.lock`, taken the way git takes it, for the whole commit.

    Holding it keeps a concurrent `git commit`, `git add` or another amem from interleaving with ours (they
    see the repository busy, as with any two git processes), and lets amem publish its one-path change to
    the index exactly as git does: write the new index into the lock file, then rename it over `index`.
    """

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.index = os.path.join(repo.git_dir, "index")
        self.lock = os.path.join(repo.git_dir, "index.lock")
        self.fd: int | None = None

    def __enter__(self) -> _IndexLock:
        # The lock holds amem's pid from the moment it exists, so that one left by a killed amem is
        # provably stale and removed by the next amem, while git's own locks are never touched.
        from .gitlocal import clear_stale_index_lock, create_index_lock, lock_held_message

        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        delay = 0.02
        while True:
            try:
                self.fd = create_index_lock(self.repo.git_dir)
                return self
            except FileExistsError:
                if clear_stale_index_lock(self.repo.git_dir) and time.monotonic() < deadline:
                    continue
                if time.monotonic() >= deadline:
                    raise GitError(lock_held_message(self.repo.top, self.repo.git_dir, LOCK_WAIT_SECONDS)) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
            except OSError as exc:
                raise GitError(f"cannot lock the git index: {exc.strerror}") from None

    def publish(self, data: bytes) -> None:
        """Make `data` the new index: written into the lock file, flushed, renamed over the index."""
        assert self.fd is not None
        fd, self.fd = self.fd, None
        try:
            os.ftruncate(fd, 0)  # the marker goes; the index takes its place
            os.lseek(fd, 0, os.SEEK_SET)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(self.lock, self.index)
        except BaseException:
            # A half-written lock file must not be left behind: git would call the repository busy.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock)
            raise

    def __exit__(self, *exc_info: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock)


def _busy_message() -> str:
    return (
        "the git repository is busy: another git process has held its lock (index.lock or a ref lock) "
        f"for more than {LOCK_WAIT_SECONDS:g}s; try again when it has finished, or remove a stale "
        ".lock file left by a crashed git"
    )


def commit_file(
    repo: Repository, rel: str, content: bytes | None, message: str, *, mode: str = "100644"
) -> CommitOutcome:
    """Commit `content` (None: the file's removal) at `rel` on top of HEAD, and nothing else."""
    return commit_paths(repo, [PathChange(rel, content, mode)], message)


class PathChange(NamedTuple):
    """One path of a commit: its new content, or None for its removal."""

    rel: str
    content: bytes | None
    mode: str = "100644"


class _Staged(NamedTuple):
    """A commit's changes as index entries: the paths it removes and the `mode blob\tpath` lines it adds."""

    removed: list[str]
    entries: list[str]
    #: every path the changes touch, in their order
    paths: list[str]

    def apply(self, repo: Repository, env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
        """Apply the changes to the index that `env` names (GIT_INDEX_FILE)."""
        if self.removed:
            proc = _run(
                ["update-index", "--force-remove", "-z", "--stdin"],
                repo.top,
                env=env,
                check=False,
                input="".join(f"{rel}\0" for rel in self.removed).encode("utf-8", "surrogateescape"),
            )
            if proc.returncode != 0 or not self.entries:
                return proc
        return _run(
            ["update-index", "--add", "-z", "--index-info"],
            repo.top,
            env=env,
            check=False,
            input="".join(f"{entry}\0" for entry in self.entries).encode("utf-8", "surrogateescape"),
        )


def _stage(repo: Repository, changes: Sequence[PathChange]) -> _Staged:
    """Store the added contents as blobs; the index entries that commit `changes`."""
    entries: list[str] = []
    for change in changes:
        if change.content is not None:
            # --path applies the clean filters (eol, LFS) that `git add` would for this path.
            blob = _out(_run(["hash-object", "-w", "--stdin", f"--path={change.rel}"], repo.top, input=change.content))
            entries.append(f"{change.mode} {blob}\t{change.rel}")
    return _Staged([c.rel for c in changes if c.content is None], entries, [c.rel for c in changes])


def commit_paths(repo: Repository, changes: Sequence[PathChange], message: str) -> CommitOutcome:
    """Commit exactly `changes` on top of HEAD, in one commit, and nothing else.

    The commit is built in a temporary index seeded from HEAD, so whatever the user has staged is
    neither committed nor disturbed; afterwards only the changed paths' entries in the user's index are
    updated, so `git status` shows them clean. No hooks run: a post-commit hook that calls `amem write
    --commit` must not recurse. HEAD is moved with its old value as a guard; if another commit landed
    meanwhile, the commit is rebuilt on top of it. A removal and an addition of similar content in one
    commit is what git reports as a rename.
    """
    ident_env, warnings = _identity(repo)
    staged = _stage(repo, changes)
    import tempfile  # here: only a commit needs a scratch folder

    with _IndexLock(repo) as index_lock, tempfile.TemporaryDirectory(prefix="amem-git-") as scratch:
        new_commit = _commit_on_head(repo, staged, message, ident_env, scratch)
        if new_commit is not None:
            _follow_in_users_index(repo, staged, index_lock, scratch, new_commit, warnings)
    return CommitOutcome(hash=new_commit, warnings=warnings)


def _commit_on_head(
    repo: Repository, staged: _Staged, message: str, ident_env: Mapping[str, str], scratch: str
) -> str | None:
    """Make the commit on top of HEAD and move HEAD to it, again on top of a commit that landed meanwhile;
    None when the changes change nothing."""
    for attempt in range(HEAD_RACE_ATTEMPTS):
        head = head_commit(repo)
        index_env = {"GIT_INDEX_FILE": os.path.join(scratch, f"commit-{attempt}")}
        if head is not None:
            _run(["read-tree", head], repo.top, env=index_env)
        proc = staged.apply(repo, index_env)
        if proc.returncode != 0:
            raise GitError(_failure(["update-index"], proc))
        if head is None and not staged.entries:
            # No commit yet and nothing added: the removal of a file git never held changes nothing.
            return None
        tree = _out(_run(["write-tree"], repo.top, env=index_env))
        if head is not None and tree == _out(_run(["rev-parse", f"{head}^{{tree}}"], repo.top)):
            return None
        commit_args = ["-c", "user.useConfigOnly=true", "commit-tree", tree, "-m", message]
        if head is not None:
            commit_args += ["-p", head]
        candidate = _out(_run(commit_args, repo.top, env=ident_env))
        reflog = f"commit{'' if head else ' (initial)'}: {message}"
        # An empty old value means "HEAD's branch must not exist yet", for the first commit.
        proc = _run_waiting_for_locks(["update-ref", "-m", reflog, "HEAD", candidate, head or ""], repo.top)
        if proc.returncode == 0:
            return candidate
        if not _ref_moved(_stderr(proc)):
            raise GitError(_failure(["update-ref"], proc))
    raise GitError("could not commit: HEAD kept moving while amem was committing; try again")


def _follow_in_users_index(
    repo: Repository, staged: _Staged, index_lock: _IndexLock, scratch: str, commit: str, warnings: list[str]
) -> None:
    """The commit is made; the user's index must now agree with it for these paths. git edits a copy (it
    would refuse the real index while we hold index.lock), which then replaces the index."""
    copy = os.path.join(scratch, "user-index")
    if os.path.exists(index_lock.index):
        import shutil  # here: an idle sync, a read or a write never loads it (nor the compressors it loads)

        shutil.copyfile(index_lock.index, copy)
    proc = staged.apply(repo, {"GIT_INDEX_FILE": copy})
    if proc.returncode == 0 and not os.path.exists(copy):
        return  # no index yet and only removals of paths it never held: nothing to publish
    if proc.returncode == 0:
        index_lock.publish(read_bytes(copy))
        return
    paths = " ".join(staged.paths)
    warnings.append(
        f"committed {commit[:12]}, but could not update the git index entries for {paths} "
        f"({_failure(['update-index'], proc)}); `git reset -q -- {paths}` brings them in line"
    )


# --- what the commands call -------------------------------------------------------------------------


def commit_note(config: Config, note_path: AnyPath, message: str, *, content: bytes | None = None) -> CommitOutcome:
    """Commit one note in the repository holding the vault, initialising one at the vault root when
    there is none.

    `content` is what amem just wrote, so that the commit holds exactly that even if another writer has
    changed the file since; without it the file is read, and a missing file commits its removal.
    """
    return commit_notes(config, [(note_path, content)], message)


def commit_notes(config: Config, notes: Sequence[tuple[AnyPath, bytes | None]], message: str) -> CommitOutcome:
    """Commit several notes in one commit, as `commit_note` commits one: each (path, content) commits that
    content, or with None the file as it is on disk (its removal when it is gone). Initialises a
    repository at the vault root when there is none."""
    repo = find_repository(config.vault_dir)
    initialised = False
    if repo is None:
        repo = init_repository(config.vault_dir)
        initialised = True
    changes: list[PathChange] = []
    for note_path, content in notes:
        if content is None:
            try:
                content = read_bytes(note_path)
            except FileNotFoundError:
                content = None
            except OSError as exc:
                raise GitError(f"cannot read the note to commit it: {exc.strerror}") from None
        changes.append(PathChange(repo.relpath(note_path), content, file_mode(note_path)))
    outcome = commit_paths(repo, changes, message)
    outcome.initialised = initialised
    if initialised:
        outcome.warnings.insert(0, "the vault was in no git repository; initialised one at the vault root")
    return outcome


def maybe_commit(
    config: Config,
    ref: NoteRef,
    message: str,
    requested: bool,
    *,
    content: bytes | None = None,
    reporter: Reporter | None = None,
) -> str | None:
    """The `--commit` / `git.autoCommit` hook for `write`: commit the note when asked, return the new
    commit's hash, or None when nothing was asked or nothing changed. Warnings (a repository created,
    a fallback identity) go to `reporter`."""
    if not (requested or config.git_auto_commit):
        return None
    try:
        outcome = commit_note(config, ref.path, message, content=content)
    except GitError as exc:
        # The note is already written; say so, or the caller would think the write failed too.
        raise GitError(f'wrote note "{ref.id}" but did not commit it: {exc.message}', **exc.details) from None
    report_warnings(outcome.warnings, reporter)
    return outcome.hash


def report_warnings(warnings: list[str], reporter: Reporter | None) -> None:
    if reporter is not None:
        for message in warnings:
            reporter.warn(message)


def note_history(config: Config, ref: NoteRef, limit: int | None = None) -> HistoryResult:
    """`{id, commits: [{hash, date, message, author}]}` for a NoteRef, newest first, following renames."""
    from ..timefmt import from_epoch

    entries = note_log(ref.path, limit)
    if not entries and not os.path.lexists(ref.path):
        raise NotFound(f'cannot read the history of note "{ref.id}": no such note')
    tz = config.tz
    return {
        "id": ref.id,
        "commits": [
            {"hash": e.hash, "date": from_epoch(e.timestamp, tz), "message": e.subject, "author": e.author}
            for e in entries
        ],
    }
