"""Safe writes: one locked read-modify-write per note across processes, published atomically.

`update_note` is the one write path; append, overwrite, restore, move and edit are transforms on it (in
`amem.ops`), and the text rules of append and overwrite are here.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, NamedTuple

from ..atomicfile import atomic_replace, is_temporary, parse_temporary, process_alive
from ..digest import sha1_hex
from ..errors import AmemError, Conflict, InternalError, InvalidId, IoError, NotFound, UsageError
from ..notes.ids import NotARegularFile, NoteRef, open_regular
from ..notes.parse import ParsedNote, dump_frontmatter, parse_note, version_of
from ..notes.simple_yaml import split_frontmatter
from ..output import quote
from ..paths import is_inside
from ..timefmt import normalise

if TYPE_CHECKING:
    from datetime import tzinfo

    from ..config import Config
    from ..report import Reporter

_HEADING_START = re.compile(r"^#{1,6}[ \t]")
_LIFECYCLE = ("created", "updated")


class UpdateResult(NamedTuple):
    id: str
    path: str
    version: str
    bytes: int
    created: bool


# --- locking and atomic replacement -----------------------------------------------------------------


def lock_file(config: Any, target: str) -> int:
    """The open lock file of one note. Keyed by the note's real folder, so that every spelling of the
    vault's path (through a symlink or not) meets at the same lock."""
    from ..cachedir import ensure_cache_folder

    folder = ensure_cache_folder(os.path.join(config.cache_folder, "locks"))
    real = os.path.join(os.path.realpath(os.path.dirname(target)), os.path.basename(target))
    name = sha1_hex(real.encode("utf-8", "surrogateescape"))
    path = os.path.join(folder, f"{name}.lock")
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except IsADirectoryError:
        # A folder where the lock file belongs is damage to the cache: replace it.
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            from ..cachedir import cache_failure

            raise cache_failure(exc) from None
    except OSError as exc:
        from ..cachedir import cache_failure

        raise cache_failure(exc) from None


@contextmanager
def note_lock(config: Config, target: str) -> Iterator[None]:
    """An exclusive cross-process lock for one note file, held for its whole read-modify-write."""
    import fcntl

    fd = lock_file(config, target)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock, even if the process is killed


def _remove_stale_temporaries(target: str) -> None:
    """Delete temporary files left by a writer of this note that was killed mid-write. Safe only under
    the note's lock: no other amem process can be writing one at this moment."""
    folder, name = os.path.split(target)
    prefix = f".{name}."
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if entry.startswith(prefix) and is_temporary(entry):
            with suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, entry))


def sweep_temporaries(config: Config, paths: Iterable[str]) -> int:
    """Remove stray temporary files (`.<note>.<pid>-<hex>.amem-tmp`) that a writer killed mid-write left
    in the vault; returns how many were removed. Never a live writer's: a file is removed only while
    amem holds its note's lock (taken without waiting: a writer holds it from before it creates the
    file until after it renamed it), and only when the pid in its name is no running process (a writer
    whose locks live in another cache folder). Never raises: a clean-up must not fail a command.

    Called by every write (for the note's folder) and by the index scan (for the temporary files it
    came across), so that no stray file outlives the next command that touches the vault."""
    import fcntl

    removed = 0
    for path in paths:
        found = parse_temporary(path)
        if found is None or (found.pid is not None and found.pid != os.getpid() and process_alive(found.pid)):
            continue
        try:
            fd = lock_file(config, found.target)
        except AmemError:
            return removed  # no lock folder: nothing can be proven safe to remove
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a writer of that note is at work, in this process or another
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def sweep_folder(config: Config, folder: str) -> int:
    """sweep_temporaries for every temporary file directly in `folder`."""
    try:
        names = [name for name in os.listdir(folder) if is_temporary(name)]
    except OSError:
        return 0
    return sweep_temporaries(config, (os.path.join(folder, name) for name in names)) if names else 0


def _write_target(config: Config, ref: NoteRef) -> str:
    """The file to replace: the note itself, or the target of an in-vault symlink (the link stays a link)."""
    path = ref.path
    if not os.path.islink(path):
        return path
    real = os.path.realpath(path)
    if not os.path.exists(real):
        raise InvalidId(f"cannot write note {quote(ref.id)}: it is a broken symlink")
    if not is_inside(real, os.path.realpath(config.vault_dir)):
        raise InvalidId(f"invalid note id {quote(ref.id)}: it resolves through a symlink to outside the vault")
    return real


