"""The six commands of Claude's memory tool on the vault: each change one locked, atomic write of exactly
the bytes the model gave (`save_note`), a rename through `move_note` (links rewritten), a delete through
`delete_note`. Failures are AmemErrors whose messages are the ones the SDK's own tool gives the model."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import Conflict, InvalidId, NotFound, UsageError
from ..notes.ids import open_regular
from ..output import quote
from ..report import Reporter
from .place import Place, is_memory_file, locate, memory_note, memory_root
from .text import MAX_LINES, edit_snippet, file_view, lines_of, listing, occurrence_lines

if TYPE_CHECKING:
    from ..config import Config
    from ..notes.ids import NoteRef


def _missing(place: Place) -> NotFound:
    return NotFound(f"The path {place.shown} does not exist. Please provide a valid path.")


def _decode(data: bytes, place: Place) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"The file {place.shown} is not UTF-8 text.") from None


def _hidden(name: str) -> bool:
    return name.startswith(".")


class MemoryStore:
    """The memory tool's commands on the vault of `config`; each returns the text of the tool result."""

    def __init__(self, config: Config, reporter: Reporter | None = None) -> None:
        self.config = config
        self.reporter = reporter or Reporter()

    # --- reading -----------------------------------------------------------------------------------------

    def view(self, path: str, view_range: Sequence[int] | None = None) -> str:
        """A folder's listing (two levels, sizes, hidden items left out), or a file's lines, numbered."""
        place = locate(self.config, path)
        if place.is_root or os.path.isdir(place.path):
            return self._listing(place)
        if not os.path.lexists(place.path):
            raise _missing(place)
        ref = memory_note(self.config, place)
        try:
            with open_regular(ref.path) as handle:
                content = _decode(handle.read(), place)
        except (FileNotFoundError, NotADirectoryError):
            raise _missing(place) from None
        except OSError as exc:
            raise InvalidId(f"Unsupported file type for {place.shown}: {exc.strerror}") from None
        if content.count("\n") + 1 > MAX_LINES:
            raise UsageError(f"File {place.shown} exceeds maximum line limit of 999,999 lines.")
        return file_view(place.shown, content, view_range)

    def _listing(self, place: Place) -> str:
        try:
            size = os.stat(place.path).st_size
        except FileNotFoundError:
            if not place.is_root:
                raise _missing(place) from None
            size = 0  # no memory yet: the folder comes with the first file
        entries: list[tuple[int, str]] = []
        self._collect(place.path, "", 1, entries)
        return listing(place.shown, size, entries)

    def _collect(self, folder: str, rel: str, depth: int, entries: list[tuple[int, str]]) -> None:
        """The folders and memory files in `folder`, and (at depth 1) in its folders, by name; never a
        hidden item, nor one whose real path leaves the memory folder."""
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        root = os.path.realpath(memory_root(self.config))
        for name in names:
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if _hidden(name) or not (real == root or real.startswith(root + os.sep)):
                continue
            try:
                info = os.stat(path)
            except OSError:
                continue
            shown = f"{rel}/{name}" if rel else name
            if stat.S_ISDIR(info.st_mode):
                entries.append((info.st_size, shown + "/"))
                if depth < 2:
                    self._collect(path, shown, depth + 1, entries)
            elif stat.S_ISREG(info.st_mode) and is_memory_file(self.config, name):
                entries.append((info.st_size, shown))

    # --- changing a file ----------------------------------------------------------------------------------

    def create(self, path: str, file_text: str) -> str:
        """A new file holding `file_text`; refused when the path exists."""
        place = locate(self.config, path)
        ref = memory_note(self.config, place)
        from ..ops.names import refuse_case_twin

        refuse_case_twin(self.config, ref, f"cannot create {place.shown}")

        def transform(old: bytes | None) -> bytes:
            if old is not None:
                raise Conflict(f"File {place.shown} already exists")
            return file_text.encode("utf-8")

        self._write(place, ref, transform, "create")
        return f"File created successfully at: {place.shown}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """The file with `old_str`, which must occur exactly once, replaced by `new_str`."""
        if not old_str:
            raise UsageError("No replacement was performed: old_str is empty; give the text to replace")
        place = locate(self.config, path)
        ref = self._existing(place)
        changed = [0]

        def transform(old: bytes | None) -> bytes:
            content = self._current(old, place)
            lines = occurrence_lines(content, old_str)
            if not lines:
                raise UsageError(
                    f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {place.shown}.",
                    matches=0,
                )
            if len(lines) > 1:
                raise UsageError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                    f"{', '.join(map(str, lines))}. Please ensure it is unique",
                    matches=len(lines),
                )
            at = content.find(old_str)
            changed[0] = lines[0] - 1
            return (content[:at] + new_str + content[at + len(old_str) :]).encode("utf-8")

        written = self._write(place, ref, transform, "str_replace")
        return edit_snippet(written.decode("utf-8"), changed[0])

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        """The file with `insert_text` as new lines after line `insert_line` (0: at the top)."""
        place = locate(self.config, path)
        ref = self._existing(place)

        def transform(old: bytes | None) -> bytes:
            lines = lines_of(self._current(old, place))
            if insert_line < 0 or insert_line > len(lines):
                raise UsageError(
                    f"Invalid `insert_line` parameter: {insert_line}. It should be within the range [0, {len(lines)}]."
                )
            lines.insert(insert_line, insert_text.rstrip("\n"))
            return ("\n".join(lines) + "\n").encode("utf-8")

        self._write(place, ref, transform, "insert")
        return f"The file {place.shown} has been edited."

    def _existing(self, place: Place) -> NoteRef:
        """The note at `place` for an edit: a folder there is not a file."""
        if place.is_root or os.path.isdir(place.path):
            raise InvalidId(f"The path {place.shown} is not a file.")
        if not os.path.lexists(place.path) and not is_memory_file(self.config, place.rel):
            raise _missing(place)
        return memory_note(self.config, place)

    def _current(self, old: bytes | None, place: Place) -> str:
        if old is None:
            raise _missing(place)
        return _decode(old, place)

    def _write(self, place: Place, ref: NoteRef, transform: Callable[[bytes | None], bytes], verb: str) -> bytes:
        """One locked, atomic write of `transform`'s bytes (nothing added to them), committed when
        git.autoCommit asks; the bytes written."""
        from ..ops.write import save_note

        written: list[bytes] = []

        def keep(old: bytes | None) -> bytes:
            written.append(transform(old))
            return written[-1]

        save_note(self.config, ref, keep, reporter=self.reporter)
        if self.config.git_auto_commit:
            from ..gitvault.git import maybe_commit

            maybe_commit(self.config, ref, f"amem: memory {verb} {ref.id}", False, reporter=self.reporter)
        return written[-1]

    # --- deleting and renaming ----------------------------------------------------------------------------

    def delete(self, path: str) -> str:
        """A file, or every memory file in a folder (and the folders they leave empty)."""
        place = locate(self.config, path)
        if place.is_root:
            raise UsageError("Cannot delete the /memories directory itself")
        from ..ops.delete import delete_note

        if os.path.isdir(place.path) and not os.path.islink(place.path):
            for note_id in self._notes_in(place):
                delete_note(self.config, note_id, reporter=self.reporter)
            _remove_empty_folders(place.path)
            return f"Successfully deleted {place.shown}"
        if os.path.islink(place.path) and os.path.isdir(place.path):
            os.unlink(place.path)  # a link to a folder: the link goes, as `rm` removes it
            return f"Successfully deleted {place.shown}"
        if not os.path.lexists(place.path):
            raise NotFound(f"The path {place.shown} does not exist")
        ref = memory_note(self.config, place)
        try:
            delete_note(self.config, ref.id, reporter=self.reporter)
        except NotFound:
            raise NotFound(f"The path {place.shown} does not exist") from None
        return f"Successfully deleted {place.shown}"

    def rename(self, old_path: str, new_path: str) -> str:
        """A file or a folder's memory files moved to the new path, every link to them rewritten."""
        old, new = locate(self.config, old_path), locate(self.config, new_path)
        if old.is_root:
            raise UsageError("Cannot rename the /memories directory itself")
        if new.is_root or os.path.lexists(new.path):
            raise Conflict(f"The destination {new.shown} already exists")
        if not os.path.lexists(old.path):
            raise NotFound(f"The path {old.shown} does not exist")
        if os.path.isdir(old.path):
            if os.path.islink(old.path):
                raise InvalidId(f"The path {old.shown} is a link to a folder: rename the folder it leads to")
            if (new.rel + "/").startswith(old.rel + "/"):
                raise UsageError(f"Cannot rename {old.shown} into itself ({new.shown})")
            pairs = [(note_id, new.vault_rel + note_id[len(old.vault_rel) :]) for note_id in self._notes_in(old)]
            for old_id, new_id in pairs:
                self._move(old_id, new_id)
            _remove_empty_folders(old.path)
        else:
            source, target = memory_note(self.config, old), memory_note(self.config, new)
            self._move(source.id, target.id)
        return f"Successfully renamed {old.shown} to {new.shown}"

    def _move(self, old_id: str, new_id: str) -> None:
        from ..ops.move import move_note

        folder = self.config.memory_tool_folder + "/"
        move_note(self.config, old_id, new_id, reporter=self.reporter, unstamped=lambda i: i.startswith(folder))

    def _notes_in(self, place: Place) -> list[str]:
        """The ids of the memory files under folder `place` (not under its hidden folders), by name."""
        found: list[str] = []
        for folder, folders, files in os.walk(place.path):
            folders[:] = sorted(name for name in folders if not _hidden(name))
            rel = os.path.relpath(folder, place.path).replace(os.sep, "/")
            prefix = place.vault_rel if rel == "." else f"{place.vault_rel}/{rel}"
            found += [
                f"{prefix}/{name}" for name in sorted(files) if not _hidden(name) and is_memory_file(self.config, name)
            ]
        return found

    # --- one command as the model sends it ----------------------------------------------------------------

    def run(self, command: Mapping[str, Any]) -> str:
        """The result of one tool call's `input` (`{"command": "view", "path": "/memories"}`)."""
        name = command.get("command")
        if name == "view":
            view_range = command.get("view_range")
            if view_range is not None and not _is_range(view_range):
                raise UsageError("view_range must be two line numbers, [first, last] (-1 for the end)")
            return self.view(_text(command, "path"), view_range)
        if name == "create":
            return self.create(_text(command, "path"), _text(command, "file_text"))
        if name == "str_replace":
            return self.str_replace(_text(command, "path"), _text(command, "old_str"), _text(command, "new_str"))
        if name == "insert":
            line = command.get("insert_line")
            if not isinstance(line, int) or isinstance(line, bool):
                raise UsageError("insert_line must be a line number (0 inserts at the top)")
            return self.insert(_text(command, "path"), line, _text(command, "insert_text"))
        if name == "delete":
            return self.delete(_text(command, "path"))
        if name == "rename":
            return self.rename(_text(command, "old_path"), _text(command, "new_path"))
        raise UsageError(
            f"Unknown command: {quote(str(name))}; one of view, create, str_replace, insert, delete, rename"
        )


def _text(command: Mapping[str, Any], key: str) -> str:
    value = command.get(key)
    if not isinstance(value, str):
        raise UsageError(f"the {command.get('command')} command needs {key}, a string")
    return value


def _is_range(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in value)
    )


def _remove_empty_folders(top: str) -> None:
    """Remove `top` and the folders below it that hold nothing now (deepest first); any other stays."""
    for folder, _, _ in sorted(os.walk(top), key=lambda entry: -entry[0].count(os.sep)):
        try:
            os.rmdir(folder)
        except OSError:
            continue


def run_input(config: Config, data: bytes, reporter: Reporter | None = None) -> str:
    """`amem memory-tool`: the result of the tool call whose `input` is the JSON object `data`."""
    import json

    try:
        command = json.loads(data.decode("utf-8")) if data.strip() else None
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"the input is not a JSON object: {exc}") from None
    if not isinstance(command, dict):
        raise UsageError(
            'give one memory command as a JSON object on stdin, e.g. {"command": "view", "path": "/memories"}'
        )
    return MemoryStore(config, reporter).run(command)
