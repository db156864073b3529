"""`amem read`: one note with its links, linked notes to a depth, backlinks and change detection."""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..errors import IoError, NotFound
from ..index import kept
from ..index.attached import Attachments
from ..index.index import VaultIndex
from ..notes.conflicts import has_conflict_copy
from ..notes.ids import NoteRef, may_read, open_regular, resolve_note
from ..notes.links import Link, LinkResolver, link_census, stored_target
from ..notes.parse import note_title, parse_note, version_of
from ..output import quote
from ..timefmt import from_epoch

#: At most this many link records a note's `links` lists; past it `linksTruncated` is true and a warning
#: says so (a note of a million links would otherwise print a record for each).
MAX_LINK_RECORDS = 10_000

if TYPE_CHECKING:
    from ..config import Config
    from ..report import Reporter
    from ..results import ReadResult


def _load(ref: NoteRef) -> tuple[bytes, os.stat_result]:
    try:
        with open_regular(ref.path) as handle:
            data = handle.read()
            st = os.fstat(handle.fileno())
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise NotFound(f"cannot read note {quote(ref.id)}: no such note") from None
    except PermissionError as exc:  # the note is there, the file system refuses: the reason, never a host path
        raise IoError(f"cannot read note {quote(ref.id)}: {exc.strerror or 'permission denied'}") from None
    except OSError as exc:  # a symlink loop, an I/O error...
        raise NotFound(f"cannot read note {quote(ref.id)}: {exc.strerror or type(exc).__name__}") from None
    return data, st


def _decode(data: bytes, note_id: str, reporter: Reporter) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        reporter.warn(f"note {quote(note_id)} is not valid UTF-8; undecodable bytes are shown as U+FFFD")
        text = data.decode("utf-8", errors="replace")
    return text


#: How a read resolves a link target: to a note id, or None.
Resolve = Callable[[str], "str | None"]


def _record(
    config: Config, resolve: Resolve, ref: NoteRef, data: bytes, reporter: Reporter, attachments: Attachments
) -> _Node:
    """One note's record (its `linkedNotes` still empty) and the distinct notes its links resolve to; a link
    that names no note but a file of the vault says which (`attachment`), as Obsidian resolves embeds."""
    note = parse_note(_decode(data, ref.id, reporter), ref.id)
    for message in note.warnings:
        reporter.warn(message)
    census = link_census(note.frontmatter_text, note.body, config.extensions, MAX_LINK_RECORDS)
    # Each distinct link is resolved once: a note may name one note a million times.
    meaning: dict[Link, str | None] = {}
    files: dict[Link, str] = {}
    for link in census.distinct:
        target = stored_target(link, ref.id)
        meaning[link] = resolve(target) if target else None
        if target and meaning[link] is None and (found := attachments(target)) is not None:
            files[link] = found
    if census.total > MAX_LINK_RECORDS:
        reporter.warn(
            f"note {quote(ref.id)} holds {census.total} links; `links` lists the first {MAX_LINK_RECORDS} "
            "(linksTruncated), linkedNotes follows every one"
        )
    record: dict[str, Any] = {
        "id": ref.id,
        "title": note_title(note.frontmatter, note.body, ref.id),
        "frontmatter": note.frontmatter,
        "body": note.body,
        "links": [_link_record(link, meaning[link], files.get(link)) for link in census.listed],
        "linksTruncated": census.total > MAX_LINK_RECORDS,
        "version": version_of(data),
        "linkedNotes": [],
    }
    return _Node(record, list(dict.fromkeys(t for t in meaning.values() if t is not None)))


def _link_record(link: Link, resolved: str | None, attachment: str | None) -> dict[str, object]:
    record = link.to_json(resolved)
    if attachment is not None:
        record["attachment"] = attachment
    return record


class _Node:
    """A note's record and the notes its links resolve to (a plain class: a NamedTuple costs each read its
    definition)."""

    __slots__ = ("record", "targets")

    def __init__(self, record: dict[str, Any], targets: list[str]) -> None:
        self.record = record
        self.targets = targets


def _tree(
    config: Config, resolve: Resolve, ref: NoteRef, data: bytes, depth: int, reporter: Reporter, index: VaultIndex
) -> list[dict[str, Any]]:
    """The note's record with its linked notes to `depth`, followed breadth-first so that each note sits
    where it is nearest (cycles and notes already shown stop); every record, nearest first."""
    vault = config.vault_dir
    real_root = os.path.realpath(vault)
    attachments = Attachments(config, index.conn)
    root = _record(config, resolve, ref, data, reporter, attachments)
    order = [root.record]
    visited = {ref.id}
    queue = deque([(root, depth)])
    while queue:
        node, left = queue.popleft()
        if left <= 0:
            continue
        for target in node.targets:
            if target in visited:
                continue
            visited.add(target)
            linked = NoteRef(target, os.path.join(vault, *target.split("/")))
            if not may_read(linked.path, real_root):
                continue  # it leads outside the vault (or nowhere) since the index saw it
            try:
                linked_data, _ = _load(linked)
            except (NotFound, IoError):
                continue  # vanished or became unreadable since the index saw it
            child = _record(config, resolve, linked, linked_data, reporter, attachments)
            node.record["linkedNotes"].append(child.record)
            order.append(child.record)
            queue.append((child, left - 1))
    return order