def make_parents(folder: str, created: list[str]) -> None:
    """Create `folder` and any missing parents (the first write creates the vault), recording in
    `created` each one made, so that a failed write can remove them again."""
    pending: list[str] = []
    current = folder
    while not os.path.isdir(current) and current != os.path.dirname(current):
        pending.append(current)
        current = os.path.dirname(current)
    for path in reversed(pending):
        try:
            os.mkdir(path)
            created.append(path)
        except FileExistsError:
            if not os.path.isdir(path):
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory") from None


def write_failure(note_id: str, exc: OSError, verb: str = "write") -> AmemError:
    """An OSError as amem reports it: the vault-relative id and the system's reason, never a host path."""
    reason = "a folder on its path is a file" if exc.errno == errno.ENOTDIR else exc.strerror or type(exc).__name__
    message = f"cannot {verb} note {quote(note_id)}: {reason}"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG) or isinstance(exc, NotARegularFile):
        return InvalidId(message)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return IoError(message)
    return InternalError(message)


def remove_folders(created: list[str]) -> None:
    for path in reversed(created):
        try:
            os.rmdir(path)
        except OSError:
            break


def update_note(
    config: Config,
    ref: NoteRef,
    transform: Callable[[bytes | None], bytes],
    *,
    base_version: str | None = None,
    require_existing: bool = False,
    on_written: Callable[[str], None] | None = None,
) -> UpdateResult:
    """Lock the note, read it, check `base_version`, write `transform(old)` atomically, and call
    `on_written(version)` while the lock is still held (the index records what amem wrote through it).

    `old` is None for a missing note. Nothing is created when a check fails or the transform raises.
    """
    check_version(base_version)
    target = _write_target(config, ref)
    with note_lock(config, target):
        _remove_stale_temporaries(target)
        sweep_folder(config, os.path.dirname(target))
        try:
            with open_regular(target) as handle:
                old: bytes | None = handle.read()
                mode: int | None = os.fstat(handle.fileno()).st_mode & 0o7777
        except FileNotFoundError:
            old, mode = None, None
        except IsADirectoryError:
            raise InvalidId(f"cannot write note {quote(ref.id)}: it is a folder") from None
        except OSError as exc:
            raise write_failure(ref.id, exc) from None
        if old is None and require_existing:
            raise NotFound(f"cannot write note {quote(ref.id)}: no such note (--require-existing)")
        current = version_of(old or b"")
        if base_version is not None and base_version.lower() != current:
            raise version_conflict(ref.id, "write", base_version, current, exists=old is not None)
        data = transform(old)
        created_dirs: list[str] = []
        try:
            if old is None:
                make_parents(os.path.dirname(target), created_dirs)
            atomic_replace(target, data, mode)
        except BaseException as exc:
            remove_folders(created_dirs)
            if isinstance(exc, OSError):
                raise write_failure(ref.id, exc) from None
            raise
        version = version_of(data)
        if on_written is not None:
            on_written(version)
    return UpdateResult(ref.id, ref.path, version, len(data), old is None)


_VERSION = re.compile(r"^[0-9a-fA-F]{40}$")


def check_version(version: str | None) -> None:
    """A --base-version must be a version (40 hex digits, as read and write print); anything else is a
    usage error, never a conflict."""
    if version is not None and not _VERSION.match(version):
        shown = quote(version) if len(version) <= 60 else quote(version[:60] + "…")
        raise UsageError(
            f"--base-version {shown} is not a version: expected the 40 hex digits that read and write print"
        )


def version_conflict(note_id: str, verb: str, base_version: str, current: str, *, exists: bool) -> Conflict:
    """The conflict of a stale --base-version, carrying `currentVersion`. On a missing note it says that
    the note does not exist (its version is that of no bytes), not that it changed; on an existing note
    guarded by the version of no bytes ("create only if absent"), that it exists."""
    if not exists:
        reason = "it does not exist (a missing note's version is that of no bytes)"
    elif base_version.lower() == version_of(b""):
        reason = f"it already exists (version {current}), and that base version means only if absent"
    else:
        reason = f"it changed since version {base_version} (now {current}); read it again and retry"
    return Conflict(f"cannot {verb} note {quote(note_id)}: {reason}", currentVersion=current)


def _clean(content: str) -> str:
    return content.replace("\r\n", "\n").strip("\n").rstrip()


