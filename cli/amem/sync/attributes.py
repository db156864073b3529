"""Notes merge by amem's rules whatever a `.gitattributes` from elsewhere says: sync routes the vault's notes
to amem's driver in `info/attributes` (which outranks every `.gitattributes` in the tree), and warns when the
pulled changes bring a `.gitattributes` that would route notes to another merge (`*.md merge=union` would
interleave two overwrites silently). The vault's own `.gitattributes` routes them too, for other clones;
one that is a symlink or no file is left alone, never read or written through."""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Iterable

from ..errors import GitError
from ..gitvault.git import Repository, _run
from ..report import Reporter

DRIVER_NAME = "amem"
#: The attributes with which git rewrites a file's bytes between the repository and the work tree, beyond
#: line ends: a `.gitattributes` from elsewhere that sets one for notes (`*.md working-tree-encoding=UTF-16LE`
#: had every clone check notes out as UTF-16 and fail its next commit; `filter=lfs` hands them to git-lfs on
#: a machine that has it, as any filter the machine defines) is overruled in `info/attributes`. Line ends
#: (`text`, `eol`, `core.autocrlf`) stay the user's: git converts them both ways, the stored note unchanged.
REWRITING = ("filter", "ident", "working-tree-encoding")
#: What `info/attributes` gives the vault's notes: amem's merge, and none of the rewriting attributes.
NOTE_ATTRIBUTES = " ".join([f"merge={DRIVER_NAME}", *(f"-{name}" for name in REWRITING)])
#: The vault's own attributes file, committed so that other clones and plain git merges route notes too.
ATTRIBUTES_FILE = ".gitattributes"


def _info_attributes(repo: Repository) -> str:
    """`info/attributes` of the repository (the common git folder's, for a linked work tree)."""
    common = repo.git_dir
    try:
        with open(os.path.join(repo.git_dir, "commondir"), encoding="utf-8") as handle:
            text = handle.read().strip()
        common = os.path.realpath(os.path.join(repo.git_dir, text))
    except OSError:
        pass
    return os.path.join(common, "info", "attributes")


def _attribute_pattern(folder: str, ext: str) -> str:
    """A gitattributes pattern for every note under the vault's folder (relative to the repository's top)."""
    if not folder:
        return f"*{ext}"
    escaped = "".join(f"\\{c}" if c in "*?[]\\" else c for c in folder)
    pattern = f"{escaped}/**/*{ext}"
    if any(c in pattern for c in ' \t"'):
        pattern = '"' + pattern.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t") + '"'
    return pattern


def force_note_driver(repo: Repository, folder: str, extensions: tuple[str, ...]) -> None:
    """Route the vault's notes to amem's driver in `info/attributes`, which outranks every `.gitattributes`
    in the tree: a `.gitattributes` from elsewhere (`*.md merge=union`) cannot turn conflicts off, for sync
    or for a plain `git merge`, nor have git change a note's bytes (`NOTE_ATTRIBUTES`)."""
    path = _info_attributes(repo)
    _sweep(os.path.realpath(path))
    try:
        with open(path, encoding="utf-8") as handle:
            existing = handle.read()
    except FileNotFoundError:
        existing = ""
    except (OSError, UnicodeDecodeError):
        return  # sync's own merge still switches the driver in; only a plain git merge would miss it
    text = _with_lines(existing, (f"{_attribute_pattern(folder, ext)} {NOTE_ATTRIBUTES}" for ext in extensions))
    if text is None:
        return
    # The user's own rules may be there, so the file is replaced whole (`_replace`). The folder is this
    # machine's, never a remote's: a symlink the user made there is followed, and its target replaced.
    target = os.path.realpath(path)
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _replace(target, text)


def route_vault_notes(vault: str, extensions: tuple[str, ...], reporter: Reporter) -> bool:
    """Route the notes to amem's driver in the vault's `.gitattributes` too; True when it had to be written.
    One that is a symlink or no file at all (a remote can commit one that leads anywhere) is neither read nor
    written through, with a warning: `force_note_driver` routes the notes all the same."""
    attributes = os.path.join(vault, ATTRIBUTES_FILE)
    existing = _vault_attributes(attributes)
    if existing is None:
        reporter.warn(
            f"the vault's {ATTRIBUTES_FILE} is a symlink or not a file: amem leaves it as it is (its notes still"
            " merge by amem's rules, through the repository's info/attributes)"
        )
        return False
    text = _with_lines(existing, (f"*{ext} merge={DRIVER_NAME}" for ext in extensions))
    if text is None:
        return False
    try:  # renamed over it: never written through a symlink put there since
        _replace(attributes, text)
    except OSError as exc:
        raise GitError(f"cannot write the vault's {ATTRIBUTES_FILE}: {exc.strerror}") from None
    return True


