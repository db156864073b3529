"""Note ids: validation, extension rules, and containment of every path inside the vault."""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from ..errors import InvalidId
from ..output import quote
from ..paths import is_inside, is_within

if TYPE_CHECKING:
    from ..config import Config


# String tests where patterns were (`^[A-Za-z]:`, `[\x00-\x1f\x7f]`, `^\.[A-Za-z][A-Za-z0-9]*$`): every
# command checks an id, and compiling the three cost more than the checks (test_notes.py holds them equal).
def _is_drive(text: str) -> bool:
    """`^[A-Za-z]:`: a Windows drive path."""
    return len(text) >= 2 and text[1] == ":" and text[0].isascii() and text[0].isalpha()


def _has_control(text: str) -> bool:
    r"""`[\x00-\x1f\x7f]`: a control character (the loop only for text that is not all printable)."""
    return not text.isprintable() and any(c < " " or c == "\x7f" for c in text)


def _is_type_suffix(suffix: str) -> bool:
    r"""`^\.[A-Za-z][A-Za-z0-9]*$` (`$` also before a final newline): a suffix that reads as a file type."""
    body = suffix[1:-1] if suffix.endswith("\n") else suffix[1:]
    return suffix.startswith(".") and body.isascii() and body[:1].isalpha() and body.isalnum()


#: Folders that scans never index, so a note must never be written there (other programs keep their
#: configuration in them, and `search` could never find it).
NEVER_INDEXED = frozenset({".git", "node_modules", ".obsidian"})
#: The longest file name (in UTF-8 bytes) and path the common file systems accept.
NAME_MAX = 255
PATH_MAX = 4095
#: A suffix that reads as a file type (".txt", ".png"): see _is_type_suffix; "v1.2" or "2026.11.29" have none.


class NoteRef(NamedTuple):
    """A validated note: its vault-relative id (with extension) and its lexical path in the vault (a
    string: `read` and `write` never load `pathlib`)."""

    id: str
    path: str