def append_text(old: str | None, content: str, stamp: str, tz: tzinfo | None) -> str:
    """The note after appending `content` as a new `## <stamp>` section (or its own heading).

    Appends within the same second share one heading; exactly one blank line separates blocks."""
    block = _clean(content)
    own_heading = bool(_HEADING_START.match(block))
    heading = f"## {stamp}"
    if old is None:
        section = block if own_heading else f"{heading}\n\n{block}"
        return f"---\ncreated: {stamp}\n---\n{section}\n"
    old = old.replace("\r\n", "\n")
    note = parse_note(old)
    body = note.body.rstrip()
    if not own_heading and _last_heading(body) == heading:
        section = block  # same second: continue the section that is already there
    else:
        section = block if own_heading else f"{heading}\n\n{block}"
    new_body = f"{body}\n\n{section}\n" if body else f"{section}\n"
    if note.frontmatter_text is None and note.frontmatter == {} and note.warnings:
        # Malformed frontmatter: leave the block exactly as the user wrote it.
        return f"{old.rstrip()}\n\n{section}\n"
    block_text = set_keys(note, {"updated": stamp}, tz)
    return f"---\n{block_text}---\n{new_body}"


def _last_heading(body: str) -> str | None:
    if "```" not in body and "~~~" not in body:
        # No fence: every line that starts with `#` is prose (an indented code line starts with a space).
        at = body.rfind("\n#")
        if at == -1 and not body.startswith("#"):
            return None
        line = body[at + 1 :].split("\n", 1)[0]
        return line.removesuffix("\r").rstrip()
    last = None
    from ..notes.links import prose_lines

    for line in prose_lines(body):
        if line.startswith("#"):
            last = line.rstrip()
    return last


def overwrite_text(
    old: str | None, content: str, stamp: str, tz: tzinfo | None, reporter: Reporter | None = None
) -> str:
    """The note after replacing its body with `content`'s. Its frontmatter is merged by editing the old
    block's lines, never re-rendered: the caller's keys replace that key's lines in place (or go at the
    end), every other line keeps its bytes, and an existing note is stamped `updated`; a new note gets no
    lifecycle keys. An old block that does not parse is kept as written, with a warning, when the caller
    gives no keys to merge into it, and refused when they do. The body is the caller's, final newline
    or none as written."""
    text = content.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    new = parse_note(text)
    if new.warnings:
        raise UsageError(f"the new content's frontmatter does not parse: {new.warnings[0]}")
    body = new.body
    if old is None:
        merged_text = set_keys(new, {}, tz) if new.frontmatter_text is not None else None
        return f"---\n{merged_text}---\n{body}" if merged_text else body
    old = old.replace("\r\n", "\n").removeprefix("\ufeff")
    block, old_body = split_frontmatter(old)
    if block is None:  # no frontmatter: the caller's block, stamped
        return f"---\n{set_keys(new, {'updated': stamp}, tz)}---\n{body}"
    opening = old[: old.index("\n") + 1]
    closing = old[len(opening) + len(block) : len(old) - len(old_body)]
    closing += "" if closing.endswith("\n") else "\n"
    old_note = parse_note(old)
    if old_note.frontmatter_text is None:
        found = re.search(r"\((.*)\)", old_note.warnings[0]) if old_note.warnings else None
        problem = f"does not parse ({found.group(1)})" if found else "is not a mapping"
        _keep_unmerged(new, f"the note's frontmatter {problem}", reporter)
        return opening + block + closing + body
    given = _entries_given(set_keys(new, {}, tz), block)  # the caller's lines, created/updated normalised
    merged = _edit_block(block, {**given, "updated": [f"updated: {stamp}"]})
    expected = {**old_note.frontmatter, **_lifecycle_normalised(new, tz), "updated": stamp}
    if parse_note(f"---\n{merged}---\n").frontmatter != expected:
        reason = "the note's frontmatter cannot take the change by editing its lines (YAML anchors or another shape)"
        _keep_unmerged(new, reason, reporter)
        return opening + block + closing + body
    return opening + merged + closing + body


def _keep_unmerged(new: ParsedNote, reason: str, reporter: Reporter | None) -> None:
    """The old frontmatter stays as written when the caller gives no keys to merge into it (a warning
    says so); when the caller gives keys, the overwrite is refused and nothing is written."""
    if new.frontmatter:
        raise UsageError(
            f"{reason}: the new content's keys cannot be merged into it, so nothing was written; send the "
            "content without frontmatter to keep the old block as it is, or repair the block first"
        )
    if reporter is not None:
        reporter.warn(f"{reason}: it is kept as written, without an `updated` stamp, and the body is replaced")