def _with_lines(existing: str, wanted: Iterable[str]) -> str | None:
    """`existing` with the `wanted` lines it lacks added at its end; None when it lacks none."""
    present = {line.strip() for line in existing.splitlines()}
    missing = [line for line in wanted if line not in present]
    if not missing:
        return None
    prefix = existing if not existing or existing.endswith("\n") else existing + "\n"
    return prefix + "".join(f"{line}\n" for line in missing)


def _replace(path: str, text: str) -> None:
    """A new file holding `text` renamed over `path` (no symlink), with its mode: a write that fails half
    way (a full disk, a kill) leaves the old file whole."""
    from ..atomicfile import atomic_replace

    try:
        mode: int | None = os.lstat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    atomic_replace(path, text.encode("utf-8"), mode)


def _sweep(target: str) -> None:
    """Remove the temporaries that a sync killed between writing and renaming them left beside `target`
    (`.attributes.<pid>-<hex>.amem-tmp`): those whose writer is no running process, never a live one's."""
    from ..atomicfile import is_temporary, parse_temporary, process_alive

    folder = os.path.dirname(target)
    try:
        names = [name for name in os.listdir(folder) if is_temporary(name)]
    except OSError:
        return
    for name in names:
        found = parse_temporary(os.path.join(folder, name))
        if found is None or found.target != target or found.pid is None or process_alive(found.pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def _vault_attributes(path: str) -> str | None:
    """The text of the vault's `.gitattributes` ("" when there is none), None when a symlink, a folder or
    any other non-file stands there. Opened without following a symlink and without blocking on a FIFO, as
    `notes.ids.open_regular` opens a note (which follows symlinks, and would load the note model into
    every sync)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        if os.path.islink(path):
            return None  # O_NOFOLLOW refused it
        raise GitError(f"cannot read the vault's {ATTRIBUTES_FILE}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "it is not UTF-8"
            raise GitError(f"cannot read the vault's {ATTRIBUTES_FILE}: {reason}") from None


def _overruled(text: str, extensions: tuple[str, ...]) -> list[str]:
    """The attributes a `.gitattributes` sets for notes that `info/attributes` overrules: a merge other than
    amem's, and the rewriting ones."""
    suffixes = tuple(e.lower() for e in extensions)
    found = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, *attrs = line.split()
        last = pattern.rsplit("/", 1)[-1].lower()
        if not (last.endswith(suffixes) or any(fnmatch.fnmatchcase(f"note{s}", last) for s in suffixes)):
            continue
        for attr in attrs:
            if (
                attr in ("binary", "merge", "-merge", "!merge")
                or (attr.startswith("merge=") and attr != f"merge={DRIVER_NAME}")
                or attr.split("=", 1)[0] in REWRITING  # set, or set to a value; `-filter` / `!filter` undo it
            ):
                found.append(f"{pattern} {attr}")
    return found


def report_attributes(
    repo: Repository, start: str | None, end: str, extensions: tuple[str, ...], reporter: Reporter
) -> None:
    """Warn when the pulled changes bring a `.gitattributes` that would route notes to another merge or
    rewrite their bytes."""
    spec = [":(glob)**/.gitattributes"]
    if start is None:
        raw = _run(["ls-tree", "-r", "-z", "--name-only", end, "--", *spec], repo.top, literal_pathspecs=False).stdout
    else:
        args = ["diff", "--name-only", "--no-renames", "--diff-filter=AMT", "-z", start, end, "--", *spec]
        raw = _run(args, repo.top, literal_pathspecs=False).stdout
    for name in (os.fsdecode(n) for n in raw.split(b"\0") if n):
        proc = _run(["cat-file", "blob", f"{end}:{name}"], repo.top, check=False)
        overruled = _overruled(proc.stdout.decode("utf-8", "replace"), extensions)
        if overruled:
            reporter.warn(
                f"the pulled {name} sets attributes for notes that amem overrules ({'; '.join(overruled)}): notes"
                " merge by amem's rules and keep their bytes whatever .gitattributes says (set in"
                " .git/info/attributes), so conflicts are still kept and reported"
            )
