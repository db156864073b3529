"""`amem check --staged`: what a commit would bring into the vault, for a pre-commit hook. It reads the index
the commit is made from (the one git names for the hook), so the staged notes are checked as the commit
will hold them (not as the working files are), and only the links they add compared with HEAD's version;
links resolve among the notes and files of that tree. The notes whose links resolved in HEAD to a note or
file the commit removes or renames, and resolve to nothing in it, are reported too."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from ..atomicfile import TEMP_SUFFIX
from ..gitvault.git import Repository, read_blobs, report_warnings, require_repository
from ..gitvault.staged import (
    GITLINK_MODE,
    REGULAR_MODES,
    Entry,
    StagedChange,
    commit_index,
    head_entries,
    staged_changes,
    staged_entries,
)
from ..index.health import VaultFiles, attachment_of, attachment_resolver
from ..index.scan import VaultScan, Walker
from ..notes.links import LinkResolver, link_census, link_key, stored_target
from ..notes.parse import parse_note
from ..output import quote
from .check import (
    Problem,
    ambiguous_link,
    broken_link,
    leftover_problems,
    link_lines,
    problem,
    ranked,
    report,
    shown_target,
    twin_problems,
)

if TYPE_CHECKING:
    from ..config import Config
    from ..report import Reporter
    from ..results import CheckResult


def _vault_folder(repo: Repository, config: Config) -> str:
    """The vault's folder in the repository, '' when it is the repository's top, with a trailing `/`."""
    real, top = os.path.realpath(config.vault_root), os.path.realpath(repo.top)
    return "" if real == top else repo.relpath(real) + "/"


def _targets(data: bytes, note_id: str, extensions: tuple[str, ...]) -> set[str]:
    note = parse_note(data.decode("utf-8", errors="replace"), note_id)
    links = link_census(note.frontmatter_text, note.body, extensions, limit=0).distinct
    return {t for t in (stored_target(link, note_id) for link in links) if t}


class _Tree:
    """The notes and other files of the vault in a tree git holds (the index, or HEAD), by vault path. A
    submodule is neither: nothing of it is in this repository."""

    def __init__(self, config: Config, walker: Walker, entries: list[Entry]) -> None:
        notes: list[Entry] = []
        others: list[str] = []
        for entry in entries:
            if entry.mode == GITLINK_MODE:
                continue
            if walker.is_note(entry.path):
                notes.append(entry)
            else:
                others.append(entry.path)
        self.notes = [e.path for e in notes]
        #: the notes whose text is in the tree (a symlinked note's is its target's)
        self.texts = {e.path: e.oid for e in notes if e.mode in REGULAR_MODES}
        self.files = VaultFiles(
            [i for i in others if not i.endswith(TEMP_SUFFIX)], [i for i in others if i.endswith(TEMP_SUFFIX)]
        )
        self.resolver = LinkResolver(self.notes, config.extensions)
        self.attachments = attachment_resolver(self.files.attachments)

    def resolves(self, target: str) -> str | None:
        """The note, else the file, a stored target resolves to in this tree."""
        found = ranked(self.resolver, target)
        return found[0] if found else attachment_of(self.attachments, target)


def _added_link_problems(
    config: Config, tree: _Tree, note_id: str, data: bytes, before: bytes | None, before_id: str
) -> list[Problem]:
    """The links of the staged note that HEAD's version did not hold and that resolve to nothing, or to one
    of several notes."""
    added = _targets(data, note_id, config.extensions)
    if before is not None:
        added -= _targets(before, before_id, config.extensions)
    if not added:
        return []
    lines = link_lines(data.decode("utf-8", errors="replace"), note_id, config.extensions)
    problems = []
    for target in sorted(added, key=lambda t: lines.get(t, 0)):
        candidates = ranked(tree.resolver, target)
        if not candidates and attachment_of(tree.attachments, target) is None:
            problems.append(broken_link(note_id, target, lines.get(target)))
        elif len(candidates) > 1:
            problems.append(ambiguous_link(note_id, target, candidates, lines.get(target)))
    return problems


def _note_problems(config: Config, note_id: str, data: bytes) -> tuple[list[Problem], bool]:
    """What is wrong in a staged note by itself; False when its text cannot be read for links."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        message = "it is not UTF-8 text: it would be left out of the index and search"
        return [problem("not-utf8", note_id, message)], False
    problems = []
    warnings = parse_note(text, note_id).warnings
    if warnings:
        problems.append(problem("malformed-frontmatter", note_id, warnings[0], 1))
    limit = config.check_max_note_bytes
    if len(data) > limit:
        message = f"{len(data)} bytes, over check.maxNoteBytes ({limit})"
        problems.append(problem("oversized", note_id, message))
    return problems, True


def check_staged(config: Config, prefix: str | None = None, *, reporter: Reporter | None = None) -> CheckResult:
    """`amem check --staged [PREFIX]`: the staged notes whose id starts with PREFIX, as staged, and the notes
    under PREFIX whose links the commit breaks by removing or renaming what they lead to."""
    repo = require_repository(config.vault_root)
    folder = _vault_folder(repo, config)
    warnings: list[str] = []
    index = commit_index(repo, warnings)
    walker = Walker(config, VaultScan())
    tree = _Tree(config, walker, staged_entries(index, folder))
    prefix = prefix or ""
    changes = staged_changes(index, folder)
    warnings += [
        f"{quote(c.path)} is a submodule: what it holds is not checked"
        for c in changes
        if c.mode == GITLINK_MODE and c.path.startswith(prefix)
    ]
    checked = [c for c in changes if c.path in tree.texts and c.path.startswith(prefix)]
    lost = _lost(config, walker, repo, folder, tree, changes)
    linking = [i for i in tree.texts if i.startswith(prefix)] if lost else []
    wanted = [tree.texts[i] for i in linking] + [c.oid for c in checked]
    wanted += [before.oid for c in checked if (before := _earlier_text(c)) is not None]
    blobs = read_blobs(repo, wanted)

    problems = _changed_note_problems(config, tree, checked, blobs, warnings)
    if lost:
        reported = {(p["id"], p.get("target")) for p in problems}
        problems += _broken_by_removal(config, tree, lost, {i: blobs.get(tree.texts[i]) for i in linking}, reported)
    problems += _commit_problems(tree, changes, checked, prefix)
    report_warnings(warnings, reporter)
    return report(problems, len(checked))


