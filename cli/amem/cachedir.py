"""The cache folder (index, last-seen versions, write locks): created on demand, and when it cannot be,
an `io` error that names the folder by the variable that sets it, never by its host path."""

from __future__ import annotations

import os

from .errors import IoError


def cache_variable() -> str:
    """The environment variable that decides where the cache folder is."""
    base = os.environ.get("XDG_CACHE_HOME")
    return "XDG_CACHE_HOME" if base and os.path.isabs(base) else "HOME"


def cache_failure(exc: OSError) -> IoError:
    """An OSError met on the way to the cache folder, as amem reports it."""
    reason = exc.strerror or type(exc).__name__
    return IoError(f"cannot use the cache folder (set by {cache_variable()}): {reason}")


def ensure_cache_folder(folder: str) -> str:
    """`folder` (a folder under the cache folder), created with its parents when missing. A file where
    one of amem's own folders should be (under `<cache folder>/amem/`) is damage to a cache, so it is
    removed and the folder made; anything above that is the user's to fix, so it is an `io` error."""
    try:
        make_folders(folder)
        return folder
    except OSError as exc:
        first = exc
    from pathlib import Path  # only to repair: a cache in use never comes here

    from .paths import cache_home

    owned = cache_home() / "amem"
    repaired = False
    for path in (Path(folder), *Path(folder).parents):
        if path != owned and owned not in path.parents:
            break
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            try:
                path.unlink()
                repaired = True
            except OSError:
                break
    if repaired:
        try:
            make_folders(folder)
            return folder
        except OSError as exc:
            first = exc
    raise cache_failure(first) from None


def make_folders(folder: str, *, parents: bool = True) -> None:
    """`Path(folder).mkdir(parents=True, exist_ok=True)`, step for step, without loading `pathlib`."""
    from .paths import is_folder

    try:
        os.mkdir(folder)
    except FileNotFoundError:
        parent = os.path.dirname(folder) or "."
        if not parents or parent == folder:
            raise
        make_folders(parent)
        make_folders(folder, parents=False)
    except OSError:
        # Not EEXIST alone: the system may report another error (EACCES, EROFS) for a folder that exists.
        if not is_folder(folder):
            raise
