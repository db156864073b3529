"""The vault's attachments as `read` resolves links to them, remembered in the index with the mtime of every
folder they were listed from, so that a read of a note with a link that names no note stats the folders (as
its quick refresh does) instead of listing the whole vault. A file added, removed or renamed moves its
folder's mtime, and a new folder its parent's: such a folder (or one that was racily recent) is listed
again, with the new folders under it. Folders and files are taken by the scan's rules (see `health.vault_files`)."""

from __future__ import annotations

import contextlib
import marshal
import os
import sqlite3
from typing import TYPE_CHECKING

from ..notes.links import LinkResolver
from .scan import VaultScan, Walker, is_utf8, scan_vault

if TYPE_CHECKING:
    from ..config import Config

KEY = f"attachments-by-folder-{marshal.version}"


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
        stored = self._stored()
        folders, changed = _refreshed(walker, stored)
        if changed and self.conn is not None:
            _remember(self.conn, folders)
        return sorted(path for _, paths in folders.values() for path in paths)

    def _stored(self) -> dict[str, tuple[int, list[str]]]:
        if self.conn is None:
            return {}
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (KEY,)).fetchone()
            folders = marshal.loads(row[0]) if row else {}
        except (sqlite3.Error, EOFError, ValueError, TypeError):
            return {}
        return folders if isinstance(folders, dict) else {}


def _refreshed(
    walker: Walker, stored: dict[str, tuple[int, list[str]]]
) -> tuple[dict[str, tuple[int, list[str]]], bool]:
    """Every indexed folder with its mtime (-1 when racily recent: listed again next time) and the files in
    it that are not notes: a stored folder whose mtime has not moved as stored, the others (and the new
    folders under them) listed again. True when that changed anything."""
    folders: dict[str, tuple[int, list[str]]] = {}
    stack: list[tuple[str, int]] = []
    for rel, (mtime_ns, paths) in stored.items():
        try:
            st = walker.stat_folder(rel)
        except OSError:
            continue  # gone
        if st.st_mode & 0o170000 != 0o040000:
            continue
        if st.st_mtime_ns == mtime_ns:
            folders[rel] = (mtime_ns, paths)
        else:
            stack.append((rel, st.st_mtime_ns))
    if not stored:
        with contextlib.suppress(OSError):
            stack.append(("", walker.stat_folder("").st_mtime_ns))
    changed = bool(stack) or len(folders) != len(stored)
    while stack:
        rel, mtime_ns = stack.pop()
        listed = _list_folder(walker, rel)
        if listed is None:
            continue
        paths, subfolders = listed
        folders[rel] = (-1 if mtime_ns >= walker.racy_before else mtime_ns, paths)
        stack.extend((sub, sub_mtime) for sub, sub_mtime in subfolders if sub not in stored and sub not in folders)
    return folders, changed


def _list_folder(walker: Walker, rel: str) -> tuple[list[str], list[tuple[str, int]]] | None:
    """The files of one folder that are not notes, and its subfolders with their mtimes."""
    paths: list[str] = []
    subfolders: list[tuple[str, int]] = []
    try:
        entries = os.scandir(walker.folder_path(rel))
    except OSError:
        return None
    with entries:
        for entry in entries:
            name = entry.name
            if not is_utf8(name):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not walker.skips_folder(name):
                        subfolders.append((f"{rel}{name}/", entry.stat(follow_symlinks=False).st_mtime_ns))
                elif walker.is_attachment(name) and entry.is_file():
                    paths.append(rel + name)
            except OSError:
                continue  # gone during the listing
    return paths, subfolders


def thorough_scan(config: Config, conn: sqlite3.Connection) -> VaultScan:
    """`scan_vault`, keeping the files that are not notes when no listing of them is stored (a build, or
    one finished after a kill), for `remember_scan`."""
    return scan_vault(config, conn.execute("SELECT 1 FROM meta WHERE key = ?", (KEY,)).fetchone() is None)


def remember_scan(conn: sqlite3.Connection, scan: VaultScan) -> None:
    """Store the attachments a scan kept, by folder with its mtime as the scan took it (racily recent ones
    to be listed again), as `_refreshed` would list them: the first read after a build lists no folder."""
    if scan.others is not None:
        _remember(conn, {rel: (mtime_ns, scan.others.get(rel, [])) for rel, mtime_ns in scan.dirs.items()})


def _remember(conn: sqlite3.Connection, folders: dict[str, tuple[int, list[str]]]) -> None:
    """Store the listing, unless another process is writing the index: a read never waits for that."""
    busy = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (KEY, marshal.dumps(folders)))
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(busy)}")