def _earlier_text(change: StagedChange) -> Entry | None:
    """HEAD's entry the staged note was, when it held text of its own (not a symlink's)."""
    before = change.before
    return before if before is not None and before.mode in REGULAR_MODES else None


def _changed_note_problems(
    config: Config, tree: _Tree, checked: list[StagedChange], blobs: dict[str, bytes], warnings: list[str]
) -> list[Problem]:
    """What is wrong in each staged note, and the links it adds that lead nowhere."""
    problems: list[Problem] = []
    for change in checked:
        data = blobs.get(change.oid)
        if data is None:
            warnings.append(f"git cannot show the staged {quote(change.path)}: it is not checked")
            continue
        found, readable = _note_problems(config, change.path, data)
        problems += found
        if readable:
            before = _earlier_text(change)
            old = blobs.get(before.oid) if before is not None else None
            old_id = before.path if before is not None else change.path
            problems += _added_link_problems(config, tree, change.path, data, old, old_id)
    return problems


def _commit_problems(
    tree: _Tree, changes: list[StagedChange], checked: list[StagedChange], prefix: str
) -> list[Problem]:
    """The case twins the commit makes, and amem's temporary files it would hold."""
    changed = {c.path for c in changes if c.status != "D"}
    twins = [group for group in _twin_groups(tree.notes) if changed.intersection(group)]
    problems = twin_problems(twins, prefix)
    temporaries = VaultFiles([], [i for i in tree.files.temporaries if i in changed])
    problems += leftover_problems([c.path for c in checked], temporaries, prefix)
    for item in problems:
        if item["kind"] == "stray-temporary":
            item["message"] = f"{quote(item['id'])} is one of amem's temporary files: it does not belong in a commit"
    return problems


class _Removal(NamedTuple):
    """HEAD's tree, where the links resolved before the commit, and each of its notes and files that the
    commit no longer holds, by vault path, with what the commit does to it."""

    head: _Tree
    what: dict[str, str]


def _lost(
    config: Config, walker: Walker, repo: Repository, folder: str, tree: _Tree, changes: list[StagedChange]
) -> _Removal | None:
    """HEAD's notes and files that the commit removes or renames, each with what it does to it; None when
    it removes none."""
    if not any(c.status in "DRT" for c in changes):
        return None
    head = _Tree(config, walker, head_entries(repo, folder))
    kept = set(tree.notes) | set(tree.files.attachments) | set(tree.files.temporaries)
    renamed = {c.before.path: c.path for c in changes if c.status == "R" and c.before}
    what: dict[str, str] = {}
    for path in [*head.notes, *head.files.attachments]:
        if path not in kept:
            to = renamed.get(path)
            what[path] = f"renames {quote(path)} to {quote(to)}" if to else f"removes {quote(path)}"
    return _Removal(head, what) if what else None


def _broken_by_removal(
    config: Config, tree: _Tree, lost: _Removal, texts: dict[str, bytes | None], reported: set[tuple[str, Any]]
) -> list[Problem]:
    """The links of the staged notes that resolved in HEAD to a note or file the commit removes or renames,
    and resolve to nothing in the commit. Only a note whose text holds a removed one's name, as link keys
    compare it, is read for links."""
    head_notes = set(lost.head.notes)
    names = {link_key(_stem(p, config.extensions) if p in head_notes else p).rsplit("/", 1)[-1] for p in lost.what}
    # A link's target ends with the name (or the name and an extension) where no word goes on.
    naming = re.compile("(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")(?!\w)")
    problems: list[Problem] = []
    for note_id, data in texts.items():
        if data is None or not _may_name(data, naming):
            continue
        broken: dict[str, str] = {}
        for target in _targets(data, note_id, config.extensions):
            if (note_id, shown_target(target)) in reported or tree.resolves(target) is not None:
                continue
            was = lost.head.resolves(target)
            if was in lost.what:
                broken[target] = was
        if not broken:
            continue
        lines = link_lines(data.decode("utf-8", errors="replace"), note_id, config.extensions, set(broken))
        for target, was in broken.items():
            item = broken_link(note_id, target, lines.get(target))
            item["message"] += f": the commit {lost.what[was]}"
            problems.append(item)
    return problems


def _stem(path: str, extensions: tuple[str, ...]) -> str:
    lowered = path.lower()
    for ext in extensions:
        if lowered.endswith(ext.lower()):
            return path[: -len(ext)]
    return path


def _may_name(data: bytes, naming: re.Pattern[str]) -> bool:
    """Whether a note's text could hold a link that `naming` finds, the text compared as link keys, as
    written or percent-decoded."""
    text = link_key(data.decode("utf-8", errors="replace"))
    if naming.search(text):
        return True
    if "%" not in text:
        return False
    from urllib.parse import unquote

    return naming.search(link_key(unquote(text))) is not None


def _twin_groups(ids: list[str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for note_id in ids:
        groups.setdefault(link_key(note_id), []).append(note_id)
    return [sorted(group) for group in groups.values() if len(group) > 1]
