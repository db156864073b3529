"""Embedding that never blocks a search: the vectors of a slow model (minilm, a user's model folder) are
made outside searches, by the vault's index keeper in the background and by `amem index` in the
foreground, a few notes per transaction, so that an interrupted run (even SIGKILL) keeps what it finished
and the next one goes on from there. A search then ranks whatever is embedded and says how much that is
(`semanticCoverage`); it embeds only its query.

The static models are fast enough that a search still brings their vectors up to date itself
(`semantic.for_search`): a vault of 10,000 notes takes seconds, and a search then always answers on
every note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config
    from ..index.index import VaultIndex
    from ..report import Reporter
    from .semantic import Embedder

#: Notes embedded per transaction by a slow model: about a second of work each on a loaded machine, so
#: that a killed run loses little and the keeper's writes hold the database only briefly.
BATCH_NOTES = 8


def background(config: Config) -> bool:
    """True when the configured model is embedded in the background rather than inside searches."""
    return config.semantic_model != "static"


def embed_pending(
    index: VaultIndex,
    embedder: Embedder,
    reporter: Reporter,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Embed every note of the (refreshed) index whose vectors are missing or stale and drop those of
    notes gone, BATCH_NOTES per transaction, until done or `stop()`; the notes embedded."""
    from . import semantic
    from .vectors import index_changes

    conn = index.conn
    semantic._prepare(conn, embedder)
    stale, gone = index_changes(conn, embedder.name)
    read = semantic.note_reader(index.config, conn)
    return semantic.sync_changes(conn, embedder, stale, gone, read, reporter, BATCH_NOTES, stop)


def index_now(index: VaultIndex, reporter: Reporter) -> int | None:
    """`amem index`'s embedding, with progress on a terminal: the notes embedded, or None when the model
    does not load (a warning says why; the index itself is up to date all the same)."""
    from .models import SemanticError, SemanticUnavailable
    from .semantic import load_embedder

    try:
        embedder = load_embedder(index.config.semantic_model)
    except (SemanticUnavailable, SemanticError) as exc:
        reporter.warn(f"{exc}; the notes are not embedded")
        return None
    return embed_pending(index, embedder, reporter)
