"""`amem check`: the vault's health as one report, for a git hook or CI: links that resolve to nothing or to
one of several notes, case twins, frontmatter that does not parse, notes and names that are not UTF-8,
conflict copies and temporaries left behind, aliases that collide, orphans and oversized notes.

Severities: `error` is something that is wrong in what the vault says (a link that leads nowhere, a note or
its frontmatter that cannot be read, two notes a case-insensitive file system cannot hold); `warning` is
something that works today but may not mean what its writer meant or is waiting for someone (an ambiguous
link, a colliding alias, a conflict copy, a stray temporary); `info` is worth knowing (orphans, sizes).
A check fails on errors, with --strict on warnings too.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from ..errors import ProblemsFound
from ..index.health import BaseNames, Health, VaultFiles, attachment_of, attachment_resolver, vault_files
from ..index.index import VaultIndex
from ..notes.conflicts import original_of_copy
from ..notes.links import PATH_MARK, LinkResolver, frontmatter_spans, iter_link_spans, link_key, stored_target
from ..output import quote

if TYPE_CHECKING:
    from ..config import Config
    from ..report import Reporter
    from ..results import CheckResult

#: Each kind of problem and its severity.
SEVERITY: dict[str, str] = {
    "broken-link": "error",
    "case-twin": "error",
    "malformed-frontmatter": "error",
    "not-utf8": "error",
    "not-utf8-name": "error",
    "unreadable": "error",
    "ambiguous-link": "warning",
    "alias-collision": "warning",
    "conflict-copy": "warning",
    "stray-temporary": "warning",
    "orphan": "info",
    "oversized": "info",
}

Problem = dict[str, Any]


def problem(kind: str, note_id: str, message: str, line: int | None = None, **fields: Any) -> Problem:
    return {"kind": kind, "severity": SEVERITY[kind], "id": note_id, "line": line, "message": message, **fields}


def shown_target(target: str) -> str:
    """A stored target as its writer thinks of it: a Markdown link's vault path without the mark."""
    return target[len(PATH_MARK) :] if target.startswith(PATH_MARK) else target


def ranked(resolver: LinkResolver, target: str) -> list[str]:
    """Every note of the tier that decides a stored target, best first."""
    if target.startswith(PATH_MARK):
        return resolver.ranked_path(target[len(PATH_MARK) :])
    return resolver.ranked(target)


# --- where a link is written ---------------------------------------------------------------------------


def link_lines(text: str, note_id: str, extensions: tuple[str, ...], wanted: set[str] | None = None) -> dict[str, int]:
    """stored target → the line of its first occurrence, counted from 1 in the file (a BOM aside),
    frontmatter first; only the `wanted` targets when given (the reading stops once all are found)."""
    from ..notes.simple_yaml import split_frontmatter

    if text.startswith("\ufeff"):
        text = text[1:]
    # Split only, never parsed: a block that YAML refuses still holds its lines.
    block, body = split_frontmatter(text)
    found: dict[str, int] = {}
    line, counted = 1, 0  # the line at offset `counted`: spans come in order, so newlines are counted once

    def spans() -> Iterator[tuple[int, str | None]]:
        if block is not None:
            block_at = text.find("\n") + 1  # the block starts on the line after the first `---`
            for span in frontmatter_spans(block):
                yield block_at + span.start, stored_target(span.link, note_id)
        body_at = len(text) - len(body)
        for span in iter_link_spans(body, extensions):
            yield body_at + span.start, stored_target(span.link, note_id)

    if wanted is not None and not _may_hold_code(body) and (block is None or "[[" not in block):
        found = _written_plainly(text, len(text) - len(body), wanted)
        if len(found) == len(wanted):
            return found
    for at, target in spans():
        if not target or target in found or (wanted is not None and target not in wanted):
            continue
        line += text.count("\n", counted, at)
        counted = at
        found[target] = line
        if wanted is not None and len(found) == len(wanted):
            break
    return found


def _may_hold_code(body: str) -> bool:
    return "`" in body or "~~~" in body or body.startswith(("    ", "\t")) or "\n    " in body or "\n\t" in body


def _written_plainly(text: str, body_at: int, wanted: set[str]) -> dict[str, int]:
    """The lines of the wanted [[link]] targets written in the body exactly as stored (`[[target]]`,
    `[[target|…]]`, `[[target#…]]`), in a body with no code to rule out: a text search, where reading every
    link would cost a note's whole extraction. The targets not written so are left to that extraction. (A
    link written otherwise earlier, `[[ target ]]`, is not seen: the line is the first one written plainly.)"""
    found: dict[str, int] = {}
    for target in wanted:
        if target.startswith(PATH_MARK):
            continue
        at = text.find("[[" + target, body_at)
        while at >= 0:
            after = at + 2 + len(target)
            close = text.find("]]", after)
            inner = text[after:close] if close >= 0 else "\n"
            if after < len(text) and text[after] in "]|#" and "\n" not in inner and "[" not in inner:
                found[target] = text.count("\n", 0, at) + 1
                break
            at = text.find("[[" + target, at + 2)
    return found


