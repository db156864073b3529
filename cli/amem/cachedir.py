"""The cache folder (index, last-seen versions, write locks): created on demand, and when it cannot be,
an `io` error that names the folder by the variable that sets it, never by its host path."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import IoError


def cache_variable() -> str:
    """The environment variable that decides where the cache folder is."""
    base = os.environ.get("XDG_CACHE_HOME")
    return "XDG_CACHE_HOME" if base and os.path.isabs(base) else "HOME"


def cache_failure(exc: OSError) -> IoError:
    """An OSError met on the way to the cache folder, as amem reports it."""
    reason = exc.strerror or type(exc).__name__
    return IoError(f"cannot use the cache folder (set by {cache_variable()}): {reason}")


def ensure_cache_folder(folder: Path) -> Path:
    """`folder` (a folder under the cache folder), created with its parents when missing."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cache_failure(exc) from None
    return folder
