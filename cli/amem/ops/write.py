"""`amem write`: append to or overwrite a note through the one write path, and commit it when asked.

`save_note` is `update_note` with the index told what amem wrote, so that `read` does not call amem's own
writes external changes: every write the operations make goes through it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import AmemError, UsageError
from ..notes.ids import resolve_note
from ..output import quote
from ..report import Reporter
from ..store.write import UpdateResult, append_text, overwrite_text, update_note
from ..timefmt import iso, now

if TYPE_CHECKING:
    from ..config import Config
    from ..notes.ids import NoteRef
    from ..results import WriteResult


def save_note(
    config: Config,
    ref: NoteRef,
    transform: Callable[[bytes | None], bytes],
    *,
    base_version: str | None = None,
    require_existing: bool = False,
    reporter: Reporter | None = None,
) -> UpdateResult:
    """`update_note`, and the index remembers the version written (under the note's lock). The note is
    written by then: when the index cannot take the record (locked past the wait, its disk full), that is a
    warning, never the write's failure, which would have a caller write the note again."""

    def remember(version: str) -> None:
        from ..index.seen import record_written

        try:
            if not record_written(config, ref.id, version):
                from ..index.index import remember_written  # no index yet, or a damaged one

                remember_written(config, ref.id, version)
        except AmemError as exc:
            (reporter or Reporter()).warn(
                f"{quote(ref.id)} is written, but the index could not record it ({exc.message}): "
                "the next read may call this write a change made by another program"
            )

    return update_note(
        config, ref, transform, base_version=base_version, require_existing=require_existing, on_written=remember
    )


def write_note(
    config: Config,
    raw_id: str,
    content: str,
    *,
    mode: str = "append",
    base_version: str | None = None,
    require_existing: bool = False,
    commit: bool = False,
    reporter: Reporter | None = None,
) -> WriteResult:
    """`amem write`: append (default) or overwrite one note, and commit it when `commit` or
    git.autoCommit asks (its warnings go to `reporter`). Returns {id, mode, bytes, version, created},
    plus `commit` when a commit was made."""
    if mode not in ("append", "overwrite"):
        raise UsageError(f"unknown write mode {mode!r}")
    if mode == "append" and not content.strip():
        raise UsageError("nothing to append: the content is empty")
    ref = resolve_note(config, raw_id)
    if not require_existing and not os.path.lexists(ref.path):
        from .names import refuse_case_twin  # here: only a new note needs its folder listed

        refuse_case_twin(config, ref, f"cannot write note {quote(ref.id)}")
    tz = config.tz

    def transform(old: bytes | None) -> bytes:
        stamp = iso(now(tz))
        old_text = None if old is None else _decode(old, ref.id)
        if mode == "append":
            text = append_text(old_text, content, stamp, tz)
        else:
            text = overwrite_text(old_text, content, stamp, tz, reporter)
        if old_text is not None and "\r\n" in old_text:
            text = re.sub(r"(?<!\r)\n", "\r\n", text)  # keep a CRLF note CRLF
        bom = b"\xef\xbb\xbf" if old is not None and old.startswith(b"\xef\xbb\xbf") else b""
        return bom + text.encode("utf-8")  # and a note that starts with a BOM keeps it

    result = save_note(
        config, ref, transform, base_version=base_version, require_existing=require_existing, reporter=reporter
    )
    data: WriteResult = {
        "id": result.id,
        "mode": mode,
        "bytes": result.bytes,
        "version": result.version,
        "created": result.created,
    }
    if commit or config.git_auto_commit:
        from ..gitvault.git import maybe_commit

        try:
            sha = maybe_commit(config, ref, f"amem: write {result.id}", commit, reporter=reporter)
        except AmemError as exc:
            # The note is written; say so, with its new version, so the caller need not read it again.
            exc.details["written"] = data
            raise
        if sha:
            data["commit"] = sha
    return data


def _decode(data: bytes, note_id: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"cannot write note {quote(note_id)}: the existing file is not UTF-8 text") from None
    return text[1:] if text.startswith("\ufeff") else text