# --- link problems -------------------------------------------------------------------------------------


def broken_link(note_id: str, target: str, line: int | None) -> Problem:
    shown = shown_target(target)
    return problem(
        "broken-link",
        note_id,
        f"[[{shown}]] resolves to no note and no file of the vault",
        line,
        target=shown,
    )


def ambiguous_link(note_id: str, target: str, candidates: list[str], line: int | None) -> Problem:
    shown = shown_target(target)
    others = ", ".join(quote(c) for c in candidates[1:])
    return problem(
        "ambiguous-link",
        note_id,
        f"[[{shown}]] matches {len(candidates)} notes alike; it resolves to {quote(candidates[0])}, not {others}",
        line,
        target=shown,
        candidates=candidates,
    )


def _link_problems(
    health: Health, names: BaseNames, resolver: Callable[[int], LinkResolver], files: VaultFiles
) -> list[Problem]:
    """Broken and ambiguous links, each at the line the index holds for it: no note is read. Only the
    targets that two notes' names could answer are resolved again, to see whether their tier ties."""
    problems = [
        broken_link(note_id, target, line)
        for note_id, target, line in _unresolved(health.unresolved(), files.attachments)
    ]
    candidates = health.resolved_targets(names.crowded())
    if not candidates:
        return problems
    lookups = resolver(len(candidates))
    crowded: dict[str, list[str]] = {}
    for target in candidates:
        ranks = ranked(lookups, target)
        if len(ranks) > 1:
            crowded[target] = ranks
    for note_id, target, line in health.linking(sorted(crowded)):
        problems.append(ambiguous_link(note_id, target, crowded[target], line))
    return problems


def _unresolved(
    links: list[tuple[str, str, str, int | None]], attachments: list[str]
) -> Iterator[tuple[str, str, int | None]]:
    """(note, target, line) of the links that resolve to no note and name no attachment either: only a
    target whose last segment is an attachment's name is looked for among them."""
    named = {link_key(path.rsplit("/", 1)[-1]) for path in attachments}
    files: LinkResolver | None = None
    found: dict[str, bool] = {}
    for note_id, target, nkey, line in links:
        if nkey in named:
            if target not in found:
                files = files or attachment_resolver(attachments)
                found[target] = attachment_of(files, target) is not None
            if found[target]:
                continue
        yield note_id, target, line


# --- notes and names -----------------------------------------------------------------------------------


def twin_problems(groups: Iterable[list[str]], prefix: str) -> list[Problem]:
    problems = []
    for group in groups:
        for note_id in group:
            if not note_id.startswith(prefix):
                continue
            others = [other for other in group if other != note_id]
            problems.append(
                problem(
                    "case-twin",
                    note_id,
                    f"differs from {', '.join(quote(o) for o in others)} only in case or Unicode form: links, and the "
                    "case-insensitive file systems of macOS and Windows, cannot tell them apart",
                    others=others,
                )
            )
    return problems


def _alias_problems(
    health: Health, names: BaseNames, resolver: Callable[[int], LinkResolver], prefix: str
) -> list[Problem]:
    """An alias that a link resolves to another note (so reading by that name never reaches this one), or
    that another note also claims."""
    rows = health.aliases()
    claimed: dict[str, list[str]] = {}
    for note_id, key, _ in rows:
        claimed.setdefault(key, []).append(note_id)
    mine = [
        (note_id, _alias_as_written(frontmatter, key), key)
        for note_id, key, frontmatter in rows
        if note_id.startswith(prefix)
    ]
    named = {alias for _, alias, _ in mine if names.naming(alias)}  # only these can be another note's name
    lookups = resolver(len(named)) if named else None
    problems = []
    for note_id, alias, key in mine:
        found = lookups.ranked(alias) if lookups is not None and alias in named else []
        shadowing = [i for i in found if i != note_id]
        sharing = [i for i in dict.fromkeys(claimed[key]) if i != note_id]
        if shadowing:
            message = f"alias {quote(alias)} is also the name of {quote(shadowing[0])}, which [[{alias}]] finds first"
            problems.append(problem("alias-collision", note_id, message, others=shadowing))
        elif sharing:
            others = ", ".join(quote(i) for i in sharing)
            message = f"alias {quote(alias)} is also an alias of {others}"
            problems.append(problem("alias-collision", note_id, message, others=sharing))
    return problems


def _alias_as_written(frontmatter: str, key: str) -> str:
    from ..notes.links import normalise_target

    try:
        value = json.loads(frontmatter).get("aliases")
    except (ValueError, AttributeError):
        return key
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return next((n for n in names if isinstance(n, str) and link_key(normalise_target(n)) == key), key)


def _note_problems(health: Health) -> list[Problem]:
    """Notes the index could not read, and frontmatter that did not parse (why, as the index kept it)."""
    problems = []
    for note_id, why in health.unreadable():
        if "UTF-8" in why:
            problems.append(problem("not-utf8", note_id, f"{why}: it is left out of the index and of search"))
        else:
            problems.append(problem("unreadable", note_id, f"{why}: it is left out of the index and of search"))
    for note_id, why in health.malformed():
        problems.append(problem("malformed-frontmatter", note_id, why, 1))
    return problems


