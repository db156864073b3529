"""Offline semantic ranking, fused with the keyword ranking by reciprocal-rank fusion.

The model is a static embedding model shipped inside an installed package (the `semantic` extra), so
nothing is ever downloaded. Each note is cut into chunks (by heading, long sections by paragraph), every
chunk is embedded, and the vectors live in the index database in a table of their own, one row per note
keyed by note id and version: a note whose version changed is embedded again, a note gone loses its row,
and since embedding is a pure function of the note's text the table always equals a fresh rebuild. A note
scores by its best chunk (cosine similarity with the query); the semantic ranking is then fused with the
keyword ranking by weighted reciprocal-rank fusion: a note's fused score is the sum over the two rankings
of weight / (k + rank), the semantic weight chosen per query from the query's own evidence (`fusion`).

Nothing here is imported unless a search asks for semantic ranking, and numpy and the model only once a
model is loaded.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from array import array
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .models import SemanticError, SemanticUnavailable
from .vectors import coverage, fingerprint_stands, index_changes, index_fingerprint

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ..config import Config
    from ..index.index import VaultIndex
    from ..report import Reporter

#: The constant fusion that the per-query one (`fusion`) replaced, kept as the reference the bench measures
#: it against (tests/bench/relevance.py `rrf:` rankers): a hit at rank r of a ranking adds weight / (RRF_K +
#: r). The textbook k = 60 pushes exact title and heading matches down (Chinese headings MRR 0.88 → 0.85);
#: k = 5 with the semantic ranking at 0.2 was the one constant setting that cost no set, and gained little.
RRF_K = 5
KEYWORD_WEIGHT = 1.0
SEMANTIC_WEIGHT = 0.2
#: How deep each ranking goes before fusion: a note below this rank in both contributes nothing.
FUSION_DEPTH = 50
#: A section longer than this many characters is cut into paragraphs, joined up to this size.
CHUNK_CHARS = 1000
#: At most this many chunks per note: the rest of a very long note is not embedded.
MAX_CHUNKS = 64
#: A paragraph is cut to this many characters before it is embedded. A model reads a text's first few
#: hundred tokens (minilm 128), never this far, but its tokenizer makes every token of the text it is
#: given first: a note of one 200 MB paragraph took 24 GB to embed.
PIECE_CHARS = 64 * CHUNK_CHARS
#: Notes embedded and written per transaction: an interrupted sync keeps what it finished.
BATCH_NOTES = 256
#: The extra's package: when it cannot be found, semantic search is unavailable.
EXTRA_PACKAGE = "wordllama"

SCHEMA = """
CREATE TABLE IF NOT EXISTS semantic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS semantic_vectors (
    model TEXT NOT NULL,    -- the embedder's name: vectors of two models never mix
    id TEXT NOT NULL,       -- note id
    stamp TEXT NOT NULL,    -- what the index knew of the file when it was embedded: skip reading it while equal
    version TEXT NOT NULL,  -- SHA-1 of the note's bytes: embed again only when it changes
    vectors BLOB NOT NULL,  -- float16 unit vectors, one per chunk, row-major
    PRIMARY KEY (model, id)
);
"""

#: Markup that carries no meaning for the model: HTML tags, heading anchors, link targets, bare URLs, and
#: Markdown's emphasis, code, heading, quote and table marks.
_MARKUP = (
    (re.compile(r"<[^>\n]+>"), " "),
    (re.compile(r"\{#[^}]*\}"), " "),
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"https?://\S+"), " "),
    (re.compile(r"[`*_#>|]+"), " "),
)


class Embedder(Protocol):
    """A loaded model: unit vectors for texts, and a name that changes whenever the vectors would.
    `inline`: fast enough to embed a whole vault inside a search (the static model); the others'
    vectors are made in the background (see `amem.semantic.embedding`)."""

    name: str
    inline: bool

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


class NoteText(NamedTuple):
    version: str
    title: str
    body: str


def installed() -> bool:
    """True when the extra's package can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec(EXTRA_PACKAGE) is not None


# --- models ----------------------------------------------------------------------------------------------


