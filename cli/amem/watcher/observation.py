"""One file change as the agentmemory observation the source connector sends, redacted.

The shape is the source's exactly (hookType, sessionId, project, cwd, timestamp, data{source, changeKind,
files, content, rootDir, absPath, size, truncated}) plus tool_name/tool_input/tool_output, the fields the
agentmemory server compresses a post_tool_use observation from. What it keeps of them decides what can be
found later, so they are shaped by its rules:

- the record's title is tool_name (80 characters) and its type is read from the words in it, so tool_name
  is `file_write <path>` (a new file), `file_edit <path>` or `file_delete <path>`, with the path left out
  when its words would change the type the server infers (`web-notes.md` reads as a web fetch);
- only a 400-character narrative, tool_input's JSON + " | " + tool_output, is searched, so tool_input is
  short (a 16-digit content hash, then the path) and tool_output starts with the file's own text;
- the server deduplicates on the first 500 characters of tool_input's JSON, so the hash comes first: a long
  path can never push it past the cut and make two different edits look the same.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
import stat
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..fswatch.rules import WatchedRoot
from .redact import REDACTED, redact, redact_prefix

HOOK_TYPE = "post_tool_use"
SOURCE = "filesystem-watcher"
FILE_CHANGE = "file_change"
FILE_DELETE = "file_delete"
#: What the observation says happened, as the first word of tool_name.
FILE_WRITE_ACTION = "file_write"
FILE_EDIT_ACTION = "file_edit"
FILE_DELETE_ACTION = "file_delete"
#: The server keeps this much of tool_name as the record's title.
TITLE_LIMIT = 80
#: Hex digits of the content's sha256 in tool_input: enough to tell edits apart, short enough to leave the
#: narrative to the file's text.
HASH_DIGITS = 16

#: The server's type inference: the first group with a word in tool_name gives the record's type.
SERVER_TYPE_WORDS = (
    ("web_fetch", ("fetch", "http", "web")),
    ("search", ("grep", "search", "glob", "find")),
    ("command_run", ("bash", "shell", "exec", "run")),
    ("file_edit", ("edit", "update", "patch", "replace")),
    ("file_write", ("write", "create")),
    ("file_read", ("read", "view")),
    ("subagent", ("task", "agent")),
)
_WHOLE_WORDS = {word: re.compile(rf"(?:^|_){word}(?:_|$)") for _, words in SERVER_TYPE_WORDS for word in words}
_CAMEL = re.compile(r"([a-z])([A-Z])")
_WORD_BREAK = re.compile(r"[-\s]+")

#: The source's MAX_PREVIEW_BYTES.
MAX_PREVIEW_BYTES = 4096
#: Read this much past the preview so that redaction sees a secret whole even when the preview limit cuts
#: it (a PEM block, a JWT or a token straddling byte 4096); only the first 4096 bytes are kept afterwards.
REDACTION_LOOKAHEAD_BYTES = 8192
#: Files up to this size are hashed whole; larger ones by size, mtime and their first and last MiB, so that
#: a save of a huge file does not read all of it.
FULL_HASH_LIMIT = 32 * 1024 * 1024
_SAMPLE = 1024 * 1024

#: The source's TEXT_EXTENSIONS; `.env` and `.env.*` count as text by name.
TEXT_EXTENSIONS = frozenset(
    {
        ".ts",
        ".tsx",
        ".js",
        ".jsx",
        ".mjs",
        ".cjs",
        ".py",
        ".rb",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".swift",
        ".c",
        ".cc",
        ".cpp",
        ".h",
        ".hpp",
        ".md",
        ".mdx",
        ".txt",
        ".rst",
        ".json",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".env",
        ".html",
        ".css",
        ".scss",
        ".vue",
        ".svelte",
        ".sh",
        ".bash",
        ".zsh",
        ".fish",
        ".sql",
        ".graphql",
        ".proto",
    }
)

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def is_text_file(name: str) -> bool:
    base = os.path.basename(name)
    if base == ".env" or base.startswith(".env."):
        return True
    return os.path.splitext(base)[1].lower() in TEXT_EXTENSIONS


def cut_utf8(data: bytes, limit: int) -> bytes:
    """At most `limit` bytes of `data`, never ending inside a UTF-8 sequence."""
    if len(data) <= limit:
        return data
    end = limit
    while end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1  # data[end] continues a character that starts before the cut: drop that character
    return data[:end]


def iso_timestamp(moment: datetime | None = None) -> str:
    """UTC with milliseconds and Z, as JavaScript's toISOString() writes it."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def base36(number: int) -> str:
    digits = ""
    while True:
        number, rest = divmod(number, 36)
        digits = _BASE36[rest] + digits
        if not number:
            return digits


