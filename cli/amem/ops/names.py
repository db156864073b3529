"""Notes by name: what `read` and `history` accept beside an exact id (a [[link]]'s target, an alias),
and the case twins that writes refuse (two ids one link, or a case-insensitive file system, cannot tell apart).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from ..errors import Conflict
from ..notes.ids import NoteRef, resolve_note
from ..output import quote

if TYPE_CHECKING:
    from ..config import Config
    from ..index.index import VaultIndex
    from ..notes.links import LinkResolver
    from ..results import HistoryResult


def find_by_name(index: VaultIndex, resolver: LinkResolver, name: str) -> tuple[str, list[str]] | None:
    """The note `name` stands for, and the others of the same tier, best first: as `[[name]]` resolves
    (exact path, path suffix, base name), else by a frontmatter `aliases` entry; None when nothing matches."""
    ranked = resolver.ranked(name)
    if not ranked:
        ranked = sorted(index.aliased(name), key=lambda i: (i.count("/"), i))
    if not ranked:
        return None
    return ranked[0], ranked[1:]


def find_current(index: VaultIndex, resolver: LinkResolver | None, name: str) -> tuple[str, list[str]] | None:
    """find_by_name after a quick refresh, as the notes are now. A quick refresh looks at folders, so it
    misses a note rewritten in place once the index has stopped keeping its digest: the notes the name
    leads to are looked at again, and a name that leads nowhere is sought again after a look at every note
    (a cost only a miss pays). `resolver`: one the caller built from a listing while another process's
    build is half done (then the index is not asked again), else None for the index's own."""
    found = find_by_name(index, resolver or index.resolver(), name)
    if resolver is not None:
        return found
    stats = index.update([found[0], *found[1]]) if found else index.refresh(thorough=True, wait=False)
    if stats.added or stats.changed or stats.removed:
        found = find_by_name(index, index.resolver(), name)
    return found


def name_fields(name: str, alternatives: list[str]) -> dict[str, Any]:
    """The fields a result by name adds: the name asked for, and the other notes it could have meant."""
    fields: dict[str, Any] = {"resolvedFrom": name}
    if alternatives:
        fields["alternatives"] = alternatives
    return fields


def history_ref(config: Config, name: str) -> tuple[NoteRef, dict[str, Any]]:
    """The note whose history `amem history NAME` shows: the exact id when a file is there (or nothing
    resolves, for a note deleted since), else the note the name resolves to, with the fields saying so."""
    exact = resolve_note(config, name)  # an id amem refuses is refused, whatever it might resolve to
    if os.path.lexists(exact.path):
        return exact, {}
    from ..index.index import VaultIndex  # here: an exact id costs no index

    index = VaultIndex(config)
    try:
        index.refresh(thorough=False)
        found = find_current(index, None, name)
    finally:
        index.close()
    if found is None:
        return exact, {}
    note_id, alternatives = found
    return resolve_note(config, note_id), name_fields(name, alternatives)


def note_history_by_name(config: Config, name: str, limit: int | None = None) -> HistoryResult:
    """`amem history`: the commits of the note `name` is, by id or by name (`history_ref`)."""
    from ..gitvault.git import note_history

    ref, named = history_ref(config, name)
    result = note_history(config, ref, limit)
    return cast("HistoryResult", {"id": result["id"], **named, "commits": result["commits"]})


def refuse_case_twin(config: Config, ref: NoteRef, action: str, *, besides: str | None = None) -> None:
    """Refuse to create note `ref` when a note whose id differs from it only in case or Unicode form
    exists (`besides`, a move's own source, excepted): a conflict naming it, its message starting with
    `action` ("cannot write note …"). Lists one folder per segment of the id."""
    twin = _case_twin(str(config.vault_root), ref.id, besides)
    if twin is not None:
        raise Conflict(
            f"{action}: note {quote(twin)} exists, and differs from it only in case or Unicode form (links, "
            "and the case-insensitive file systems of macOS and Windows, cannot tell the two apart)",
            existing=twin,
        )


def _case_twin(root: str, note_id: str, besides: str | None) -> str | None:
    from ..notes.links import link_key

    segments = note_id.split("/")
    folders = [""]  # vault-relative folders whose path matches the id's so far, as link keys compare
    for depth, segment in enumerate(segments):
        last = depth == len(segments) - 1
        key = link_key(segment)
        matches: list[str] = []
        for folder in folders:
            matches += [folder + name for name in _entries_like(os.path.join(root, folder), key, last)]
        if not matches:
            return None
        folders = [m + "/" for m in matches]
    twins = [f[:-1] for f in folders if f[:-1] not in (note_id, besides)]
    return min(twins) if twins else None


def _entries_like(folder: str, key: str, files: bool) -> list[str]:
    """The names in `folder` whose link key is `key`: files for a note's name, folders for a segment."""
    from ..notes.links import link_key

    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if link_key(e.name) == key and (e.is_file() if files else e.is_dir())]
    except OSError:
        return []
