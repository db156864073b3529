"""What the watcher ignores under one root: the default patterns, user regexes, `.gitignore`
rules, and amem's own folders (the vault, its state and cache), so that it never observes its own writes.

Paths are root-relative and `/`-separated on every system, so a user's regex means the same everywhere. A
folder is tested with a trailing `/` ("node_modules/"), so a regex written for folders ("tmp/",
"^\\.cache/") prunes the folder itself and it is never watched; file patterns such as "\\.log$" do not
prune a folder that happens to be named x.log.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..paths import is_inside

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

#: Ignored at any depth: version control, dependencies, build output, logs and lock files (the same list
#: as agentmemory-fs-watcher's, so switching to amem watches the same files; see the README's comparison).
DEFAULT_IGNORE_PATTERNS: tuple[str, ...] = (
    r"(?:^|/)\.git(?:/|$)",
    r"(?:^|/)node_modules(?:/|$)",
    r"(?:^|/)dist(?:/|$)",
    r"(?:^|/)build(?:/|$)",
    r"(?:^|/)\.next(?:/|$)",
    r"(?:^|/)\.turbo(?:/|$)",
    r"(?:^|/)coverage(?:/|$)",
    r"(?:^|/)\.DS_Store$",
    r"\.log$",
    r"\.lock$",
)

_DEFAULTS = re.compile("|".join(f"(?:{p})" for p in DEFAULT_IGNORE_PATTERNS))


class IgnoreRules:
    """The ignore decision for paths under one root; safe to query from several threads."""

    def __init__(
        self,
        root: str,
        *,
        patterns: Sequence[str] = (),
        use_gitignore: bool = True,
        excluded: Iterable[str] = (),
        git_toplevel: str | None = None,
    ) -> None:
        self.root = root
        self.use_gitignore = use_gitignore
        self._user = [re.compile(p) for p in patterns]
        self._excluded = _relative_exclusions(root, excluded)
        #: folder (root-relative, "" for the root) → its compiled .gitignore
        self._gitignore: dict[str, GitIgnoreSpec] = {}
        #: .gitignore files above the root, inside its git repository: (root's path from there, spec)
        self._above: list[tuple[str, GitIgnoreSpec]] = []
        self._lock = threading.Lock()
        if use_gitignore and git_toplevel:
            self._load_above(git_toplevel)

    @property
    def root_excluded(self) -> bool:
        """The root itself is, or lies inside, one of amem's own folders (the vault, its state)."""
        return "" in self._excluded

    # --- the decision ---------------------------------------------------------------------------------

    def is_ignored(self, rel: str, *, is_dir: bool) -> bool:
        """Whether this one path is ignored (its parent folders are assumed not to be)."""
        if not rel:
            return False
        for prefix in self._excluded:
            if rel == prefix or rel.startswith(prefix + "/"):
                return True
        probe = rel + "/" if is_dir else rel
        if _DEFAULTS.search(probe):
            return True
        if any(p.search(probe) for p in self._user):
            return True
        return self.use_gitignore and self._gitignored(rel, is_dir)

    def is_path_ignored(self, rel: str) -> bool:
        """Whether a file is ignored, itself or through any of its parent folders."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if self.is_ignored("/".join(parts[:depth]), is_dir=True):
                return True
        return self.is_ignored(rel, is_dir=False)

    # --- .gitignore -----------------------------------------------------------------------------------

    def load_gitignore(self, folder_rel: str) -> bool:
        """(Re)read `<folder>/.gitignore`; return whether the rules changed."""
        if not self.use_gitignore:
            return False
        path = (
            os.path.join(self.root, folder_rel, ".gitignore") if folder_rel else os.path.join(self.root, ".gitignore")
        )
        spec = _read_spec(path)
        with self._lock:
            old = self._gitignore.get(folder_rel)
            if spec is None:
                changed = self._gitignore.pop(folder_rel, None) is not None
            else:
                self._gitignore[folder_rel] = spec
                changed = old is None or old.patterns != spec.patterns
        return changed

    def _gitignored(self, rel: str, is_dir: bool) -> bool:
        probe = rel + "/" if is_dir else rel
        verdict: bool | None = None
        for prefix, spec in self._above:
            result = spec.check_file(f"{prefix}/{probe}")
            if result.include is not None:
                verdict = result.include
        gitignore = self._gitignore
        if not gitignore:
            return bool(verdict)
        # Deeper .gitignore files override shallower ones, as in git.
        parts = rel.split("/")
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            folder_spec = gitignore.get(folder)
            if folder_spec is None:
                continue
            result = folder_spec.check_file(probe[len(folder) + 1 :] if folder else probe)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)

    def _load_above(self, toplevel: str) -> None:
        """.gitignore files between the repository's top level and the root (exclusive) apply too."""
        root = os.path.abspath(self.root)
        top = os.path.abspath(toplevel)
        if not is_inside(root, top) or root == top:
            return
        folder = os.path.dirname(root)
        chain = []
        while is_inside(folder, top):
            chain.append(folder)
            if folder == top:
                break
            folder = os.path.dirname(folder)
        above = []
        for folder in reversed(chain):
            spec = _read_spec(os.path.join(folder, ".gitignore"))
            if spec is not None:
                above.append((os.path.relpath(root, folder).replace(os.sep, "/"), spec))
        # A root that the repository itself ignores was chosen on purpose: honouring the rules above it
        # would hide every file in it, so they are left out.
        verdict: bool | None = None
        for prefix, spec in above:
            result = spec.check_file(prefix + "/")
            if result.include is not None:
                verdict = result.include
        if not verdict:
            self._above = above


def _read_spec(path: str) -> GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _relative_exclusions(root: str, excluded: Iterable[str]) -> tuple[str, ...]:
    """amem's own folders as root-relative prefixes, comparing both the lexical and the real paths."""
    roots = {os.path.abspath(root), os.path.realpath(root)}
    found: set[str] = set()
    for folder in excluded:
        for candidate in {os.path.abspath(folder), os.path.realpath(folder)}:
            for base in roots:
                if is_inside(base, candidate):
                    found.add("")  # the root lies in (or is) one of amem's folders
                elif is_inside(candidate, base):
                    rel = os.path.relpath(candidate, base)
                    found.add("" if rel == "." else rel.replace(os.sep, "/"))
    return tuple(sorted(found))


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
