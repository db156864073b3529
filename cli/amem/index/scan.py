"""A scan of the vault: which notes exist and their (mtime, size), listed by the index's folder rules
(skip `.git`, `node_modules`, `.obsidian`, other dot-folders unless indexHiddenDirs, and excludeDirs),
without following symlinked folders or reading a file outside the vault. Every listing of the vault skips
a file or folder whose name is not UTF-8 (`is_utf8`)."""

from __future__ import annotations

import os
import time
from collections.abc import Container, Iterator
from typing import TYPE_CHECKING

from ..atomicfile import TEMP_SUFFIX
from ..digest import sha1_hex
from ..notes.ids import may_read, open_regular

if TYPE_CHECKING:
    from ..config import Config

ALWAYS_SKIPPED = frozenset({".git", "node_modules", ".obsidian"})
#: A file or folder modified this shortly before a scan may change again within the file system's
#: timestamp granularity (2 s on FAT, 1 s on ext3) without a visible mtime change: such files keep a
#: content digest and such folders are listed again on the next refresh.
RACY_NS = 2_000_000_000
#: folders still to list, with their mtimes
_Stack = list[tuple[str, int]]


def is_utf8(name: str) -> bool:
    """Whether a name the file system gave is UTF-8. One that is not (a Latin-1 `résumé.md` committed
    elsewhere) holds `os.fsdecode`'s surrogate escapes, which no id, index row or JSON output can carry:
    every listing of the vault skips it, and `check` names it (`shown_name`)."""
    if name.isascii():
        return True
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def shown_name(path: str) -> str:
    """A path whose name is not UTF-8 as a message can print it, each byte that is not UTF-8 as `\\xNN`."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class VaultScan:
    """What a scan saw: notes by id as (mtime_ns, size), and folders by vault-relative path."""

    def __init__(self, listed: set[str] | None = None, others: bool = False) -> None:
        self.started_ns = time.time_ns()
        self.files: dict[str, tuple[int, int]] = {}
        self.dirs: dict[str, int] = {}
        #: folders whose notes are all in `files`; None when every folder was listed (a thorough scan)
        self.listed = listed
        #: amem temporary files the scan came across (a live writer's, or one a killed writer left)
        self.temporaries: list[str] = []
        #: the files that are not notes (attachments) by folder, as `attached` lists them (None: not kept)
        self.others: dict[str, list[str]] | None = {} if others else None
        #: notes a refresh read with another (mtime, size) than `files` held (changed since), which it
        #: then stores in `files`: while none is, the refresh left the notes as the scan found them
        self.restated = 0

    def restate(self, note_id: str, stat: tuple[int, int]) -> None:
        """What the index stores of the note: `stat`, which may differ from what the scan found."""
        files = self.files
        if files.get(note_id) != stat:
            files[note_id] = stat
            self.restated += 1


class Walker:
    """Lists vault folders by the spec's rules: skips .git, node_modules, .obsidian, other dot-folders
    unless indexHiddenDirs, and excludeDirs at any depth. Symlinked folders are not followed; a
    symlinked note counts only when its real path is inside the vault."""

    def __init__(self, config: Config, scan: VaultScan) -> None:
        self.root = os.path.abspath(config.vault_dir)
        self.real_root = os.path.realpath(self.root)
        self.extensions = tuple(e.lower() for e in config.extensions)
        self.excluded = set(config.exclude_dirs)
        self.hidden = config.index_hidden_dirs
        self.scan = scan
        self.racy_before = scan.started_ns - RACY_NS

    def folder_path(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def stat_folder(self, rel: str) -> os.stat_result:
        """The stat of folder `rel`, not followed through a symlink; but the vault's own folder may be one
        (~/notes linked to a synced folder), followed as scan_vault follows it. Raises OSError."""
        return os.lstat(self.folder_path(rel)) if rel else os.stat(self.root)

    def skips_folder(self, name: str) -> bool:
        return name in ALWAYS_SKIPPED or name in self.excluded or (name[0] == "." and not self.hidden)

    def is_attachment(self, name: str) -> bool:
        """Whether a file of this name is an attachment: not a note, not an amem temporary."""
        return not name.endswith(TEMP_SUFFIX) and not name.lower().endswith(self.extensions)

    def is_note(self, note_id: str) -> bool:
        """Whether a scan would index `note_id` if the file exists (its name and folders)."""
        lowered = note_id.lower()
        if not lowered.endswith(self.extensions) or lowered.endswith(TEMP_SUFFIX) or not note_id:
            return False
        parts = note_id.split("/")
        return (
            is_utf8(note_id)
            and all(part and part not in (".", "..") for part in parts)
            and not any(self.skips_folder(part) for part in parts[:-1])
        )

    def stat_note(self, note_id: str) -> tuple[int, int] | None:
        """(mtime_ns, size) of a note file amem may read, else None."""
        path = os.path.join(self.root, note_id)
        folder = os.path.dirname(note_id)
        if os.path.realpath(os.path.dirname(path)) != (
            os.path.join(self.real_root, folder) if folder else self.real_root
        ):
            return None  # through a symlinked folder, which scans do not follow
        try:
            st = os.lstat(path)
            if st.st_mode & 0o170000 == 0o120000:  # a symlink: only to a file inside the vault
                if not may_read(path, self.real_root):
                    return None
                st = os.stat(path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if st.st_mode & 0o170000 == 0o100000 else None

    def list(self, rel: str, mtime_ns: int, skip: Container[str] = ()) -> None:
        """Record folder `rel` and its notes; walk its subfolders, except those in `skip`."""
        stack = [(rel, mtime_ns)]
        scan = self.scan
        while stack:
            rel, mtime_ns = stack.pop()
            try:
                entries = os.scandir(self.folder_path(rel))
            except OSError:
                continue
            scan.dirs[rel] = -1 if mtime_ns >= self.racy_before else mtime_ns
            if scan.listed is not None:
                scan.listed.add(rel)
            with entries:
                self._entries(rel, entries, stack, skip)

    def _entries(self, rel: str, entries: Iterator[os.DirEntry[str]], stack: _Stack, skip: Container[str]) -> None:
        """The hot loop of every search: per note one lstat (never dropped: it is how a search sees every
        edit) and as few other calls as can be, names in their own case tried before lowering them."""
        files, others = self.scan.files, self.scan.others
        extensions = self.extensions
        for entry in entries:
            name = entry.name
            if not name.isascii() and not is_utf8(name):  # (no call for the usual ASCII name)
                continue
            try:
                if name.endswith(extensions) or name.lower().endswith(extensions):
                    if name.endswith(TEMP_SUFFIX):
                        self.scan.temporaries.append(entry.path)
                        continue
                    st = entry.stat(follow_symlinks=False)
                    kind = st.st_mode & 0o170000
                    if kind == 0o100000:
                        files[rel + name] = (st.st_mtime_ns, st.st_size)
                        continue
                    if kind == 0o120000:  # a symlink: only to a file inside the vault
                        if may_read(entry.path, self.real_root):
                            st = os.stat(entry.path)
                            if st.st_mode & 0o170000 == 0o100000:
                                files[rel + name] = (st.st_mtime_ns, st.st_size)
                        continue
                elif name.endswith(TEMP_SUFFIX):
                    self.scan.temporaries.append(entry.path)
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if self.skips_folder(name):
                        continue
                    sub = f"{rel}{name}/"
                    if sub not in skip:
                        stack.append((sub, entry.stat(follow_symlinks=False).st_mtime_ns))
                elif others is not None and entry.is_file() and self.is_attachment(name):
                    others.setdefault(rel, []).append(rel + name)
            except OSError:
                continue  # deleted during the scan, or a broken symlink


def scan_vault(config: Config, others: bool = False) -> VaultScan:
    """Every indexable note and folder of the vault, each note stat'ed (and, with `others`, the files that
    are not notes)."""
    scan = VaultScan(others=others)
    try:
        root_mtime = os.stat(config.vault_dir).st_mtime_ns
    except OSError:
        return scan
    Walker(config, scan).list("", root_mtime)
    return scan


def digest_of(path: str) -> str | None:
    try:
        with open_regular(path) as handle:
            return sha1_hex(handle.read())
    except OSError:
        return None