def name_problems(files: VaultFiles, prefix: str) -> list[Problem]:
    """Files and folders whose name is not UTF-8, which no scan lists: each named with the bytes that are
    not UTF-8 escaped (`\\xe9`), never printed raw."""
    problems = []
    for shown in files.not_utf8:
        if not shown.startswith(prefix):
            continue
        what = (
            "a folder whose name is not UTF-8: it and all it holds are"
            if shown.endswith("/")
            else "a file whose name is not UTF-8: it is"
        )
        message = f"{what} left out of the index, search and listings; rename it (bytes shown as \\xNN)"
        problems.append(problem("not-utf8-name", shown, message))
    return problems


def leftover_problems(ids: Iterable[str], files: VaultFiles, prefix: str) -> list[Problem]:
    """Conflict copies that `sync` left to be resolved, and temporaries no running writer owns."""
    from ..atomicfile import parse_temporary, process_alive

    problems = []
    for note_id in ids:
        folder, name = note_id.rpartition("/")[::2]
        original = original_of_copy(name)
        if original is not None and note_id.startswith(prefix):
            of = f"{folder}/{original}" if folder else original
            message = f"a conflict copy of {quote(of)} that sync kept: merge it into the note, then delete it"
            problems.append(problem("conflict-copy", note_id, message, others=[of]))
    for path in files.temporaries:
        found = parse_temporary(path)
        if not path.startswith(prefix) or (found is not None and found.pid is not None and process_alive(found.pid)):
            continue  # a live writer's
        message = "a temporary file a killed writer left; amem removes it when it next writes that note or indexes"
        problems.append(problem("stray-temporary", path, message))
    return problems


def _info_problems(config: Config, health: Health) -> list[Problem]:
    problems = [
        problem("orphan", note_id, "no link leads here and none leads elsewhere") for note_id in health.orphans()
    ]
    limit = config.check_max_note_bytes
    for note_id, size in health.larger_than(limit):
        message = f"{size} bytes, over check.maxNoteBytes ({limit})"
        problems.append(problem("oversized", note_id, message))
    return problems


# --- the report ----------------------------------------------------------------------------------------


def report(problems: list[Problem], notes: int) -> CheckResult:
    """The report: problems in order of note id, line and kind; how many of each kind; notes checked."""
    problems.sort(key=lambda p: (p["id"], p["line"] or 0, p["kind"], p.get("target", "")))
    counts = Counter(p["kind"] for p in problems)
    return cast("CheckResult", {"problems": problems, "counts": dict(sorted(counts.items())), "notes": notes})


def check_vault(config: Config, prefix: str | None = None, *, reporter: Reporter | None = None) -> CheckResult:
    """`amem check [PREFIX]`: every problem of the notes whose id starts with PREFIX (links resolve among
    all the vault's notes and files), from an index brought up to date first."""
    from ..notes.conflicts import CONFLICT_INFIX

    index = VaultIndex(config, reporter)
    try:
        index.refresh(thorough=True)
        health = Health(index, prefix or "")
        name_keys = health.name_keys()
        names = BaseNames(name_keys, config.extensions)
        resolver = _Resolvers(index, health, len(name_keys))
        files = vault_files(config)
        problems = _link_problems(health, names, resolver, files)
        problems += twin_problems(health.case_twins(), prefix or "")
        problems += _alias_problems(health, names, resolver, prefix or "")
        problems += _note_problems(health)
        problems += name_problems(files, prefix or "")
        problems += leftover_problems(health.ids_containing(CONFLICT_INFIX), files, prefix or "")
        problems += _info_problems(config, health)
        notes = health.notes()
    finally:
        index.close()
    return report(problems, notes)


class _Resolvers:
    """The resolver for a number of lookups: the index's queries for a few, every id in memory past a tenth
    of the vault's notes (at 44,000 notes, loading every id costs about what 4,000 lookups by query do)."""

    def __init__(self, index: VaultIndex, health: Health, notes: int) -> None:
        self.index = index
        self.health = health
        self.in_memory_past = max(200, notes // 10)
        self._memory: LinkResolver | None = None

    def __call__(self, lookups: int) -> LinkResolver:
        if self._memory is None and lookups > self.in_memory_past:
            self._memory = LinkResolver(self.health.ids(), self.index.config.extensions)
        return self._memory or self.index.resolver()


def failing(result: CheckResult, strict: bool) -> ProblemsFound | None:
    """The error a check ends with: problems of severity error (strict: or warning) were found; else None."""
    severities = ("error", "warning") if strict else ("error",)
    failed = Counter(p["kind"] for p in result["problems"] if p["severity"] in severities)
    if not failed:
        return None
    total = sum(failed.values())
    kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(failed.items()))
    what = "error or warning" if strict else "error"
    counts = dict(sorted(failed.items()))
    return ProblemsFound(f"check found {total} problem(s) of severity {what} ({kinds})", counts=counts)
