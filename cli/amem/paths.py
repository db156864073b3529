"""Paths as pathlib spells them, without pathlib, and the user's folders: the floor the config loader and
the state and cache folders stand on. `read` and `write` never import `pathlib`, which with the
`urllib.parse` and `ipaddress` it brings costs every command that loads it about a tenth of its start-up."""

import errno
import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def as_path(path: str) -> "Path":
    """`Path(path)`, `pathlib` loaded only by the callers that ask for a Path."""
    from pathlib import Path

    return Path(path)


def pure_path(path: str) -> str:
    """`str(PurePosixPath(path))`: empty and `.` segments dropped, trailing slashes too, `..` kept, and
    two leading slashes (not one, not three) kept as POSIX allows."""
    root = "//" if path[:2] == "//" and path[2:3] != "/" else "/" if path[:1] == "/" else ""
    return root + "/".join(part for part in path.split("/") if part and part != ".") or "."


def join_path(base: str, path: str) -> str:
    """`str(Path(base) / path)`: `path` itself when it is absolute."""
    return pure_path(os.path.join(base, path))


#: The errors pathlib's `exists()`, `is_dir()` and `is_file()` answer False to; any other they raise.
_MISSING = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def file_type(path: str) -> int | None:
    """The file type bits of `path` (symlinks followed), None where pathlib's checks would say False."""
    try:
        return stat.S_IFMT(os.stat(path).st_mode)
    except OSError as exc:
        if exc.errno not in _MISSING:
            raise
        return None
    except ValueError:
        return None


def is_folder(path: str) -> bool:
    """`Path(path).is_dir()`."""
    return file_type(path) == stat.S_IFDIR


def is_file(path: str) -> bool:
    """`Path(path).is_file()`."""
    return file_type(path) == stat.S_IFREG


def home_folder() -> str:
    """`str(Path.home())`."""
    home = os.path.expanduser("~")
    if home[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return pure_path(home)


def xdg_home(variable: str, default: str) -> str:
    base = os.environ.get(variable)
    return pure_path(base) if base and os.path.isabs(base) else join_path(home_folder(), default)


def cache_home() -> "Path":
    return as_path(xdg_home("XDG_CACHE_HOME", ".cache"))


def state_home() -> "Path":
    return as_path(xdg_home("XDG_STATE_HOME", ".local/state"))


def config_home() -> "Path":
    return as_path(xdg_home("XDG_CONFIG_HOME", ".config"))


def owned_by_us(path: str) -> bool:
    """Whether `path` belongs to the user running amem, or to root."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # no owners to compare on this system
        return True
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return False
    return owner in (getuid(), 0)


def is_inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies below it, both as written."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def is_within(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies below it, both taken by their real paths (symlinks followed; the
    missing end of a path taken as written)."""
    return is_inside(os.path.realpath(path), os.path.realpath(root))


def find_project_root(cwd: str, warnings: list[str] | None = None) -> str:
    """The nearest ancestor of `cwd` holding a `.amem/` folder of this user's (or root's), looking no higher
    than the git top-level, nor, outside a repository, than the home folder; failing that the git
    top-level; failing that `cwd` itself (an absolute path). A `.amem/` owned by another user is passed
    over with a warning, as git passes over a repository it does not trust."""
    home = _home_or_none()
    folder = cwd
    while True:
        amem = join_path(folder, ".amem")
        if is_folder(amem):
            if owned_by_us(amem):
                return folder
            if warnings is not None:
                warnings.append(
                    f"ignored {amem}: it belongs to another user, so its config and vault are not this project's"
                )
        if file_type(join_path(folder, ".git")) is not None:
            return folder
        parent = os.path.dirname(folder)
        if parent == folder or folder == home:
            return cwd
        folder = parent


def _home_or_none() -> str | None:
    try:
        return home_folder()
    except RuntimeError:
        return None
