"""The keeper's background embedding: with a semantic model too slow to embed inside searches
(`semantic.model` minilm or a model folder), a thread of the keeper embeds the notes whose vectors are
missing or stale after every change it applies, a few notes per transaction (`amem.semantic.embedding`), so
searches answer at once with what is embedded and the rest follows. Stopping the keeper stops it between
two batches; a killed keeper's successor goes on where it stopped."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config
    from ..report import Reporter


class BackgroundEmbedder:
    """One thread that embeds whenever kicked, until stopped."""

    def __init__(self, config: Config, reporter: Reporter) -> None:
        self.config = config
        self.reporter = reporter
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        #: notes embedded since the start
        self.embedded = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="amem-index-embedder", daemon=True)
        self._thread.start()
        self.kick()

    def kick(self) -> None:
        """The index changed: embed what is new once the batch under way is done."""
        self._wake.set()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._stopping:
                return
            self._wake.clear()
            try:
                if not self._embed():
                    return  # the model does not load: said once, the keeper goes on without it
            except Exception as exc:  # the next change tries again; the keeper keeps running
                self.reporter.warn(f"the index keeper could not embed the notes: {type(exc).__name__}")

    def _embed(self) -> bool:
        from ..index.index import VaultIndex
        from ..semantic import embedding, semantic
        from ..semantic.models import SemanticError, SemanticUnavailable

        try:
            embedder = semantic.load_embedder(self.config.semantic_model)
        except (SemanticUnavailable, SemanticError) as exc:
            self.reporter.warn(f"{exc}; the index keeper embeds no notes")
            return False
        index = VaultIndex(self.config, self.reporter)
        try:
            self.embedded += embedding.embed_pending(index, embedder, self.reporter, stop=lambda: self._stopping)
        finally:
            index.close()
        return True
