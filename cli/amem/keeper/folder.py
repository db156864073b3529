"""The index keeper's folder in the vault (`.amem-sync/`: sync cookies and their `.gitignore`), held open by
descriptor so that nothing amem does there can reach a file outside it.

A sync can bring anything under that name: a committed symlink to the vault (`ln -s . .amem-sync`), to a
folder outside it, or a file. Every path operation here is relative to a descriptor of the real folder,
opened with O_NOFOLLOW, so a symlink swapped in after the check only makes an operation fail, never follow.
A symlink found at the keeper's start is replaced (it is amem's own name, and a link holds nothing but
where it points; removing it removes only the link); anything else that is not a folder is refused, with
what is wrong, for it may be someone's file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from ..errors import WatchError
from ..keeperproto.client import COOKIE_SUFFIX, FOLDER_FLAGS, NEW_FILE_FLAGS, SYNC_DIR, lstat_at
from ..report import Reporter

GITIGNORE = ".gitignore"
_IGNORE_ALL = "# amem's index keeper: sync cookies, never tracked\n*\n"


class KeeperFolder:
    """The keeper's own folder, open for the keeper's whole life. `open()` makes it a real folder with its
    `.gitignore`; `remove()` leaves the vault as found."""

    def __init__(self, root_fd: int, fd: int) -> None:
        self._root_fd = root_fd
        self._fd = fd

    @classmethod
    def open(cls, root: str, reporter: Reporter) -> KeeperFolder:
        """The real folder `<root>/.amem-sync`, made if missing; a symlink there is replaced (with a
        warning). WatchError when something else is in the way; OSError when the file system refuses."""
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            fd = cls._real_folder(root_fd, reporter)
        except BaseException:
            os.close(root_fd)
            raise
        folder = cls(root_fd, fd)
        try:
            folder._ensure_gitignore()
        except BaseException:
            folder.close()
            raise
        return folder

    @staticmethod
    def _real_folder(root_fd: int, reporter: Reporter) -> int:
        for _ in range(5):  # each round loses only to another process changing the name meanwhile
            found = lstat_at(SYNC_DIR, root_fd)
            if found is not None and stat.S_ISLNK(found.st_mode):
                os.unlink(SYNC_DIR, dir_fd=root_fd)  # the link itself, never what it points to
                reporter.warn(
                    f"the vault's {SYNC_DIR} was a symlink (a sync can bring one); "
                    "replaced it with the index keeper's own folder"
                )
                found = None
            elif found is not None and not stat.S_ISDIR(found.st_mode):
                raise WatchError(
                    f"cannot keep the index of this vault: {SYNC_DIR} in the vault is a file, not the index "
                    f"keeper's folder; move it away (amem keeps its sync cookies under that name)"
                )
            if found is None:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(SYNC_DIR, dir_fd=root_fd)
            try:
                return os.open(SYNC_DIR, FOLDER_FLAGS, dir_fd=root_fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise
        raise WatchError(f"cannot keep the index of this vault: its {SYNC_DIR} keeps changing under the keeper")

    def _ensure_gitignore(self) -> None:
        found = lstat_at(GITIGNORE, self._fd)
        if found is not None and stat.S_ISREG(found.st_mode):
            return
        if found is not None:
            os.unlink(GITIGNORE, dir_fd=self._fd)  # a link or anything else: inside this folder only
        fd = os.open(GITIGNORE, NEW_FILE_FLAGS, 0o644, dir_fd=self._fd)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(_IGNORE_ALL)

    # --- cookies ------------------------------------------------------------------------------------

    def cookies(self) -> list[str]:
        return [name for name in os.listdir(self._fd) if name.endswith(COOKIE_SUFFIX)]

    def has(self, name: str) -> bool:
        try:
            return lstat_at(name, self._fd) is not None
        except OSError:
            return False

    def discard(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=self._fd)

    # --- the end ------------------------------------------------------------------------------------

    def remove(self) -> None:
        """Delete the cookies and the `.gitignore` in the folder, and the folder when it is still the one
        named `.amem-sync` in the vault (not whatever took its name meanwhile); close it."""
        with contextlib.suppress(OSError):
            for name in self.cookies():
                self.discard(name)
            self.discard(GITIGNORE)
            mine = os.fstat(self._fd)
            named = lstat_at(SYNC_DIR, self._root_fd)
            if named is not None and (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino):
                os.rmdir(SYNC_DIR, dir_fd=self._root_fd)  # fails, harmlessly, if anything else is in it
        self.close()

    def close(self) -> None:
        for fd in (self._fd, self._root_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fd = self._root_fd = -1