def _lifecycle_normalised(note: ParsedNote, tz: tzinfo | None) -> dict[str, Any]:
    """The note's frontmatter with its created/updated values normalised."""
    return {key: normalise(value, tz) if key in _LIFECYCLE else value for key, value in note.frontmatter.items()}


def _entries_given(block: str, old_block: str) -> dict[str, list[str]]:
    """The caller's keys and the lines that give each, in the caller's order (the last of duplicate keys).
    A comment or blank line between the caller's keys goes with the key after it (or at the end), unless
    the old block already has that very line, so that a block sent back as it was read is not doubled."""
    known = set(old_block.split("\n")[:-1])
    given: dict[str, list[str]] = {}
    pending: list[str] = []
    for key, lines in _entries(block):
        if key is None:
            pending.extend(line for line in lines if line not in known)
            continue
        given.pop(key, None)
        given[key] = [*pending, *lines]
        pending = []
    if pending:
        given[""] = pending  # no key is empty: the caller's closing comments, at the end
    return given


_KEY_LINE = re.compile(r"""^(?:"([^"]+)"|'([^']+)'|([^\s#'"].*?))[ \t]*:(?:[ \t]|$)""")


def set_keys(note: ParsedNote, updates: dict[str, Any], tz: tzinfo | None) -> str:
    """The frontmatter block of `note` with `updates` applied and created/updated normalised, edited as
    text (`_edit_block`) so the user's comments, order and quoting survive."""
    wanted: dict[str, Any] = {}
    for key in _LIFECYCLE:
        if key in note.frontmatter and key not in updates:
            normal = normalise(note.frontmatter[key], tz)
            if normal != note.frontmatter[key]:
                wanted[key] = normal
    wanted.update(updates)
    return _edit_block(note.frontmatter_text or "", {key: _render_key(key, value) for key, value in wanted.items()})


def _edit_block(block: str, given: dict[str, list[str]]) -> str:
    """`block` (between its `---` lines) with each given key's lines in place of that key's entry, the
    last of duplicates (earlier ones removed), or added at the end in the given order. Every other line
    stays as it was; the result ends with a newline unless it is empty."""
    out: list[str] = []
    entries = _entries(block)
    last = {key: i for i, (key, _) in enumerate(entries) if key in given}
    for i, (key, lines) in enumerate(entries):
        if key not in last:
            out.extend(lines)
        elif last[key] == i:
            out.extend(given[key])
    for key, lines in given.items():
        if key not in last:
            out.extend(lines)
    return "\n".join(out) + "\n" if out else ""


def _entries(block: str) -> list[tuple[str | None, list[str]]]:
    """The top-level entries of a frontmatter block, in order: each key with its line and the lines that
    continue its value (indented, `- ` items, a multi-line value's lines, and blank or comment lines
    among them), and, keyed None, each comment or blank line between keys."""
    lines = block.split("\n")
    if lines[-1] == "":
        lines.pop()
    entries: list[tuple[str | None, list[str]]] = []
    last_key = -1
    for line in lines:
        key = _key_of(line)
        if key is not None:
            entries.append((key, [line]))
            last_key = len(entries) - 1
        elif last_key < 0 or not line.strip() or line.startswith("#"):
            entries.append((None, [line]))
        else:  # continues the last key's value, and so do the blank and comment lines before it
            value = entries[last_key][1]
            for _, between in entries[last_key + 1 :]:
                value.extend(between)
            del entries[last_key + 1 :]
            value.append(line)
    return entries


_ISO_SECONDS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[+-]\d{2}:\d{2}|Z)$")


def _render_key(key: str, value: Any) -> list[str]:
    # A normalised timestamp is written bare (`updated: 2026-11-29T20:15:03+08:00`), as people write it.
    if key in _LIFECYCLE and isinstance(value, str) and _ISO_SECONDS.match(value):
        return [f"{key}: {value}"]
    return dump_frontmatter({key: value}).rstrip("\n").split("\n")


def _key_of(line: str) -> str | None:
    """The top-level key a frontmatter line starts, or None (an indented line, a `- ` item, a comment)."""
    if line[:1] == "-" and line[1:2] in ("", " ", "\t"):
        return None
    match = _KEY_LINE.match(line)
    if not match:
        return None
    return match.group(1) or match.group(2) or (match.group(3) or "").strip()
