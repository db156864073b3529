"""Notes merge by amem's rules whatever a `.gitattributes` from elsewhere says: sync routes the vault's notes
to amem's driver in `info/attributes` (which outranks every `.gitattributes` in the tree), and warns when the
pulled changes bring a `.gitattributes` that would route notes to another merge (`*.md merge=union` would
interleave two overwrites silently)."""

from __future__ import annotations

import contextlib
import fnmatch
import os

from ..gitvault.git import Repository, _run
from ..report import Reporter

DRIVER_NAME = "amem"


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
    or for a plain `git merge`."""
    path = _info_attributes(repo)
    try:
        with open(path, encoding="utf-8") as handle:
            existing = handle.read()
    except FileNotFoundError:
        existing = ""
    except (OSError, UnicodeDecodeError):
        return  # sync's own merge still switches the driver in; only a plain git merge would miss it
    present = {line.strip() for line in existing.splitlines()}
    missing = [
        line
        for line in (f"{_attribute_pattern(folder, ext)} merge={DRIVER_NAME}" for ext in extensions)
        if line not in present
    ]
    if missing:
        prefix = existing if not existing or existing.endswith("\n") else existing + "\n"
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(prefix + "".join(f"{line}\n" for line in missing))


def _merge_routes(text: str, extensions: tuple[str, ...]) -> list[str]:
    """The lines of a `.gitattributes` that send notes to a merge other than amem's."""
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
            if attr in ("binary", "merge", "-merge", "!merge") or (
                attr.startswith("merge=") and attr != f"merge={DRIVER_NAME}"
            ):
                found.append(f"{pattern} {attr}")
    return found


def report_attributes(
    repo: Repository, start: str | None, end: str, extensions: tuple[str, ...], reporter: Reporter
) -> None:
    """Warn when the pulled changes bring a `.gitattributes` that would route notes to another merge."""
    spec = [":(glob)**/.gitattributes"]
    if start is None:
        raw = _run(["ls-tree", "-r", "-z", "--name-only", end, "--", *spec], repo.top, literal_pathspecs=False).stdout
    else:
        args = ["diff", "--name-only", "--no-renames", "--diff-filter=AMT", "-z", start, end, "--", *spec]
        raw = _run(args, repo.top, literal_pathspecs=False).stdout
    for name in (os.fsdecode(n) for n in raw.split(b"\0") if n):
        proc = _run(["cat-file", "blob", f"{end}:{name}"], repo.top, check=False)
        routes = _merge_routes(proc.stdout.decode("utf-8", "replace"), extensions)
        if routes:
            reporter.warn(
                f"the pulled {name} routes notes to another merge ({'; '.join(routes)}); amem merges notes by its "
                "own rules whatever .gitattributes says (set in .git/info/attributes), so conflicts are still "
                "kept and reported"
            )
