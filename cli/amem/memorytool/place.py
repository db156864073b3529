"""Where a memory-tool path lands: `/memories/x` in the vault folder `memoryTool.folder`, and never outside it."""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote

from ..errors import InvalidId
from ..notes.ids import NoteRef, resolve_note
from ..paths import is_within

if TYPE_CHECKING:
    from ..config import Config

#: The root of every path the model names.
ROOT = "/memories"


class Place(NamedTuple):
    """A checked path: as the model wrote it (`shown`, for messages), below /memories (`rel`, "" for the
    folder itself), in the vault (`vault_rel`) and on disk (`path`, lexical)."""

    shown: str
    rel: str
    vault_rel: str
    path: str

    @property
    def is_root(self) -> bool:
        return not self.rel


def memory_root(config: Config) -> str:
    """The folder /memories names, on disk (lexical)."""
    return os.path.join(os.path.abspath(config.vault_dir), *config.memory_tool_folder.split("/"))


def locate(config: Config, raw: object) -> Place:
    """The place of path `raw`, or InvalidId when it does not start with /memories or leaves that folder:
    by a `..` segment (also when percent-decoded: `%2e%2e`), or through a symlink (the memory folder's
    own included) whose real path is outside it."""
    if not isinstance(raw, str) or not (raw == ROOT or raw.startswith(ROOT + "/")):
        raise InvalidId(f"Path must start with /memories, got: {raw}")
    _refuse_escapes(raw)
    rest = posixpath.normpath(raw[len(ROOT) :].lstrip("/") or ".")
    rel = "" if rest == "." else rest
    folder = config.memory_tool_folder
    root = memory_root(config)
    path = os.path.join(root, *rel.split("/")) if rel else root
    if not is_within(root, config.vault_dir) or not is_within(path, root):
        raise InvalidId("Path would escape /memories directory via symlink")
    return Place(raw, rel, f"{folder}/{rel}" if rel else folder, path)


def _refuse_escapes(raw: str) -> None:
    """InvalidId for a backslash or control character, and for a `..` that leaves /memories as written or
    percent-decoded (amem never decodes a name, but a reader of the path might)."""
    if "\\" in raw or any(c < " " or c == "\x7f" for c in raw):
        raise InvalidId(f"Path {raw!r} holds a backslash or a control character; use / between names")
    for text in (raw, unquote(raw)):
        rest = posixpath.normpath(text[len(ROOT) :].lstrip("/") or ".")
        if rest == ".." or rest.startswith(("../", "/")):
            raise InvalidId(f"Path {raw} would escape /memories directory")


def is_memory_file(config: Config, name: str) -> bool:
    """Whether a file name ends in one of the vault's note extensions (any case)."""
    return name.lower().endswith(tuple(ext.lower() for ext in config.extensions))


def memory_note(config: Config, place: Place) -> NoteRef:
    """The note at `place`: refused when it is the folder itself or its name does not end in a note
    extension (the message names them, so the model can choose another name), and checked as every note
    id is (`resolve_note`)."""
    if place.is_root or not is_memory_file(config, place.rel):
        allowed = " or ".join(config.extensions)
        raise InvalidId(f"The path {place.shown} is not a memory file: a memory file's name ends in {allowed}")
    return resolve_note(config, place.vault_rel)