def normalise_id(raw_id: str, extensions: tuple[str, ...], *, hidden_dirs: bool = False) -> str:
    """The canonical vault-relative id for `raw_id`, or InvalidId; touches no file.

    Refused: empty ids, NUL and other control characters, backslashes, ids that are not UTF-8, absolute
    and drive paths, `..` that leaves the vault, a trailing `/`, a folder that scans never index (`.git`,
    `node_modules`, `.obsidian`, and any dot-folder unless `hidden_dirs`), another file type's extension,
    and names longer than file systems allow."""
    _refuse_characters(raw_id)
    _refuse_places(raw_id)
    normal = posixpath.normpath(raw_id)
    if normal in (".", "") or normal == ".." or normal.startswith("../"):
        raise InvalidId(f"invalid note id {quote(raw_id)}: it leaves the vault")
    *folders, name = normal.split("/")
    _refuse_folders(raw_id, folders, hidden_dirs)
    note_id = _with_extension(raw_id, normal, name, extensions)
    for segment in note_id.split("/"):
        if len(segment.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise InvalidId(f"invalid note id: a name in it is longer than file systems allow ({NAME_MAX} bytes)")
    return note_id


def _refuse_characters(raw_id: str | None) -> None:
    """Empty ids, NUL, control characters and backslashes."""
    if raw_id is None or not raw_id.strip():
        raise InvalidId("invalid note id: the id is empty")
    if "\x00" in raw_id:
        raise InvalidId("invalid note id: it contains a NUL character")
    if _has_control(raw_id):
        raise InvalidId(f"invalid note id {quote(raw_id)}: it contains a control character (newline, tab…)")
    if "\\" in raw_id:
        raise InvalidId(f"invalid note id {quote(raw_id)}: use / as the separator, not a backslash")
    if not raw_id.isascii() and not _is_utf8(raw_id):
        shown = raw_id.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise InvalidId(f"invalid note id {shown}: it is not UTF-8, which no scan lists (bytes shown as \\xNN)")


def _is_utf8(text: str) -> bool:
    """Whether `text` is UTF-8, not the surrogate escapes of bytes that are not (a name from the OS)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_places(raw_id: str) -> None:
    """Absolute and drive paths, ids longer than a path may be, and folders."""
    if raw_id.startswith("/") or raw_id.startswith("~"):
        raise InvalidId("invalid note id: it must be relative to the vault, not an absolute path")
    if _is_drive(raw_id):
        raise InvalidId("invalid note id: it must be relative to the vault, not a drive path")
    if len(raw_id) > PATH_MAX:
        raise InvalidId(f"invalid note id: it is longer than file systems allow ({len(raw_id)} characters)")
    if raw_id.endswith("/"):
        raise InvalidId(f"invalid note id {quote(raw_id)}: it ends with /, so it names a folder, not a note")


def _refuse_folders(raw_id: str, folders: list[str], hidden_dirs: bool) -> None:
    """Folders that scans never index: `.git`, `node_modules`, `.obsidian`, and dot-folders unless allowed."""
    for folder in folders:
        if folder in NEVER_INDEXED or (folder.startswith(".") and not hidden_dirs):
            raise InvalidId(
                f"invalid note id {quote(raw_id)}: notes are never kept in {quote(folder + '/')} folders"
                + ("" if folder in NEVER_INDEXED else " (set indexHiddenDirs to use dot-folders)")
            )


def _with_extension(raw_id: str, normal: str, name: str, extensions: tuple[str, ...]) -> str:
    """The id with a note extension: its own when it has one, the first configured when it has none."""
    suffix = os.path.splitext(name)[1]
    if suffix.lower() in (ext.lower() for ext in extensions):
        return normal
    if suffix and _is_type_suffix(suffix):
        allowed = ", ".join(extensions)
        raise InvalidId(f"invalid note id {quote(raw_id)}: notes end in {allowed}, not {suffix}")
    return normal + extensions[0]


def normalise_prefix(raw: str) -> str:
    """A folder or id prefix as `list` and `search --folder` take it, vault-rooted: `\\` reads as `/` and a
    leading `/` or `./` means the vault root. InvalidId when it could only name something outside the
    vault (a `..` segment, a drive path, `~`) or holds NUL or a control character, rather than an
    empty answer that hides the mistake."""
    prefix = raw.replace("\\", "/").strip()
    if _has_control(prefix):
        raise InvalidId(f"invalid folder {quote(raw)}: it contains a control character (NUL, newline, tab…)")
    if _is_drive(prefix) or prefix.startswith("~"):
        raise InvalidId(f"invalid folder {quote(raw)}: it must be relative to the vault, not a host path")
    if ".." in prefix.split("/"):
        raise InvalidId(f"invalid folder {quote(raw)}: a `..` segment could leave the vault")
    while prefix.startswith("./"):
        prefix = prefix[2:]
    return prefix.lstrip("/")


def may_read(path: str, real_root: str) -> bool:
    """Whether amem may read the file at `path`: true only when its real path (every symlink resolved)
    lies inside the vault whose real path is `real_root` (`os.path.realpath` of the vault root).

    The one place that decides it: every reader of a note's bytes (the index scan, search snippets,
    linked notes, completion, the watcher's vault sink, `read`) asks it before opening a file. It costs
    one lstat per path component, so a scan need not ask for every entry: a walker that does not follow
    symlinked folders needs it only for entries that are symlinks themselves (`DirEntry.is_symlink()`),
    and one that does follow them, for every entry under such a folder. A broken link or a loop is
    outside by this rule (its real path is not a readable file in the vault)."""
    try:
        real = os.path.realpath(path, strict=True)
    except (OSError, RuntimeError):
        return False  # broken, a loop, or unreadable
    return is_inside(real, real_root)


#: What `stat` calls the files that are not notes, for the message that refuses one.
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a file")


class NotARegularFile(OSError):
    """A FIFO, socket or device where a note's file should be. An OSError, so that every reader that
    skips an unreadable file (the index scan, snippets, linked notes) skips this one too."""

    def __init__(self, mode: int) -> None:
        super().__init__(errno.EINVAL, f"it is {_kind(mode)}, not a regular file; only regular files are notes")


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """The note file at `path`, open for reading its bytes; NotARegularFile at once when it is a FIFO,
    socket or device, IsADirectoryError for a folder. The one way amem opens a note to read it.

    Opened without blocking, then checked on the open descriptor: a FIFO's plain open waits for a writer
    that may never come, and a check before the open could be raced by a FIFO put there after it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(mode):
            raise NotARegularFile(mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the note file at `path`, as open_regular opens it."""
    with open_regular(path) as handle:
        return handle.read()


def _refuse_special(path: str, note_id: str) -> None:
    """InvalidId when `path` (or what its symlink leads to) is a FIFO, socket or device: every command
    refuses such a note before it does anything, rather than open it and wait."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing, or each command says why it cannot use it
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise InvalidId(f"cannot use note {quote(note_id)}: {NotARegularFile(mode).strerror}")


def resolve_note(config: Config, raw_id: str) -> NoteRef:
    """Validate `raw_id` against the vault of `config`; refuse anything that escapes, lexically or by symlink."""
    vault_root = config.vault_dir
    extensions = config.extensions
    note_id = normalise_id(raw_id, extensions, hidden_dirs=config.index_hidden_dirs)
    root = os.path.abspath(vault_root)
    path = os.path.join(root, *note_id.split("/"))
    if not is_inside(os.path.normpath(path), root):
        raise InvalidId(f"invalid note id {quote(raw_id)}: it leaves the vault")
    # realpath resolves every existing component, the note itself included when it is a (even broken)
    # symlink, so this checks the nearest existing ancestor and any link target against the real vault.
    if not is_within(path, root):
        raise InvalidId(f"invalid note id {quote(note_id)}: it resolves through a symlink to outside the vault")
    _refuse_special(path, note_id)
    return NoteRef(note_id, path)
