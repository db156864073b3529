"""The vault's attachments as `read` resolves links to them, remembered in the index with the mtime of every
folder they were listed from, so that a read of a note with a link that names no note stats the folders (as
its quick refresh does) instead of listing the whole vault. A file added, removed or renamed moves its
folder's mtime, and a new folder its parent's: then, or when a folder was racily recent, the vault is
listed again. Folders and files are taken by the scan's rules (see `health.vault_files`)."""

from __future__ import annotations

import contextlib
import marshal
import os
import sqlite3
from typing import TYPE_CHECKING

from ..atomicfile import TEMP_SUFFIX
from ..notes.links import LinkResolver
from .scan import VaultScan, Walker

if TYPE_CHECKING:
    from ..config import Config

KEY = f"attachments-marshal-{marshal.version}"


class Attachments:
    """The attachments as link targets, looked up on first need: a read pays for them only when one of its
    links names no note, and lists the vault only when a folder changed since the last listing."""

    def __init__(self, config: Config, conn: sqlite3.Connection | None) -> None:
        self.config = config
        self.conn = conn
        self._resolver: LinkResolver | None = None

    def __call__(self, target: str) -> str | None:
        """The file a stored target names when it names no note, or None."""
        from .health import attachment_of, attachment_resolver

        if self._resolver is None:
            self._resolver = attachment_resolver(self.paths())
        return attachment_of(self._resolver, target)

    def paths(self) -> list[str]:
        walker = Walker(self.config, VaultScan())
        remembered = self._remembered(walker)
        if remembered is not None:
            return remembered
        folders, paths = _listing(walker)
        if self.conn is not None:
            _remember(self.conn, folders, paths)
        return paths

    def _remembered(self, walker: Walker) -> list[str] | None:
        if self.conn is None:
            return None
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (KEY,)).fetchone()
            folders, paths = marshal.loads(row[0]) if row else (None, None)
        except (sqlite3.Error, EOFError, ValueError, TypeError):
            return None
        if not isinstance(folders, dict) or not isinstance(paths, list):
            return None
        for rel, mtime_ns in folders.items():
            try:
                st = os.lstat(walker.folder_path(rel))
            except OSError:
                return None
            if st.st_mtime_ns != mtime_ns or st.st_mode & 0o170000 != 0o040000:
                return None
        return paths


def _listing(walker: Walker) -> tuple[dict[str, int], list[str]]:
    """Every indexed folder's mtime, taken before it is listed (-1 when racily recent: listed again next
    time), and the files in them that are not notes, sorted."""
    attachments: list[str] = []
    folders: dict[str, int] = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            mtime_ns = os.lstat(walker.folder_path(rel)).st_mtime_ns
            entries = os.scandir(walker.folder_path(rel))
        except OSError:
            continue
        folders[rel] = -1 if mtime_ns >= walker.racy_before else mtime_ns
        with entries:
            for entry in entries:
                name = entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not walker.skips_folder(name):
                            stack.append(f"{rel}{name}/")
                    elif _attachment(name, walker) and entry.is_file():
                        attachments.append(rel + name)
                except OSError:
                    continue  # gone during the listing
    return folders, sorted(attachments)


def _attachment(name: str, walker: Walker) -> bool:
    return not name.endswith(TEMP_SUFFIX) and not name.lower().endswith(walker.extensions)


def _remember(conn: sqlite3.Connection, folders: dict[str, int], paths: list[str]) -> None:
    """Store the listing, unless another process is writing the index: a read never waits for that."""
    busy = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (KEY, marshal.dumps((folders, paths))))
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(busy)}")