def read_note(
    config: Config,
    raw_id: str,
    depth: int | None = None,
    *,
    max_chars: int | None = None,
    lines: str | None = None,
    section: str | None = None,
    reporter: Reporter | None = None,
    mark_seen: bool = True,
) -> ReadResult:
    """The note as `amem read` prints it; what it had to repair (bytes that are not UTF-8, frontmatter
    that is not YAML) goes to `reporter`. `raw_id` is an id, else a name as a [[link]] or an alias gives
    it; `max_chars` bounds the characters of all bodies. With `lines` ('A-B') or `section` (a heading),
    `body` is that part of the note (`ops.part`), `lines` says where it lies, and linked notes are
    followed only to an explicit `depth`; the rest (links, backlinks, version) is the whole note's.
    Raises UsageError, InvalidId or NotFound. Without `mark_seen`, the version read is not recorded as
    seen (the keeper records it once its client has the answer: `VaultIndex.mark_seen(result["id"],
    result["version"])`)."""
    from ..report import Reporter

    reporter = reporter or Reporter()
    part = None
    if lines is not None or section is not None:
        from .part import asked_part

        part = asked_part(lines, section)  # a malformed request fails before the note is looked for
    ref = resolve_note(config, raw_id)
    try:
        loaded: tuple[bytes, os.stat_result] | None = _load(ref)
        missing: NotFound | None = None
    except NotFound as exc:
        loaded, missing = None, exc
    named: dict[str, Any] = {}
    index = kept.take_index(config)
    try:
        resolve, resolver, incomplete, current = _how_links_resolve(index, reporter)
        if loaded is None:
            ref, named = _by_name(config, index, resolver, raw_id, missing)
            loaded = _load(ref)
        data, st = loaded
        if depth is None:
            depth = config.max_link_depth if part is None else 0
        order = _tree(config, resolve, ref, data, depth, reporter, index)
        where = None if part is None else part.take(order[0], data)
        last = index.last_seen(ref.id)
        if mark_seen and last != order[0]["version"]:  # a read of what was seen already writes nothing
            index.mark_seen(ref.id, order[0]["version"])
        backlinks = index.backlinks(ref.id)
        # A sync that met two different overwrites left the other machine's version beside the note: the
        # index knows when this read brought it up to date (not while another process refreshes it) and
        # holds the note.
        conflict = index.has_conflict_copy(ref.id) if current else None
    finally:
        kept.give_back(index)
    bounds: dict[str, Any] = {}
    if max_chars is not None:
        from .budget import fit_bodies  # here: only a bounded read pays for it

        bounds = fit_bodies(order, max_chars)
    record = order[0]
    if where is not None:
        from .part import held

        bounds["lines"] = held(record, where)
    # The keys of ReadResult, with the optional ones a name (resolvedFrom, alternatives) and a budget add.
    result: dict[str, Any] = {
        "id": record["id"],
        **named,
        "title": record["title"],
        "frontmatter": record["frontmatter"],
        "body": record["body"],
        "links": record["links"],
        "linksTruncated": record["linksTruncated"],
        "linkedNotes": record["linkedNotes"],
        "backlinks": backlinks,
        "version": record["version"],
        "mtime": from_epoch(st.st_mtime, config.tz),
        "modifiedExternally": last is not None and last != record["version"],
        "conflict": has_conflict_copy(ref.path) if conflict is None else conflict,
        **bounds,
    }
    if incomplete:
        result["incomplete"] = ["backlinks"]
    return cast("ReadResult", result)


def _by_name(
    config: Config, index: VaultIndex, resolver: LinkResolver | None, name: str, missing: NotFound | None
) -> tuple[NoteRef, dict[str, Any]]:
    """The note `name` resolves to, with `resolvedFrom` (and `alternatives`); else the not-found error."""
    from .names import find_current, name_fields

    found = find_current(index, resolver, name)
    if found is None:
        assert missing is not None
        raise missing
    note_id, alternatives = found
    return resolve_note(config, note_id), name_fields(name, alternatives)


def _how_links_resolve(index: VaultIndex, reporter: Reporter) -> tuple[Resolve, LinkResolver | None, bool, bool]:
    """Refresh the index (never waiting for another process's refresh) and say how links resolve: by the
    index (its LinkResolver left to the caller to make, None: a read by id needs none), or, while another
    process's build has left it half done, by the ids of a listing of the vault, with the LinkResolver's
    rules; True then, for the backlinks only the finished index can know. Last, whether this refresh ran
    (the index is current), rather than finding another process's under way."""
    stats = index.refresh(thorough=False)
    if not stats.busy or index.complete():
        return index.resolve, None, False, not stats.busy
    from ..index.scan import scan_vault
    from ..notes.links import resolve_stored

    reporter.warn(
        "another amem process is building the vault's index: links were resolved from the vault's files, "
        "and backlinks lists only the notes indexed so far (incomplete)"
    )
    resolver = LinkResolver(scan_vault(index.config).files, index.config.extensions)
    return functools.partial(resolve_stored, resolver), resolver, True, False
