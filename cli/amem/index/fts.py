"""The search tables of the vault index: one SQLite FTS5 row per readable note, kept by the index's
refresh in the same transactions as the notes, so the search engine always describes the index's state.

Each row has four fields, all stored as the terms `tokenize.terms_of` gives (space-separated, so FTS5's
`ascii` tokenizer sees exactly those terms and their positions):

- `head`: the id without its extension and the title (ranked ×5),
- `headings`: the note's Markdown headings,
- `links`: the ids of the notes that link to this one (rewritten when those links change),
- `body`: the whole body.

`search_heads` holds the first two fields again, alone, for the phrase bonus's id-and-title and headings
tiers (`rank.SHORT_FIELDS`): FTS5 keeps one list of postings per term for all of a table's fields, so a
phrase looked for in `head` in `search_fts` walks every note with its words anywhere (for common words,
the whole vault); here it walks the notes with them in a title or heading. It needs no sizes (no BM25 is
computed over it) and is written and deleted with the search row.

Beside it, `note_headings` holds each searchable note's headings as a reader sees them (a trailing
`{#anchor}`, code marks, emphasis marks, a link's address and backslash escapes aside), folded as
`tokenize.title_key` folds a title (distinct per note), for the ranking's exact-heading tier: written and
deleted with the note's search row.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sqlite3
from collections.abc import Iterable, Sequence

from ..notes.blocks import headings as body_headings
from ..notes.tokenize import field_text, id_stem, title_key

SCHEMA = """
CREATE VIRTUAL TABLE search_fts USING fts5(head, headings, links, body, tokenize='ascii', prefix='1');
CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search_fts, 'row');
CREATE VIRTUAL TABLE search_heads USING fts5(head, headings, tokenize='ascii', prefix='1', columnsize=0);
CREATE TABLE note_headings (note INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (note, key)) WITHOUT ROWID;
CREATE INDEX note_headings_key ON note_headings (key);
"""

#: What each search table may hold of a transaction's terms before it writes them out as a segment (FTS5's
#: `hashsize`; its default is 1 MiB): a cold build's second pass writes up to `batch.COLD_SEARCH_BATCH`
#: rows a transaction, notes of at most this many bytes together, so 2,000 genvault notes (5 MB) make one
#: segment (five with the default); a few notes never come near.
PENDING_BYTES = 8 << 20

#: Between two values in one field (id and title; the linking ids), so no phrase runs across them:
#: a term no query can contain (queries are made of letters and digits only).
SEPARATOR = " \u2063 "
#: A heading's `{#anchor}` at its end.
_ANCHOR = re.compile(r"[ \t]*\{#[^}]*\}$")
#: How a heading is written rather than what it says: `[label](address)` (the label is kept), and code and
#: emphasis marks and a backslash escaping the next character (dropped).
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"[`*]+|\\(?=[!-/:-@\[-`{-~])")
#: Between two heading keys in one string (no heading holds a line break).
KEY_SEPARATOR = "\n"


def configure(conn: sqlite3.Connection) -> None:
    """Set the search tables' options, once, when they are made (FTS5 keeps them in the database). Only
    speed hangs on them: an SQLite whose FTS5 refused one would build the same index with its default."""
    for table in ("search_fts", "search_heads"):
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?)", (PENDING_BYTES,))


def head_text(note_id: str, title: str) -> str:
    return field_text(id_stem(note_id)) + SEPARATOR + field_text(title)


def headings(body: str) -> list[str]:
    """The texts of the body's Markdown headings (ATX and setext, outside code and HTML blocks), the empty
    ones left out."""
    return [heading.text for heading in body_headings(body) if heading.text]


def headings_text(body: str) -> str:
    """The headings field of a body."""
    return SEPARATOR.join(map(field_text, headings(body)))


def headings_fields(body: str) -> tuple[str, str]:
    """A body's headings field and its headings' distinct keys for `note_headings` (KEY_SEPARATOR between
    them), its headings found once."""
    found = headings(body)
    keys = dict.fromkeys(heading_key(heading) for heading in found)
    return SEPARATOR.join(map(field_text, found)), KEY_SEPARATOR.join(key for key in keys if key)


def heading_key(heading: str) -> str:
    """A heading's key in `note_headings`: its visible text, folded as a title is (`_` is a separator
    there, so emphasis written with underscores goes too)."""
    text = _ANCHOR.sub("", heading)
    if "[" in text:
        text = _LINK.sub(r"\1", text)
    return title_key(_MARKS.sub("", text))


def links_text(source_ids: Iterable[str]) -> str:
    return SEPARATOR.join(map(_id_text, source_ids))


@functools.lru_cache(maxsize=32768)
def _id_text(note_id: str) -> str:
    """An id's terms: a note linking to many others is tokenized once per build (up to this many ids
    remembered), not once per link."""
    return field_text(id_stem(note_id))


def insert(conn: sqlite3.Connection, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
    """Rows of (rowid, head, headings, links, body)."""
    conn.executemany("INSERT INTO search_fts (rowid, head, headings, links, body) VALUES (?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT INTO search_heads (rowid, head, headings) VALUES (?, ?, ?)", [row[:3] for row in rows])


def set_headings(conn: sqlite3.Connection, rows: Sequence[tuple[int, str]]) -> None:
    """(rowid, `heading_keys`) of notes whose search row was just inserted."""
    conn.executemany(
        "INSERT INTO note_headings (note, key) VALUES (?, ?)",
        [(rowid, key) for rowid, keys in rows if keys for key in keys.split(KEY_SEPARATOR)],
    )


def delete(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """The search rows of these notes, and their headings' keys."""
    conn.executemany("DELETE FROM search_fts WHERE rowid = ?", [(r,) for r in rowids])
    conn.executemany("DELETE FROM search_heads WHERE rowid = ?", [(r,) for r in rowids])
    conn.executemany("DELETE FROM note_headings WHERE note = ?", [(r,) for r in rowids])


def set_links(conn: sqlite3.Connection, values: Sequence[tuple[str, int]]) -> None:
    """(links text, rowid) pairs: the linking ids of notes whose backlinks changed."""
    conn.executemany("UPDATE search_fts SET links = ? WHERE rowid = ?", values)
