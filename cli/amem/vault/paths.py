"""Note ids: validation, extension rules, and containment of every path inside the vault."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import NamedTuple

from ..errors import InvalidId
from ..output import quote

_DRIVE = re.compile(r"^[A-Za-z]:")
#: A suffix that reads as a file type (".txt", ".png"); "v1.2" or "2026.11.29" have none.
_TYPE_SUFFIX = re.compile(r"^\.[A-Za-z][A-Za-z0-9]*$")


class NoteRef(NamedTuple):
    """A validated note: its vault-relative id (with extension) and its lexical path in the vault."""

    id: str
    path: Path


def normalise_id(raw_id: str, extensions: tuple[str, ...]) -> str:
    """The canonical vault-relative id for `raw_id`, or InvalidId; touches no file."""
    if raw_id is None or not raw_id.strip():
        raise InvalidId("invalid note id: the id is empty")
    if "\x00" in raw_id:
        raise InvalidId("invalid note id: it contains a NUL character")
    if "\\" in raw_id:
        raise InvalidId(f"invalid note id {quote(raw_id)}: use / as the separator, not a backslash")
    if raw_id.startswith("/") or raw_id.startswith("~"):
        raise InvalidId("invalid note id: it must be relative to the vault, not an absolute path")
    if _DRIVE.match(raw_id):
        raise InvalidId("invalid note id: it must be relative to the vault, not a drive path")
    normal = posixpath.normpath(raw_id)
    if normal in (".", "") or normal == ".." or normal.startswith("../"):
        raise InvalidId(f"invalid note id {quote(raw_id)}: it leaves the vault")
    name = normal.rsplit("/", 1)[-1]
    suffix = os.path.splitext(name)[1]
    if suffix.lower() in (ext.lower() for ext in extensions):
        return normal
    if suffix and _TYPE_SUFFIX.match(suffix):
        allowed = ", ".join(extensions)
        raise InvalidId(f"invalid note id {quote(raw_id)}: notes end in {allowed}, not {suffix}")
    return normal + extensions[0]


def is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_note(config: object, raw_id: str) -> NoteRef:
    """Validate `raw_id` against the vault of `config`; refuse anything that escapes, lexically or by symlink."""
    vault_root: Path = config.vault_root  # type: ignore[attr-defined]
    extensions: tuple[str, ...] = config.extensions  # type: ignore[attr-defined]
    note_id = normalise_id(raw_id, extensions)
    root = os.path.abspath(vault_root)
    path = os.path.join(root, *note_id.split("/"))
    if not is_inside(os.path.normpath(path), root):
        raise InvalidId(f"invalid note id {quote(raw_id)}: it leaves the vault")
    # realpath resolves every existing component, the note itself included when it is a (even broken)
    # symlink, so this checks the nearest existing ancestor and any link target against the real vault.
    if not is_inside(os.path.realpath(path), os.path.realpath(root)):
        raise InvalidId(f"invalid note id {quote(note_id)}: it resolves through a symlink to outside the vault")
    return NoteRef(note_id, Path(path))


def may_read(path: str, real_root: str) -> bool:
    """Whether amem may read the file at `path`: its real path (every symlink resolved) lies inside the
    vault's real path `real_root`. Every reader of note bytes asks this before opening a symlink."""
    return is_inside(os.path.realpath(path), real_root)
