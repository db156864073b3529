"""The vault's notes that git ignores: never committed, so never synced. A sync names them on every run
(a `.gitignore` pulled from elsewhere, `*.md`, would otherwise stop new notes syncing without a word).

`git status --ignored=matching` lists an ignored folder as `name/` without walking it (it may be a build's
output or a package cache); a folder is named only when a note lies in it, looked for as the index looks
for notes, within NOTE_SEARCH_ENTRIES entries. A module of its own, loading nothing: a vault that ignores
a folder (an Obsidian vault's `.obsidian/`) asks it on every sync.
"""

from __future__ import annotations

import contextlib
import os

#: Entries a sync looks at in one ignored folder for a note before it gives up (a folder git ignores may
#: be a build's output or a package cache: a sync must not walk it whole).
NOTE_SEARCH_ENTRIES = 512


def holding_notes(
    top: str, folder: str, ignored: tuple[str, ...], extensions: tuple[str, ...], hidden: bool
) -> tuple[str, ...]:
    """Of the paths git ignores (`git status --ignored=matching`, from the top of the repository: files, and
    folders as `name/`), the notes and the folders in which a note lies, found as the index finds notes in
    the vault's `folder` (no dot-folder unless `hidden`, never `.git`, `node_modules`, `.obsidian`), within
    NOTE_SEARCH_ENTRIES entries of each folder."""
    suffixes = tuple(ext.lower() for ext in extensions)
    prefix = f"{folder}/" if folder else ""

    def skipped(name: str) -> bool:
        if name.startswith(".") and not hidden:
            return True  # the usual one (`.obsidian/`), told without loading the note model
        from ..notes.ids import NEVER_INDEXED

        return name in NEVER_INDEXED

    def holds_a_note(where: str) -> bool:
        budget, stack = NOTE_SEARCH_ENTRIES, [where]
        while stack:
            with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
                for entry in entries:
                    budget -= 1
                    if budget < 0:
                        return False
                    if entry.is_dir(follow_symlinks=False):
                        if not skipped(entry.name):
                            stack.append(entry.path)
                    elif entry.name.lower().endswith(suffixes) and entry.is_file(follow_symlinks=False):
                        return True
        return False

    def kept(path: str) -> bool:
        if not path.endswith("/"):
            return True
        parts = path.removeprefix(prefix).rstrip("/").split("/")
        return not any(skipped(part) for part in parts) and holds_a_note(os.path.join(top, path))

    return tuple(path for path in ignored if kept(path))


def ignored_message(folder: str, ignored: tuple[str, ...]) -> str:
    """What a sync says of the vault's notes that git ignores (a folder: the notes in it): they stay here."""
    prefix = f"{folder}/" if folder else ""
    names = [path.removeprefix(prefix) for path in ignored]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (
        f"git ignores notes of the vault, so sync leaves them on this machine: {shown} (a .gitignore,"
        " .git/info/exclude or core.excludesFile names them)"
    )
