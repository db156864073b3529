"""A note's tags, as Obsidian counts them: frontmatter `tags` (a list, or a string of comma- or
space-separated tags) and `#tag` words in the body outside code. Tags compare case-insensitively and
without their `#`; a filter tag also matches the tags nested under it (`project` matches `project/amem`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: `#tag` at the start of a line or after a space: letters, digits, `_`, `-` and `/`, not only digits.
_BODY_TAG = re.compile(r"(?:^|(?<=\s))#([\w/\-]*[^\W\d][\w/\-]*)", re.MULTILINE)
#: What every body tag contains; a literal start, so the scan is fast on bodies that have none.
_TAG_HINT = re.compile(r"#[\w/\-]*[^\W\d]")
_SEPARATORS = re.compile(r"[,\s]+")


def normalise_tag(tag: str) -> str:
    """The compared form of a tag: without leading `#`, trailing `/`, surrounding space; case-folded."""
    return tag.strip().lstrip("#").strip("/").casefold()


def note_tags(frontmatter: dict[str, Any], body: str) -> list[str]:
    """The note's tags in the order first seen, each once, normalised."""
    raw: list[str] = []
    value = frontmatter.get("tags", frontmatter.get("tag"))
    if isinstance(value, str):
        raw += _SEPARATORS.split(value)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str | int | float) and not isinstance(item, bool):
                raw += _SEPARATORS.split(str(item))
    if "#" in body and _TAG_HINT.search(body):
        from .links import prose_lines, strip_code_spans

        for line in prose_lines(body):
            if "#" in line:
                raw += _BODY_TAG.findall(strip_code_spans(line) if "`" in line else line)
    found: dict[str, None] = {}
    for tag in raw:
        tag = normalise_tag(tag)
        if tag:
            found.setdefault(tag)
    return list(found)


def tag_filter_sql(tags: list[str]) -> tuple[str, list[str]]:
    """SQL on notes.rowid requiring every tag (or a tag nested under it), and its parameters."""
    clauses, values = [], []
    for tag in tags:
        key = normalise_tag(tag)
        clauses.append("rowid IN (SELECT note FROM note_tags WHERE tag = ? OR (tag >= ? AND tag < ?))")
        values += [key, key + "/", key + "0"]  # '0' follows '/': every 'key/…'
    return " AND ".join(clauses), values


def notes_where(id_prefix: str, tags: Sequence[str]) -> tuple[str, list[str]]:
    """SQL on `notes` for the readable notes whose id starts with `id_prefix` (any, when empty) and that
    have every tag, with its parameters: the one filter `list` and `search` share."""
    clauses, params = ["problem IS NULL"], []
    if id_prefix:
        clauses.append("id >= ? AND id < ?")
        params += [id_prefix, id_prefix + "\U0010ffff"]
    if tags:
        sql, values = tag_filter_sql(list(tags))
        clauses.append(sql)
        params += values
    return " AND ".join(clauses), params
