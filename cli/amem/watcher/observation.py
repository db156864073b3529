"""One file change as the agentmemory observation the source connector sends, redacted.

The shape is the source's exactly (hookType, sessionId, project, cwd, timestamp, data{source, changeKind,
files, content, rootDir, absPath, size, truncated}) plus tool_name/tool_input/tool_output, which the
server reads to title and index a post_tool_use observation.
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .redact import redact
from .rules import IgnoreRules

HOOK_TYPE = "post_tool_use"
SOURCE = "filesystem-watcher"
FILE_CHANGE = "file_change"
FILE_DELETE = "file_delete"
TOOL_NAMES = {FILE_CHANGE: "fs_watcher_change", FILE_DELETE: "fs_watcher_delete"}

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
    try:
        done = subprocess.run(
            ["git", "-C", folder, "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    top = done.stdout.strip()
    return os.path.normpath(top) if done.returncode == 0 and top else None


def project_name(root: str, toplevel: str | None) -> str:
    """The source's deriveProjectName: the git top-level's name, else the root's."""
    return os.path.basename(toplevel or os.path.normpath(root)) or root


@dataclass(eq=False)
class WatchedRoot:
    """One attached root: its absolute path, its project label and its ignore rules."""

    path: str
    project: str
    rules: IgnoreRules
    folders: int = field(default=0)

    def rel(self, abs_path: str) -> str:
        rel = os.path.relpath(abs_path, self.path)
        return rel.replace(os.sep, "/") if os.sep != "/" else rel


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
    redacted = redact(text)
    return cut_utf8(redacted.encode("utf-8"), MAX_PREVIEW_BYTES).decode("utf-8", errors="replace")


def trim_partial_tail(data: bytes) -> bytes:
    """`data` without a UTF-8 sequence that a read cut short at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead byte of the last character
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return data[:-back] if need > back else data
    return data


def header(rel: str, size: int, truncated: bool) -> str:
    return f"{rel} ({size} bytes{', truncated' if truncated else ''})"


def build_observation(
    root: WatchedRoot,
    abs_path: str,
    session_id: str,
    *,
    snapshot: FileSnapshot | None,
    timestamp: str | None = None,
) -> dict[str, Any]:
    """The observation for a change (with a snapshot) or a delete (snapshot None), redacted: the preview
    was redacted with its context already, and every path is redacted segment by segment."""
    rel = redact_path(root.rel(abs_path))
    if snapshot is None:
        kind, size, truncated, digest = FILE_DELETE, 0, False, None
        content = f"deleted: {rel}"
    else:
        kind, size, truncated, digest = FILE_CHANGE, snapshot.size, snapshot.truncated, snapshot.sha256
        content = header(rel, size, truncated)
        if snapshot.preview is not None:
            content = f"{content}\n\n{snapshot.preview}"
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
        "tool_name": TOOL_NAMES[kind],
        # The path and a hash of the bytes: the server deduplicates on tool_input, so two different edits
        # of one file must never look equal, while a resend of the same observation must.
        "tool_input": {"path": rel, "changeKind": kind, "sha256": digest},
        "tool_output": content,
    }
    return {
        "hookType": HOOK_TYPE,
        "sessionId": session_id,
        "project": redact_path(root.project),
        "cwd": root_dir,
        "timestamp": timestamp or iso_timestamp(),
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


def observe_path(root: WatchedRoot, abs_path: str, session_id: str, allow_binary: bool) -> dict[str, Any] | None:
    """Look at the path now (after the debounce) and build its observation: a regular file is a change,
    a missing path a delete; folders, symlinks and other special files produce nothing."""
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
    return build_observation(root, abs_path, session_id, snapshot=snapshot)
