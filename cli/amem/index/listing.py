"""`amem list`: the notes of the vault or of a folder, with their metadata, from the index."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..report import Reporter

if TYPE_CHECKING:
    from ..config import Config
    from ..shapes import ListedNote, ListResult

#: How each --sort orders notes: by id; most recently modified first; most recently created first
#: (notes without `created` last). Ties go to the id.
SORTS = {
    "id": "id",
    "modified": "mtime_ns DESC, id",
    "created": "created IS NULL, created DESC, id",
}


def list_notes(
    config: Config,
    prefix: str | None = None,
    *,
    tags: Sequence[str] = (),
    sort: str = "id",
    limit: int | None = None,
    reporter: Reporter | None = None,
) -> ListResult:
    """{notes: [{id, title, tags, bytes, mtime, created}], total, truncated}. `prefix` is a folder
    (`notes/`) or any id prefix; `tags` must all hold (see `tags`)."""
    from ..errors import UsageError
    from ..notes.ids import normalise_prefix
    from ..notes.tags import notes_where
    from ..timefmt import from_epoch
    from .index import VaultIndex

    if sort not in SORTS:
        raise UsageError(f"--sort must be one of {', '.join(SORTS)}, got {sort!r}")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    start = normalise_prefix(prefix or "")
    where, params = notes_where(start, tags)
    index = VaultIndex(config, reporter)

    def query() -> ListResult:
        index.refresh(thorough=False)
        conn = index.conn
        total = conn.execute(f"SELECT count(*) FROM notes WHERE {where}", params).fetchone()[0]
        rows = conn.execute(
            f"SELECT id, title, tags, size, mtime_ns, created FROM notes WHERE {where} ORDER BY {SORTS[sort]}"
            + (" LIMIT ?" if limit is not None else ""),
            [*params, limit] if limit is not None else params,
        ).fetchall()
        notes: list[ListedNote] = [
            {
                "id": note_id,
                "title": title,
                "tags": json.loads(tag_list),
                "bytes": size,
                "mtime": from_epoch(mtime_ns / 1e9, config.tz),
                "created": created,
            }
            for note_id, title, tag_list, size, mtime_ns, created in rows
        ]
        return {"notes": notes, "total": total, "truncated": total > len(notes)}

    try:
        return index.repairing(query)
    finally:
        index.close()
