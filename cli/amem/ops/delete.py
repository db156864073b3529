"""Deleting a note, guarded by its version: `delete_note` is what `amem delete` and `wiki_delete` call. The
note's lock, its read and its version check are move's too."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import GitError, InvalidId, NotFound
from ..notes.ids import NoteRef, open_regular, resolve_note
from ..notes.parse import version_of
from ..output import quote
from ..report import Reporter
from ..store.write import check_version, note_lock, version_conflict, write_failure

if TYPE_CHECKING:
    from ..config import Config
    from ..results import DeleteResult


def lock_key(ref: NoteRef) -> str:
    """The file whose lock `update_note` takes for this note: an in-vault symlink's target, else the note."""
    path = str(ref.path)
    return os.path.realpath(path) if os.path.islink(path) else path


def read_existing(ref: NoteRef, verb: str) -> bytes:
    try:
        with open_regular(ref.path) as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"cannot {verb} note {quote(ref.id)}: no such note") from None
    except IsADirectoryError:
        raise InvalidId(f"cannot {verb} note {quote(ref.id)}: it is a folder") from None
    except OSError as exc:
        raise write_failure(ref.id, exc, verb) from None


def check_current(ref: NoteRef, verb: str, base_version: str | None, current: str) -> None:
    if base_version is not None and base_version.lower() != current:
        raise version_conflict(ref.id, verb, base_version, current, exists=True)


# --- delete ---------------------------------------------------------------------------------------------


def delete_note(
    config: Config,
    raw_id: str,
    base_version: str | None = None,
    reporter: Reporter | None = None,
    *,
    commit: bool = False,
) -> DeleteResult:
    """`amem delete`: remove one note, under its write lock, only if it is still at `base_version`.

    Returns {id, version (of the removed content), commit}. With `commit` (or git.autoCommit) the removal,
    and nothing else, is committed. Links to the note become unresolved; nothing else changes."""
    reporter = reporter or Reporter()
    ref = resolve_note(config, raw_id)
    check_version(base_version)
    with note_lock(config, lock_key(ref)):
        data = read_existing(ref, "delete")
        version = version_of(data)
        check_current(ref, "delete", base_version, version)
        try:
            os.unlink(ref.path)
        except FileNotFoundError:
            raise NotFound(f"cannot delete note {quote(ref.id)}: no such note") from None
        except OSError as exc:
            raise write_failure(ref.id, exc, "delete") from None
    sha: str | None = None
    if commit or config.git_auto_commit:
        from ..gitvault.git import commit_notes

        try:
            outcome = commit_notes(config, [(ref.path, None)], f"amem: delete {ref.id}")
        except GitError as exc:
            raise GitError(
                f"deleted note {quote(ref.id)} (version {version}) but did not commit it: {exc.message}",
                deleted={"id": ref.id, "version": version},
            ) from None
        for message in outcome.warnings:
            reporter.warn(message)
        sha = outcome.hash
    return {"id": ref.id, "version": version, "commit": sha}