def new_session_id() -> str:
    """The source's per-process session id: fs-watcher-<ms since epoch, base 36>-<3 random bytes, hex>."""
    return f"fs-watcher-{base36(int(time.time() * 1000))}-{secrets.token_hex(3)}"


class SessionIds:
    """The session id observations are built with; the server sink moves it on when the server says the
    session is full. Safe to use from several threads."""

    def __init__(self, initial: str | None = None) -> None:
        self._explicit = initial
        self._current = initial or new_session_id()
        self._generation = 1
        self._lock = threading.Lock()

    @property
    def current(self) -> str:
        return self._current

    def rotate(self, exhausted: str) -> str:
        """The id to use instead of `exhausted`; several callers reporting one full session get one new id."""
        with self._lock:
            if self._current == exhausted:
                self._generation += 1
                # A configured id keeps its name so that its sessions stay recognisable: id-2, id-3, …
                self._current = f"{self._explicit}-{self._generation}" if self._explicit else new_session_id()
            return self._current


def git_toplevel(folder: str) -> str | None:
    """The top-level folder of the git work tree holding `folder`, or None (no repository, no git).

    Asked through the vault's git helper, which drops the GIT_DIR / GIT_WORK_TREE a git hook exports, so
    that a watcher started from a hook names the repository of the folder, not the hook's."""
    from ..errors import GitError
    from ..gitvault.git import find_repository

    try:
        repo = find_repository(Path(folder))
    except GitError:
        return None
    return str(repo.top) if repo is not None else None


def project_name(root: str, toplevel: str | None) -> str:
    """The source's deriveProjectName: the git top-level's name, else the root's."""
    return os.path.basename(toplevel or os.path.normpath(root)) or root


@dataclass(frozen=True)
class FileSnapshot:
    size: int
    preview: str | None
    truncated: bool
    sha256: str