class _WordLlama:
    """wordllama's bundled model (256 dimensions): its token embedding matrix and tokenizer, read straight
    from the installed package's files. wordllama's own loader looks for the tokenizer in another folder and
    then tries the network, imports more than it needs, and pads every batch to its longest text; reading
    the same two files gives the same vectors (the mean of the text's token vectors) with less time and
    memory, and never a download. Both files' SHA-256 must equal `models.WORDLLAMA_FILES` before either is
    loaded."""

    inline = True
    WEIGHTS = "weights/l2_supercat_256.safetensors"
    TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
    #: Token vectors gathered at once while embedding: bounds the memory of a batch (4 bytes × 256 each).
    BATCH_TOKENS = 16_384
    #: From this many texts in one call, a float32 copy of the matrix is made for the call: summing float32
    #: is several times faster, and the copy (32 MB) lives only while a large batch is embedded.
    BULK_TEXTS = 64
    #: Distinct words whose token ids are remembered (about 100 bytes each).
    CACHED_WORDS = 200_000

    def __init__(self) -> None:
        import os

        from safetensors.numpy import load
        from tokenizers import Tokenizer

        from .models import WORDLLAMA_FILES, package_folder, verified

        folder = package_folder(EXTRA_PACKAGE, "semantic", "semantic search")
        weights, tokenizer = (
            verified(os.path.join(folder, *name.split("/")), name, WORDLLAMA_FILES[name])
            for name in (self.WEIGHTS, self.TOKENIZER)
        )
        self.matrix: NDArray[np.float16] = load(weights)["embedding.weight"]
        del weights
        self.tokenizer = Tokenizer.from_str(tokenizer.decode("utf-8"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.words: dict[str, list[int]] = {}
        self.name = f"wordllama-l2_supercat-{self.matrix.shape[1]}-{self.matrix.shape[0]}"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        ids = self._tokens(texts)
        out = np.zeros((len(ids), self.matrix.shape[1]), dtype=np.float32)
        matrix = self.matrix.astype(np.float32) if len(ids) >= self.BULK_TEXTS else self.matrix
        start = 0
        while start < len(ids):
            end, tokens = start, 0
            while end < len(ids) and (end == start or tokens + len(ids[end]) <= self.BATCH_TOKENS):
                tokens += len(ids[end])
                end += 1
            self._pool(matrix, ids[start:end], out[start:end])
            start = end
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.where(norms == 0, 1, norms)
        return out

    def _tokens(self, texts: Sequence[str]) -> list[array[int]]:
        """Each text's token ids, word by word: the tokenizer treats a space as the start of the next word's
        first token, so tokenizing each whitespace-separated word alone gives the same ids as the whole
        text, and a word seen before costs a dictionary lookup instead of tokenizing it again."""
        split = [text.split() for text in texts]
        cache = self.words
        missing = [word for word in dict.fromkeys(w for words in split for w in words) if word not in cache]
        if missing:
            if len(cache) + len(missing) > self.CACHED_WORDS:
                cache.clear()
            encodings = self.tokenizer.encode_batch(missing, add_special_tokens=False)
            for word, encoding in zip(missing, encodings, strict=True):
                cache[word] = encoding.ids
        out: list[array[int]] = []
        for words in split:
            ids = array("l")
            for word in words:
                ids.extend(cache[word])
            out.append(ids)
        return out

    def _pool(self, matrix: NDArray[np.floating[Any]], ids: list[array[int]], out: NDArray[np.float32]) -> None:
        """Mean of each text's token vectors (rows of `matrix`) into `out`; a text with no tokens stays zero."""
        import numpy as np

        lengths = [len(i) for i in ids]
        flat = np.frombuffer(b"".join(i.tobytes() for i in ids), dtype=np.dtype("l"))
        if not len(flat):
            return
        flat = flat.copy()  # writable, for the clip
        np.clip(flat, 0, matrix.shape[0] - 1, out=flat)
        vectors = np.take(matrix, flat, axis=0).astype(np.float32, copy=False)  # take beats fancy indexing
        at = 0
        for row, length in enumerate(lengths):
            if length:
                out[row] = vectors[at : at + length].sum(axis=0) / length
            at += length


def _minilm() -> Embedder:
    from .models import minilm

    return minilm()


MODELS: dict[str, Callable[[], Embedder]] = {"wordllama": _WordLlama, "minilm": _minilm}
DEFAULT_MODEL = "wordllama"
#: The models fast enough to embed inside a search (their `inline`), known without loading them.
INLINE_MODELS = frozenset({"wordllama"})
#: `semantic.model: static` (the default) is wordllama's model.
ALIASES = {"static": DEFAULT_MODEL}
_loaded: dict[str, Embedder] = {}
_loading = threading.Lock()


def load_embedder(model: str = DEFAULT_MODEL) -> Embedder:
    """The model (`semantic.model`: a name of MODELS or ALIASES, or the path of a model folder), loaded
    once per process. SemanticUnavailable when its extra is not installed, SemanticError when it is but
    does not load."""
    model = ALIASES.get(model, model)
    if model in _loaded:
        return _loaded[model]
    with _loading:  # the keeper's threads (ranking, embedding) load it once between them
        if model not in _loaded:
            _loaded[model] = _load(model)
        return _loaded[model]


def _load(model: str) -> Embedder:
    if model == DEFAULT_MODEL and not installed():
        raise SemanticUnavailable("semantic search needs the semantic extra: pip install 'amem[semantic]'")
    try:
        if model in MODELS:
            embedder = MODELS[model]()
        else:
            from .models import folder

            embedder = folder(model)
        embedder.embed(["probe"])  # a broken install fails here, not halfway through a sync
    except (SemanticUnavailable, SemanticError):
        raise
    except ImportError as exc:
        missing = exc.name or "a module"  # the name only: the message itself may hold a host path
        raise SemanticError(f"the semantic model cannot be imported ({missing} is missing or broken)") from None
    except Exception as exc:  # the model's own loading errors are of many kinds
        raise SemanticError(f"the semantic model cannot be loaded ({type(exc).__name__})") from None
    return embedder


# --- chunking --------------------------------------------------------------------------------------------


def chunks(title: str, body: str) -> list[str]:
    """The texts a note is embedded as: one per heading section (the heading and its prose, code and HTML
    blocks left out), a section longer than CHUNK_CHARS cut at blank lines into pieces of about that size,
    each piece led by the note's title, markup removed. A note with no prose is its title alone."""
    from ..notes.blocks import HEADING, blocks, body_lines, code_lines

    found = blocks(body)
    code = code_lines(found)
    heads = {block.first for block in found if block.kind == HEADING and not block.nested}
    sections: list[list[str]] = [[]]
    for number, line in enumerate(body_lines(body)):
        if number in heads:
            sections.append([])
        if number not in code:
            sections[-1].append(line)
    title = plain(title)
    out: list[str] = []
    for at, section in enumerate(sections):
        for piece in _pieces(section, at > 0):
            out.append(f"{title}\n{plain(piece)}" if title else plain(piece))
            if len(out) == MAX_CHUNKS:
                return out
    return out or [title]


def plain(text: str) -> str:
    """`text` without the markup listed in _MARKUP."""
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    return text


def _pieces(lines: list[str], headed: bool) -> Iterable[str]:
    """A section's pieces; each after the first starts with the section's heading line, when `headed`."""
    text = "\n".join(lines).strip()
    if len(text) <= CHUNK_CHARS:
        if text:
            yield text
        return
    heading = lines[0].strip() if headed else ""
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()[:PIECE_CHARS]
        if current and len(current) + len(paragraph) > CHUNK_CHARS:
            yield current
            current = heading + "\n" if heading and not paragraph.startswith("#") else ""
        current = f"{current}\n{paragraph}" if current else paragraph
    if current.strip():
        yield current


# --- storage ---------------------------------------------------------------------------------------------


def _prepare(conn: sqlite3.Connection, embedder: Embedder) -> None:
    """Create the tables (a table of before vectors were keyed by model is dropped: it is a cache); a
    change of model drops the other models' vectors, and the files the model was loaded from are recorded
    (`model-files`, their SHA-256 by name)."""
    columns = [row[1] for row in conn.execute("PRAGMA table_info(semantic_vectors)")]
    if columns and "model" not in columns:
        conn.execute("DROP TABLE semantic_vectors")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    row = conn.execute("SELECT value FROM semantic_meta WHERE key = 'model'").fetchone()
    if row is None or row[0] != embedder.name:
        import json

        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM semantic_vectors WHERE model != ?", (embedder.name,))
            conn.execute("DELETE FROM semantic_meta WHERE key = 'synced'")
            conn.execute("INSERT OR REPLACE INTO semantic_meta VALUES ('model', ?)", (embedder.name,))
            files = json.dumps(getattr(embedder, "files", {}), sort_keys=True)
            conn.execute("INSERT OR REPLACE INTO semantic_meta VALUES ('model-files', ?)", (files,))
            _new_generation(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def sync(
    conn: sqlite3.Connection,
    embedder: Embedder,
    notes: Iterable[tuple[str, str]],
    read: Callable[[str], NoteText | None],
    reporter: Reporter,
) -> int:
    """Bring the vectors up to date with `notes`, (id, stamp) pairs for every note of the index, where the
    stamp changes whenever the file may have (mtime, size). A note with a new stamp is read; it is embedded
    again only when its version changed. Rows of notes no longer listed go. Returns how many notes were
    embedded. `read(id)` gives the note's text, or None when it cannot be read (its row is then dropped)."""
    _prepare(conn, embedder)
    current = dict(notes)
    stored = dict(conn.execute("SELECT id, stamp FROM semantic_vectors WHERE model = ?", (embedder.name,)).fetchall())
    gone = [note_id for note_id in stored if note_id not in current]
    stale = [(note_id, stamp) for note_id, stamp in current.items() if stored.get(note_id) != stamp]
    return sync_changes(conn, embedder, stale, gone, read, reporter)


def sync_changes(
    conn: sqlite3.Connection,
    embedder: Embedder,
    stale: Sequence[tuple[str, str]],
    gone: Sequence[str],
    read: Callable[[str], NoteText | None],
    reporter: Reporter,
    batch_notes: int = BATCH_NOTES,
    stop: Callable[[], bool] | None = None,
) -> int:
    """`sync` given what changed: `stale`, the (id, new stamp) of notes whose stored stamp differs or that
    have no row, and `gone`, ids whose rows go. The tables must exist (`_prepare`). Each `batch_notes`
    notes are written in a transaction of their own, so an interrupted sync keeps what it finished;
    `stop()` true between two batches ends it there."""
    import numpy as np

    from ..index.sql import select_in

    model = embedder.name
    if gone:
        _write(conn, model, [], [], list(gone))
    if not stale:
        return 0
    current = dict(stale)
    changed = list(current)
    sql = "SELECT id, version, model FROM semantic_vectors WHERE id IN ({})"
    stored = {row[0]: row[1] for row in select_in(conn, sql, changed) if row[2] == model}
    embedded = 0
    progress = reporter.progress("embedding", len(changed)) if len(changed) > batch_notes else None
    for start in range(0, len(changed), batch_notes):
        if stop is not None and stop():
            break
        batch = changed[start : start + batch_notes]
        restamped: list[tuple[str, str]] = []
        fresh: list[tuple[str, str, str, list[str]]] = []
        dropped: list[str] = []
        for note_id in batch:
            text = read(note_id)
            if text is None:
                dropped.append(note_id)
            elif stored.get(note_id) == text.version:
                restamped.append((current[note_id], note_id))
            else:
                fresh.append((note_id, current[note_id], text.version, chunks(text.title, text.body)))
        rows: list[tuple[str, str, str, bytes]] = []
        if fresh:
            vectors = embedder.embed([piece for *_, pieces in fresh for piece in pieces]).astype(np.float16)
            at = 0
            for note_id, stamp, version, pieces in fresh:
                rows.append((note_id, stamp, version, vectors[at : at + len(pieces)].tobytes()))
                at += len(pieces)
        _write(conn, model, rows, restamped, dropped)
        embedded += len(fresh)
        if progress is not None:
            progress.step(len(batch))
    if progress is not None:
        progress.done()
    return embedded


def _new_generation(conn: sqlite3.Connection) -> None:
    """Mark the vectors as changed: a random token, so that even a rebuilt database never repeats one."""
    import os

    conn.execute("INSERT OR REPLACE INTO semantic_meta VALUES ('generation', ?)", (os.urandom(8).hex(),))


def _write(
    conn: sqlite3.Connection,
    model: str,
    rows: list[tuple[str, str, str, bytes]],
    restamped: list[tuple[str, str]],
    dropped: list[str],
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT OR REPLACE INTO semantic_vectors VALUES (?, ?, ?, ?, ?)", [(model, *r) for r in rows])
        conn.executemany(
            "UPDATE semantic_vectors SET stamp = ? WHERE model = ? AND id = ?", [(t, model, i) for t, i in restamped]
        )
        conn.executemany("DELETE FROM semantic_vectors WHERE model = ? AND id = ?", [(model, i) for i in dropped])
        _new_generation(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# --- ranking ---------------------------------------------------------------------------------------------


def rank(
    conn: sqlite3.Connection,
    embedder: Embedder,
    query: str,
    depth: int = FUSION_DEPTH,
    among: Collection[str] | None = None,
) -> list[tuple[str, float]]:
    """The `depth` notes most similar to `query` (only those in `among`, when given), (id, best chunk's
    cosine similarity), best first, ties by id. Reads the vectors in batches, so memory grows with the
    number of notes, not of vectors."""
    import numpy as np

    probe = embedder.embed([query])[0].astype(np.float16)
    ids, similarities = _scores(conn, probe, embedder.name)
    if among is not None:
        keep = [i for i, note_id in enumerate(ids) if note_id in among]
        ids, similarities = [ids[i] for i in keep], similarities[keep]
    if not ids:
        return []
    every = np.round(similarities.astype(np.float64), 6)
    if len(ids) <= depth:
        order = sorted(range(len(ids)), key=lambda i: (-every[i], ids[i]))
        return [(ids[i], float(every[i])) for i in order]
    edge = np.partition(-every, depth - 1)[depth - 1]  # the depth-th best score, negated
    above = np.flatnonzero(-every < edge)
    tied = sorted(ids[i] for i in np.flatnonzero(-every == edge))[: depth - len(above)]
    best = sorted((-float(every[i]), ids[i]) for i in above) + [(float(edge), note_id) for note_id in tied]
    return [(note_id, -negative) for negative, note_id in best]


#: Set by a long-lived process (`amem mcp`, an index keeper): the vectors then stay in memory between
#: searches, read again only when they changed. A one-shot command streams them instead, so that its
#: memory stays small.
KEEP_VECTORS = False
_VECTORS = "SELECT id, vectors FROM semantic_vectors WHERE model = ? AND length(vectors) > 0"
_kept: dict[str, tuple[str, list[str], NDArray[np.float32], NDArray[np.int64]]] = {}


def _scores(conn: sqlite3.Connection, probe: NDArray[np.float16], model: str) -> tuple[list[str], NDArray[np.float32]]:
    """Every note with vectors and its best chunk's similarity to `probe`: the float16 vectors multiplied in
    float32 (numpy multiplies float16 without BLAS, ten times slower), the same way whether they are kept
    in memory or streamed, so that both give the same similarities."""
    import numpy as np

    dim = probe.shape[0]
    query = probe.astype(np.float32)
    if KEEP_VECTORS:
        database = conn.execute("PRAGMA database_list").fetchone()[2]
        row = conn.execute("SELECT value FROM semantic_meta WHERE key = 'generation'").fetchone()
        generation = row[0] if row else ""
        kept = _kept.get(database)
        generation = f"{model}:{generation}"
        if kept is None or kept[0] != generation:
            rows = conn.execute(_VECTORS, (model,)).fetchall()
            counts = np.fromiter((len(r[1]) for r in rows), dtype=np.int64, count=len(rows)) // (2 * dim)
            # kept as float32: BLAS multiplies it, about ten times float16's speed
            wide = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float16).reshape(-1, dim).astype(np.float32)
            kept = (generation, [r[0] for r in rows], wide, np.concatenate(([0], np.cumsum(counts)[:-1])))
            _kept.clear()
            _kept[database] = kept
        _, kept_ids, kept_matrix, starts = kept
        if not kept_ids:
            return [], np.zeros(0, dtype=np.float32)
        return kept_ids, np.maximum.reduceat(kept_matrix @ query, starts)
    ids: list[str] = []
    scores: list[NDArray[np.float32]] = [np.zeros(0, dtype=np.float32)]
    cursor = conn.execute(_VECTORS, (model,))
    while batch := cursor.fetchmany(4096):
        blobs = [row[1] for row in batch]
        counts = np.fromiter((len(blob) for blob in blobs), dtype=np.int64, count=len(blobs)) // (2 * dim)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(-1, dim).astype(np.float32)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        scores.append(np.maximum.reduceat(matrix @ query, starts))
        ids.extend(row[0] for row in batch)
    return ids, np.concatenate(scores)


def fuse(
    rankings: Sequence[Sequence[str]], weights: Sequence[float] | None = None, k: int = RRF_K
) -> list[tuple[str, float]]:
    """Weighted reciprocal-rank fusion: an id scores the sum, over the rankings it is in, of the ranking's
    weight / (k + rank) (rank 1 is the best), best first, ties by id. Weights default to 1."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights or [1.0] * len(rankings), strict=True):
        for position, note_id in enumerate(ranking, start=1):
            scores[note_id] = scores.get(note_id, 0.0) + weight / (k + position)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def is_loaded(model: str) -> bool:
    """Whether this process has loaded `model` already (a search then ranks here, asking no keeper)."""
    return model in _loaded


def ready_embedder(index: VaultIndex, model: str, reporter: Reporter) -> tuple[Embedder, float | None]:
    """`model` loaded (once per process) with the vectors of the refreshed index brought up to date: the
    embedder, and the share of the notes its vectors cover when it embeds in the background (None when
    it embeds inline, so every note is covered). SemanticUnavailable or SemanticError when it cannot."""
    embedder = load_embedder(model)
    conn = index.conn
    _prepare(conn, embedder)
    if not embedder.inline:
        return embedder, coverage(conn, embedder.name)
    fingerprint = index_fingerprint(conn)
    synced = conn.execute("SELECT value FROM semantic_meta WHERE key = 'synced'").fetchone()
    if fingerprint is None or synced is None or synced[0] != fingerprint:
        stale, gone = index_changes(conn, embedder.name)
        sync_changes(conn, embedder, stale, gone, note_reader(index.config, conn), reporter)
        if fingerprint is not None:
            conn.execute("INSERT OR REPLACE INTO semantic_meta VALUES ('synced', ?)", (fingerprint,))
            fingerprint_stands(conn, fingerprint)
    return embedder, None


def index_stamps(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    rows = conn.execute("SELECT id, mtime_ns, size, digest FROM notes WHERE problem IS NULL").fetchall()
    return [(note_id, f"{mtime}:{size}:{digest or ''}") for note_id, mtime, size, digest in rows]


def note_reader(config: Config, conn: sqlite3.Connection) -> Callable[[str], NoteText | None]:
    """Reads a note for `sync`: its version from its bytes, its title from the index, its body after the
    frontmatter block (not parsed: the model needs only the prose)."""
    import os

    from ..notes.ids import open_regular
    from ..notes.parse import version_of

    def read(note_id: str) -> NoteText | None:
        try:
            with open_regular(os.path.join(config.vault_root, note_id)) as handle:
                data = handle.read()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None  # gone or unreadable since the refresh: no vectors until it reads again
        row = conn.execute("SELECT title FROM notes WHERE id = ?", (note_id,)).fetchone()
        return NoteText(version_of(data), row[0] if row else "", _body(text))

    return read


_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(?:.*?\n)??---[ \t]*\r?(?:\n|\Z)", re.S)


def _body(text: str) -> str:
    match = _FRONTMATTER.match(text)
    return text[match.end() :] if match else text


def vectors_of(conn: sqlite3.Connection) -> dict[str, tuple[str, bytes]]:
    """Every stored row, id → (version, vectors) (rows of another model under "model:id"): what a fresh
    rebuild must equal."""
    model = conn.execute("SELECT value FROM semantic_meta WHERE key = 'model'").fetchone()
    rows = conn.execute("SELECT model, id, version, vectors FROM semantic_vectors").fetchall()
    return {(i if model and m == model[0] else f"{m}:{i}"): (v, b) for m, i, v, b in rows}
