"""`amem check --staged`: what a commit would bring into the vault, for a pre-commit hook. The staged
notes are checked as git has staged them (not as the working files are), and only the links they add
compared with HEAD's version; links resolve among the staged tree's notes and files, which is what the
commit will hold."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..atomicfile import TEMP_SUFFIX
from ..gitvault.git import Repository, require_repository
from ..gitvault.staged import head_content, staged_changes, staged_content, staged_paths
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
    twin_problems,
)

if TYPE_CHECKING:
    from ..config import Config
    from ..report import Reporter
    from ..shapes import CheckResult


def _vault_folder(repo: Repository, config: Config) -> str:
    """The vault's folder in the repository, '' when it is the repository's top, with a trailing `/`."""
    real, top = os.path.realpath(config.vault_root), os.path.realpath(repo.top)
    return "" if real == top else repo.relpath(real) + "/"


def _targets(data: bytes, note_id: str, extensions: tuple[str, ...]) -> set[str]:
    note = parse_note(data.decode("utf-8", errors="replace"), note_id)
    links = link_census(note.frontmatter_text, note.body, extensions, limit=0).distinct
    return {t for t in (stored_target(link, note_id) for link in links) if t}


class _StagedTree:
    """The notes and other files of the vault as git's index holds them."""

    def __init__(self, config: Config, repo: Repository, folder: str) -> None:
        walker = Walker(config, VaultScan())
        ids = [path[len(folder) :] for path in staged_paths(repo, folder)]
        self.notes = [i for i in ids if walker.is_note(i)]
        self.files = VaultFiles(
            [i for i in ids if not walker.is_note(i) and not i.endswith(TEMP_SUFFIX)],
            [i for i in ids if i.endswith(TEMP_SUFFIX)],
        )
        self.resolver = LinkResolver(self.notes, config.extensions)
        self.attachments = attachment_resolver(self.files.attachments)
        self.walker = walker


def _added_link_problems(
    config: Config, tree: _StagedTree, note_id: str, data: bytes, before: bytes | None, before_id: str
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
    """`amem check --staged [PREFIX]`: the staged notes whose id starts with PREFIX, as staged."""
    repo = require_repository(config.vault_root)
    folder = _vault_folder(repo, config)
    tree = _StagedTree(config, repo, folder)
    prefix = prefix or ""
    staged = [
        (change.path[len(folder) :], change.before)
        for change in staged_changes(repo, folder)
        if change.path.startswith(folder)
    ]
    notes = [(i, before) for i, before in staged if i.startswith(prefix) and tree.walker.is_note(i)]
    problems: list[Problem] = []
    for note_id, before in notes:
        data = staged_content(repo, folder + note_id)
        found, readable = _note_problems(config, note_id, data)
        problems += found
        if readable:
            old = head_content(repo, before) if before is not None else None
            old_id = before[len(folder) :] if before is not None else note_id
            problems += _added_link_problems(config, tree, note_id, data, old, old_id)
    changed = {i for i, _ in staged}
    twins = [group for group in _twin_groups(tree.notes) if changed.intersection(group)]
    problems += twin_problems(twins, prefix)
    temporaries = VaultFiles([], [i for i in tree.files.temporaries if i in changed])
    problems += leftover_problems([i for i, _ in notes], temporaries, prefix)
    for item in problems:
        if item["kind"] == "stray-temporary":
            item["message"] = f"{quote(item['id'])} is one of amem's temporary files: it does not belong in a commit"
    return report(problems, len(notes))


def _twin_groups(ids: list[str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for note_id in ids:
        groups.setdefault(link_key(note_id), []).append(note_id)
    return [sorted(group) for group in groups.values() if len(group) > 1]