def read_snapshot(path: str, size: int, mtime_ns: int, allow_binary: bool) -> FileSnapshot:
    """Hash the file and, for text (or when binary is allowed), take its redacted 4 KiB preview.

    Raises OSError when the file cannot be read (gone, no permission)."""
    wants_preview = allow_binary or is_text_file(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        head = handle.read(MAX_PREVIEW_BYTES + REDACTION_LOOKAHEAD_BYTES)
        digest.update(head)
        if size <= FULL_HASH_LIMIT:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        else:
            digest.update(f"|size={size}|mtime={mtime_ns}|".encode())
            handle.seek(max(size - _SAMPLE, 0))
            digest.update(handle.read(_SAMPLE))
    preview = None
    if wants_preview:
        preview = _preview(head, more=len(head) < size)
    return FileSnapshot(
        size=size, preview=preview, truncated=wants_preview and size > MAX_PREVIEW_BYTES, sha256=digest.hexdigest()
    )


def _preview(head: bytes, more: bool) -> str:
    if more:
        # The last word may be the start of a secret that runs on past what was read: drop it (when it
        # lies beyond the preview anyway) rather than let a partial token slip past rules that need all of it.
        cut = max(head.rfind(c) for c in (b" ", b"\t", b"\r", b"\n"))
        head = head[: cut + 1] if cut >= MAX_PREVIEW_BYTES else trim_partial_tail(head)
    text = head.decode("utf-8", errors="replace")
    # The preview is the file's first 4096 bytes, redacted with what follows them as context.
    end = len(cut_utf8(head, MAX_PREVIEW_BYTES).decode("utf-8", errors="replace"))
    preview = redact_prefix(text, end)
    shown = cut_utf8(preview.encode("utf-8"), MAX_PREVIEW_BYTES).decode("utf-8", errors="replace")
    if len(shown) < len(preview):
        # Redaction can lengthen text (a short secret becomes [REDACTED]); never end on half a marker.
        for size in range(len(REDACTED) - 1, 0, -1):
            if shown.endswith(REDACTED[:size]):
                return shown[:-size]
    return shown


def trim_partial_tail(data: bytes) -> bytes:
    """`data` without a UTF-8 sequence that a read cut short at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead byte of the last character
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return data[:-back] if need > back else data
    return data


def server_type(tool_name: str) -> str:
    """The record type the agentmemory server infers from a tool name: camelCase, kebab-case and spaces
    split it into words, and a word counts when it stands whole or at the start or end of the name."""
    normal = _WORD_BREAK.sub("_", _CAMEL.sub(r"\1_\2", tool_name)).lower()
    for kind, words in SERVER_TYPE_WORDS:
        for word in words:
            if normal.startswith(word) or normal.endswith(word) or _WHOLE_WORDS[word].search(normal):
                return kind
    return "other"


def tool_name_for(action: str, rel: str) -> str:
    """`<action> <path>` within the title limit, naming as much of the path as fits (the whole path, else
    its file name, else the end of it) and none of it when its words would change the record's type."""
    wanted = server_type(action)
    room = TITLE_LIMIT - len(action) - 1
    base = rel.rsplit("/", 1)[-1]
    for name in (rel, base, "\u2026" + base[-(room - 1) :]):
        if len(name) <= room and server_type(f"{action} {name}") == wanted:
            return f"{action} {name}"
    return action


def header(rel: str, size: int, truncated: bool) -> str:
    return f"{rel} ({size} bytes{', truncated' if truncated else ''})"


def build_observation(
    root: WatchedRoot,
    abs_path: str,
    session_id: str,
    *,
    snapshot: FileSnapshot | None,
    timestamp: str | None = None,
    created: bool = False,
) -> dict[str, Any]:
    """The observation for a change (with a snapshot; `created` when the file is new) or a delete
    (snapshot None), redacted: the preview was redacted with its context already, and every path is
    redacted segment by segment."""
    rel = redact_path(root.rel(abs_path))
    timestamp = timestamp or iso_timestamp()
    tool_input: dict[str, Any]
    if snapshot is None:
        kind, size, truncated = FILE_DELETE, 0, False
        content = output = f"deleted: {rel}"
        action = FILE_DELETE_ACTION
        # No content to hash: the moment tells two deletes of one path apart, and a resend keeps it.
        tool_input = {"deleted": timestamp, "file_path": rel}
    else:
        kind, size, truncated = FILE_CHANGE, snapshot.size, snapshot.truncated
        content = output = header(rel, size, truncated)
        if snapshot.preview is not None:
            content = f"{content}\n\n{snapshot.preview}"
            if snapshot.preview.strip():
                output = snapshot.preview  # the file's own text first: it is what the server can search
        action = FILE_WRITE_ACTION if created else FILE_EDIT_ACTION
        tool_input = {"sha256": snapshot.sha256[:HASH_DIGITS], "file_path": rel}
    root_dir = redact_path(root.path)
    data: dict[str, Any] = {
        "source": SOURCE,
        "changeKind": kind,
        "files": [rel],
        "content": content,
        "rootDir": root_dir,
        "absPath": redact_path(abs_path),
        "size": size,
        "truncated": truncated,
        "tool_name": tool_name_for(action, rel),
        # The server deduplicates on tool_input: two different edits of one file must never look equal,
        # while a resend of the same observation (or the same bytes saved again) may.
        "tool_input": tool_input,
        "tool_output": output,
    }
    return {
        "hookType": HOOK_TYPE,
        "sessionId": session_id,
        "project": redact_path(root.project),
        "cwd": root_dir,
        "timestamp": timestamp,
        "data": data,
    }


@functools.lru_cache(maxsize=4096)
def _redact_segment(segment: str) -> str:
    return redact(segment)


def redact_path(path: str) -> str:
    """A path with each segment redacted on its own (a file named `password=x.txt` or `ghp_….txt`), so
    the rules see every name whole and the path keeps its shape. A name that is not UTF-8 shows U+FFFD
    where its bad bytes were: JSON and the sinks need valid text."""
    if not path.isascii():
        path = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return "/".join(_redact_segment(segment) for segment in path.split("/"))


def observe_path(
    root: WatchedRoot, abs_path: str, session_id: str, allow_binary: bool, *, created: bool = False
) -> dict[str, Any] | None:
    """Look at the path now (after the debounce) and build its observation: a regular file is a change
    (a new file when `created`), a missing path a delete; folders, symlinks and other special files
    produce nothing."""
    try:
        info = os.lstat(abs_path)
    except FileNotFoundError:
        return build_observation(root, abs_path, session_id, snapshot=None)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        # A symlink is not followed: its target may lie outside the root (or be a secret elsewhere).
        return None
    try:
        snapshot = read_snapshot(abs_path, info.st_size, info.st_mtime_ns, allow_binary)
    except FileNotFoundError:
        return build_observation(root, abs_path, session_id, snapshot=None)
    except OSError:
        # Unreadable (permissions): still worth saying it changed, without content.
        snapshot = FileSnapshot(
            size=info.st_size,
            preview=None,
            truncated=False,
            sha256=hashlib.sha256(f"{info.st_size}:{info.st_mtime_ns}".encode()).hexdigest(),
        )
    return build_observation(root, abs_path, session_id, snapshot=snapshot, created=created)
