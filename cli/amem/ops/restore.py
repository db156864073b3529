"""`amem restore`: roll a note forward to the content it had at a commit, never rewriting history."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import GitError, NotFound
from ..gitvault.git import (
    blob_content,
    commit_file,
    file_mode,
    path_at,
    report_warnings,
    require_repository,
    resolve_commit,
    short_hash,
)
from .names import refuse_case_twin
from .write import save_note

if TYPE_CHECKING:
    from ..config import Config
    from ..notes.ids import NoteRef
    from ..report import Reporter
    from ..results import RestoreResult


def restore_note(
    config: Config, ref: NoteRef, rev: str, base_version: str, commit: bool, *, reporter: Reporter | None = None
) -> RestoreResult:
    """Write the note's content as of `rev` into the working tree (atomic, locked, guarded by
    `base_version`), and commit it when asked or configured; the commit's warnings go to `reporter`.
    Returns {id, hash, version, commit}. History is never rewritten."""
    repo = require_repository(Path(ref.path).parent)
    rel = repo.relpath(ref.path)
    full = resolve_commit(repo, rev)
    if full is None:
        raise NotFound(f'cannot restore note "{ref.id}": unknown revision "{rev}"', revision=rev)
    short = short_hash(repo, full)
    found = path_at(repo, full, rel)
    if found is None:
        raise NotFound(f'cannot restore note "{ref.id}": the note does not exist at {short}', revision=rev)
    old_path, oid = found
    content = blob_content(repo, oid, old_path)
    if not os.path.lexists(ref.path):
        refuse_case_twin(config, ref, f'cannot restore note "{ref.id}"')

    result = save_note(config, ref, lambda _current: content, base_version=base_version, reporter=reporter)

    new_commit: str | None = None
    if commit or config.git_auto_commit:
        try:
            outcome = commit_file(
                repo, rel, content, f"amem: restore {ref.id} to {short}", mode=file_mode(Path(ref.path))
            )
        except GitError as exc:
            raise GitError(
                f'restored note "{ref.id}" to {short} (version {result.version}) but did not commit it: {exc.message}',
                version=result.version,
            ) from None
        new_commit = outcome.hash
        report_warnings(outcome.warnings, reporter)
    return {"id": result.id, "hash": full, "version": result.version, "commit": new_commit}
