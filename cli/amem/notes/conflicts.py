"""Conflict copies: the other machine's version of a file that `amem sync` could not merge, kept beside it.

Named `<stem>.conflict-<commit>[-N]<ext>` (the first 8 digits of the remote commit it came from), so the
note and its copy sort together and the copy is itself a note that `read` and `search` find.
"""

from __future__ import annotations

import functools
import os
import re

#: A conflict copy beside a note: `<stem>.conflict-<commit>[-N]<ext>`, holding the other machine's version.
CONFLICT_INFIX = ".conflict-"


@functools.cache
def _conflict_suffix() -> re.Pattern[str]:
    """Compiled on first use: a read asks the index, and needs it only when the index holds a copy."""
    return re.compile(r"\.conflict-[0-9a-f]{4,40}(?:-\d+)?$")


def conflict_copy_name(name: str, commit: str, taken: set[str]) -> str:
    """The file name for the other side's version of `name` (a file name, no folder), not in `taken`."""
    stem, ext = os.path.splitext(name)
    base = f"{stem}{CONFLICT_INFIX}{commit[:8]}"
    candidate, n = f"{base}{ext}", 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}{ext}"
    return candidate


def original_of_copy(name: str) -> str | None:
    """The note name a conflict copy's file name belongs to, or None when it is not a conflict copy."""
    stem, ext = os.path.splitext(name)
    match = _conflict_suffix().search(stem)
    if match is None or match.start() == 0:
        return None
    return stem[: match.start()] + ext


def copy_prefix(name: str) -> str:
    """What the file name of every conflict copy of the note named `name` (a file name) starts with."""
    stem, _ = os.path.splitext(name)
    return f"{stem}{CONFLICT_INFIX}"


def is_copy_of(candidate: str, name: str) -> bool:
    """Whether the file name `candidate` is that of a conflict copy of the note named `name`."""
    return candidate.startswith(copy_prefix(name)) and original_of_copy(candidate) == name


def has_conflict_copy(path: str | os.PathLike[str]) -> bool:
    """True when the folder of the note at `path` holds a conflict copy of it."""
    folder, name = os.path.split(os.fspath(path))
    prefix = copy_prefix(name)
    try:
        entries = os.listdir(folder or ".")
    except OSError:
        return False
    # One search over all the names, in C: a folder of thousands of notes costs no loop in Python.
    listing = "\0" + "\0".join(entries) + "\0"
    at = listing.find("\0" + prefix)
    while at != -1:
        end = listing.index("\0", at + 1)
        if original_of_copy(listing[at + 1 : end]) == name:
            return True
        at = listing.find("\0" + prefix, end)
    return False
