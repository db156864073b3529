"""amem's own corner of a repository's git folder (`<git dir>/amem/`): scratch folders and proof of which
`index.lock` amem took, so that whatever a killed amem left there the next one can find and remove.

A scratch folder is named after its process (`scratch-<pid>-<hex>`, mode 0700) and removed by the next
sync once that process is gone; it never sits in the shared temporary folder, where nobody would find it.
`index.lock` taken by amem holds a marker with amem's pid from the moment it exists (it is written under
another name and linked into place), so a lock whose marker names a dead process is provably a killed
amem's and is removed; any other lock (a git's, or one amem cannot read) is left to the user.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..atomicfile import process_alive
from ..errors import GitError

if TYPE_CHECKING:
    from .git import AnyPath

FOLDER = "amem"
#: The first bytes of an `index.lock` that amem holds; the pid follows, then a newline.
LOCK_MARK = b"amem index lock, pid "
_LEFTOVER = r"^(?:scratch|lock)-(?P<pid>\d+)-[0-9a-f]+$"


def private_folder(git_dir: AnyPath) -> str:
    """`<git dir>/amem/`, made if missing; a GitError that says what to do when something else (a file, a
    symlink) stands in its place or it cannot be made."""
    folder = os.path.join(git_dir, FOLDER)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        if os.path.islink(folder) or not os.path.isdir(folder):
            raise GitError(
                f"the git folder's {FOLDER}/, where amem keeps its scratch files, is not a folder; "
                f"remove {FOLDER} from the repository's git folder and try again"
            ) from None
    except OSError as exc:
        raise GitError(f"cannot make amem's {FOLDER}/ folder in the repository's git folder: {exc.strerror}") from None
    return folder


@contextlib.contextmanager
def scratch_folder(git_dir: AnyPath) -> Iterator[str]:
    """A private folder for one step's temporary indexes and blobs, removed afterwards (or, when this process
    is killed, by the next sync's `clear_leftovers`)."""
    path = os.path.join(private_folder(git_dir), f"scratch-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.mkdir(path, 0o700)
    except OSError as exc:
        raise GitError(f"cannot make a scratch folder in the git folder's {FOLDER}/: {exc.strerror}") from None
    try:
        yield path
    finally:
        import shutil  # here: a sync with nothing to merge makes no scratch folder, and loads no shutil

        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _guard(git_dir: AnyPath) -> Iterator[None]:
    """Serialises amem processes around taking and clearing `index.lock`, so that one clearing a dead
    amem's lock never removes the lock another amem has just taken."""
    import fcntl

    fd = os.open(os.path.join(private_folder(git_dir), "index-lock.guard"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def create_index_lock(git_dir: AnyPath) -> int:
    """Take `<git dir>/index.lock` as git does (it must not exist yet), already holding amem's marker;
    the open file, for the new index to be written into. FileExistsError when someone holds it."""
    lock = os.path.join(git_dir, "index.lock")
    with _guard(git_dir):
        staged = os.path.join(private_folder(git_dir), f"lock-{os.getpid()}-{os.urandom(4).hex()}")
        fd = os.open(staged, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            os.write(fd, LOCK_MARK + str(os.getpid()).encode() + b"\n")
            try:
                os.link(staged, lock)
            except FileExistsError:
                os.close(fd)
                raise
            except OSError:
                # A file system without hard links: an empty lock, as git's own; not provably amem's.
                os.close(fd)
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged)
    return fd


def clear_stale_index_lock(git_dir: AnyPath) -> bool:
    """Remove `index.lock` when it is provably a killed amem's; True when it was removed (or is gone)."""
    lock = os.path.join(git_dir, "index.lock")
    with _guard(git_dir):
        try:
            fd = os.open(lock, os.O_RDONLY)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        try:
            head = os.read(fd, 64)
            inode = os.fstat(fd).st_ino
        finally:
            os.close(fd)
        if not head.startswith(LOCK_MARK):
            return False
        digits = head[len(LOCK_MARK) :].split(b"\n", 1)[0]
        if not digits.isdigit() or process_alive(int(digits)):
            return False
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(lock).st_ino == inode:
                os.unlink(lock)
        return True


def clear_leftovers(git_dir: AnyPath) -> None:
    """Remove what killed amem processes left in the git folder: their scratch folders, their staged lock
    files, their `index.lock`. Never raises: a clean-up must not fail the command."""
    folder = os.path.join(git_dir, FOLDER)
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            match = re.match(_LEFTOVER, name)
            if match is None or process_alive(int(match.group("pid"))):
                continue
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                import shutil

                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
    if os.path.lexists(os.path.join(git_dir, "index.lock")):
        with contextlib.suppress(OSError):
            clear_stale_index_lock(git_dir)


def lock_held_message(top: AnyPath, git_dir: AnyPath, waited: float) -> str:
    """What git says of a held `index.lock`, with what to do, naming the lock by its repository path."""
    lock = os.path.join(git_dir, "index.lock")
    rel = os.path.relpath(lock, top)
    shown = rel if not rel.startswith(os.pardir) else "index.lock in the repository's git folder"
    return (
        f"the git repository is busy: {shown} exists and was not released for {waited:g}s. Another git process "
        f"seems to be running in this repository; if none is, a git process crashed in it earlier: remove "
        f"{shown} and try again"
    )
