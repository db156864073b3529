"""The vault index's tables: the schema SQLite is given, its version, and the fingerprint of the layout a
database holds, by which `VaultIndex` tells an index of this version's tables from any other (built again).

The search tables are `fts.SCHEMA`'s; the semantic vectors' (`semantic.SCHEMA`) are the feature tables,
made by the first search that needs them, left out of the fingerprint and kept by a rebuild.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from ..digest import sha1_hex

#: Bump when the tables or what goes in them change. Each version keeps its own file (`FILE`), so that an
#: amem of another version still running (a keeper, an MCP server) and this one never build each other's
#: index again; see `versions`.
#: 10: links counted (count, embeds), for graph; 11: each link's line, and the links indexes covering check's
#: orphan query; 12: note_headings, each note's folded headings, for the ranking's exact-heading tier; 13: those
#: headings' keys without their markup; 14: search_heads, the short fields' own table, for the phrase
#: tiers; 15: each note's frontmatter warning, for check; 16: a link whose target has a folder never resolves
#: by its base name alone; 17: links, headings, titles and tags read by CommonMark's block structure
SCHEMA_VERSION = 17
#: The index database's file name in the vault's cache folder, and its refresh lock's: one of each per
#: version, so that another version's refresh never holds this one's up.
FILE = f"index-{SCHEMA_VERSION}.sqlite"
LOCK_FILE = f"index-{SCHEMA_VERSION}.lock"

TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE notes (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    folder TEXT NOT NULL,      -- the id's folder with its trailing '/', '' at the vault root
    key TEXT NOT NULL,         -- link_key(id): link resolution compares these
    name_key TEXT NOT NULL,    -- link_key of the id's last segment, for base-name resolution
    rkey TEXT NOT NULL,        -- key reversed, so that path-suffix resolution is an index range
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    digest TEXT,               -- set while the file is racily recent (see RACY_NS)
    problem TEXT,              -- why the note could not be indexed (not UTF-8, unreadable), else NULL
    warning TEXT,              -- why its frontmatter block did not parse (check reports it), else NULL
    title TEXT NOT NULL DEFAULT '',
    title_key TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    created TEXT,
    frontmatter TEXT NOT NULL DEFAULT '{}',
    body_at INTEGER NOT NULL DEFAULT 0,  -- where the body starts in the file, in bytes
    search INTEGER NOT NULL DEFAULT 0    -- search row: 0 current, 1 to write, 2 its backlinks to rewrite
);
CREATE INDEX notes_folder ON notes (folder);
CREATE INDEX notes_key ON notes (key);
CREATE INDEX notes_name_key ON notes (name_key);
CREATE INDEX notes_rkey ON notes (rkey);
CREATE INDEX notes_title_key ON notes (title_key);
CREATE INDEX notes_racy ON notes (digest) WHERE digest IS NOT NULL;
CREATE INDEX notes_problem ON notes (problem) WHERE problem IS NOT NULL;
CREATE INDEX notes_warning ON notes (warning) WHERE warning IS NOT NULL;
CREATE INDEX notes_search ON notes (search) WHERE search != 0;
CREATE TABLE note_tags (note INTEGER NOT NULL, tag TEXT NOT NULL);
CREATE INDEX note_tags_note ON note_tags (note);
CREATE INDEX note_tags_tag ON note_tags (tag);
CREATE TABLE note_aliases (note INTEGER NOT NULL, key TEXT NOT NULL);  -- key: link_key of an alias
CREATE INDEX note_aliases_note ON note_aliases (note);
CREATE INDEX note_aliases_key ON note_aliases (key);
CREATE TABLE links (
    src INTEGER NOT NULL,      -- notes.rowid of the linking note
    seq INTEGER NOT NULL,
    target TEXT NOT NULL,      -- normalised target, heading/block part removed
    tkey TEXT NOT NULL,        -- link_key(target)
    nkey TEXT NOT NULL,        -- link_key of the target's last segment: the base name of the notes it may name
    resolved TEXT,             -- note id the target resolves to, NULL when none
    count INTEGER NOT NULL DEFAULT 1,  -- how many times the note writes a link to this target
    embeds INTEGER NOT NULL DEFAULT 0, -- how many of those are ![[embeds]]
    line INTEGER                       -- the line it is first written on, from 1 in the file (a BOM aside)
);
CREATE INDEX links_src ON links (src, resolved);  -- resolved too: a note's links out, from the index alone
CREATE INDEX links_target ON links (target);
CREATE INDEX links_tkey ON links (tkey);
CREATE INDEX links_nkey ON links (nkey);
CREATE INDEX links_resolved ON links (resolved, src);  -- src too: the notes linking in, from the index alone
CREATE TABLE seen (id TEXT PRIMARY KEY, version TEXT NOT NULL);
CREATE TABLE dirs (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL);  -- -1: recheck next time
"""

#: Tables an optional feature keeps in the index database (semantic search's vectors, which it creates on
#: first use): not part of the layout, so they never make the index look foreign; kept when the other tables
#: are built again for the same vault (see `VaultIndex._same_vault`).
FEATURE_TABLES = ("semantic_", "sqlite_autoindex_semantic_")


@functools.cache
def link_indexes() -> list[tuple[str, str]]:
    """(name, statement) of each index of the links table, as the schema creates it. A cold build stores
    its links without them and makes them once, after its last batch (keeping five indexes up to date row
    by row was most of the SQLite work of its first pass); until then its `cold-build` mark is in `meta`,
    and whichever refresh finishes a killed build makes them first."""
    found = []
    for statement in statements(TABLES):
        sql = statement[statement.find("CREATE") :].strip()
        words = sql.split()
        if words[:2] == ["CREATE", "INDEX"] and words[4] == "links":
            found.append((words[2], sql))
    return found


def with_link_indexes(master: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """`sqlite_master`'s (type, name, sql), ordered by name, as it is once the links are indexed."""
    present = {row[1] for row in master}
    rows = list(master)
    rows += [("index", name, sql) for name, sql in link_indexes() if name not in present]
    return sorted(rows, key=lambda row: str(row[1]))


def fingerprint(master: list[tuple[Any, ...]]) -> str:
    layout = [row for row in master if not str(row[1]).startswith(FEATURE_TABLES)]
    return sha1_hex(repr(layout).encode("utf-8"))


def statements(script: str) -> Iterator[str]:
    for statement in script.split(";"):
        if statement.strip():
            yield statement
