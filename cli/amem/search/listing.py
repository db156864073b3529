"""`amem list`: the notes of the vault or of a folder, with their metadata, from the index."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..report import Reporter

if TYPE_CHECKING:
    from datetime import tzinfo

    from ..config import Config
    from ..results import ListedNote, ListResult

#: How each --sort orders notes: by id; most recently modified first; most recently created first
#: (notes without `created` last). Ties go to the id.
SORTS = {
    "id": "id",
    "modified": "mtime_ns DESC, id",
    "created": "created IS NULL, created DESC, id",
}


#: A --since duration: a whole number of minutes, hours, days or weeks.
_DURATION = re.compile(r"([0-9]{1,9})([mhdw])\Z")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_epoch(value: str, tz: tzinfo | None, now: float) -> float:
    """The moment (epoch seconds) a --since value names: a duration back from `now` (`30m`, `12h`, `2d`,
    `1w`), or an ISO date or date/time (without an offset, in `tz`, else the local zone)."""
    from datetime import date, datetime

    from ..errors import UsageError

    text = value.strip()
    duration = _DURATION.match(text)
    if duration:
        return now - int(duration.group(1)) * _UNIT_SECONDS[duration.group(2)]
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise UsageError(
            f"--since {shown!r} is neither a duration (30m, 12h, 2d, 1w) nor an ISO date or time (2026-11-30, "
            "2026-11-30T09:00)"
        ) from None
    try:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=tz) if tz else moment.astimezone()
        return moment.timestamp()
    except (ValueError, OverflowError, OSError):
        return EARLIEST  # a moment at the edge of the calendar (year 1): every note is younger


#: Before any file's mtime: the earliest moment SQLite's nanosecond integers hold.
EARLIEST = -(2**63) / 1e9


def list_notes(
    config: Config,
    prefix: str | None = None,
    *,
    tags: Sequence[str] = (),
    sort: str | None = None,
    limit: int | None = None,
    since: str | None = None,
    reporter: Reporter | None = None,
) -> ListResult:
    """{notes: [{id, title, tags, bytes, mtime, created}], total, truncated}. `prefix` is a folder
    (`notes/`) or any id prefix; `tags` must all hold (see `tags`); `since` keeps the notes modified
    since then (see `since_epoch`), newest first unless `sort` says otherwise; `total` counts them all."""
    import time

    from ..errors import UsageError
    from ..index.index import VaultIndex
    from ..notes.ids import normalise_prefix
    from ..notes.tags import notes_where
    from ..timefmt import from_epoch

    if sort is None:
        sort = "modified" if since is not None else "id"
    if sort not in SORTS:
        raise UsageError(f"--sort must be one of {', '.join(SORTS)}, got {sort!r}")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    start = normalise_prefix(prefix or "")
    where, tag_params = notes_where(start, tags)
    params: list[Any] = list(tag_params)
    if since is not None:
        # clamped to SQLite's integers: a moment past 2262 keeps nothing, one before 1678 everything
        threshold_ns = max(-(2**63), min(2**63 - 1, int(since_epoch(since, config.tz, time.time()) * 1e9)))
        where, params = f"{where} AND mtime_ns >= ?", [*params, threshold_ns]
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
