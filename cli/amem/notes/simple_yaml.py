"""The frontmatter most notes have, read without YAML: `key: value` lines whose values are plain words,
whole numbers, dates, or flow lists of plain words (`tags: [a, b]`). A build reads thousands of notes,
and PyYAML costs more per note than everything else the index does. Anything beyond that subset (quotes,
nesting, comments, anchors, words YAML reads as booleans or nulls…) returns None: the caller then parses
the block with YAML, so the result is always what YAML gives.
"""

from __future__ import annotations

import functools
import re
from datetime import date, datetime
from typing import Any, NamedTuple


class _Patterns(NamedTuple):
    key: re.Pattern[str]
    #: A plain scalar YAML reads as that very string: starts with a letter, then letters, digits, spaces
    #: and punctuation that has no meaning in YAML's plain style here.
    plain: re.Pattern[str]
    integer: re.Pattern[str]
    date: re.Pattern[str]
    #: The timestamps amem itself writes (`2026-11-29T20:15:03+08:00`), a strict subset of YAML's.
    datetime: re.Pattern[str]


@functools.cache
def _patterns() -> _Patterns:
    """Compiled on first use: a search imports this module for `split_frontmatter` alone."""
    return _Patterns(
        key=re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z"),
        plain=re.compile(r"[^\W\d_][\w .\-/()+&!?@$%^=~]*\Z"),
        integer=re.compile(r"(?:0|[1-9][0-9]{0,17})\Z"),
        date=re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z"),
        datetime=re.compile(
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?\Z"
        ),
    )


#: Plain words that YAML 1.1 (PyYAML) reads as booleans, nulls or special floats.
_SPECIAL = frozenset(
    "y n yes no on off true false null nan inf".split()  # noqa: SIM905
)


def _scalar(text: str, patterns: _Patterns) -> Any:
    """The value YAML gives a plain scalar, or a `_NO` marker when this subset cannot tell."""
    if not text:
        return _NO
    if patterns.integer.match(text):
        return int(text)
    # Both shapes lie inside YAML's timestamp pattern, so a value of either shape that names no real
    # day or moment (`2024-02-30`, `25:61:61`) is, as the note parser keeps it, the text as written.
    if patterns.date.match(text):
        try:
            return date.fromisoformat(text).isoformat()
        except ValueError:
            return text
    if patterns.datetime.match(text):
        try:  # as the note parser keeps a YAML timestamp: ISO-8601 text with its own offset
            return datetime.fromisoformat(text).isoformat()
        except ValueError:
            return text
    if patterns.plain.match(text) and text.casefold().strip(".") not in _SPECIAL and ": " not in text:
        if text.endswith((" ", ":")) or " #" in text:
            return _NO
        return text
    return _NO


_NO = object()


def _fence(line: str) -> bool:
    """A `---` line, with trailing blanks or tabs."""
    return line.startswith("---") and not line[3:].strip(" \t")


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter block or None, body), split as the note parser splits: a first line `---` (after an
    optional BOM) up to the next `---` line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    first_end = text.find("\n")
    if first_end < 0 or not _fence(text[:first_end].rstrip("\r")):
        return None, text
    pos = first_end + 1
    while pos <= len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if _fence(line.rstrip("\r")):
            return text[first_end + 1 : pos], "" if end < 0 else text[end + 1 :]
        if end < 0:
            break
        pos = end + 1
    return None, text


def simple_frontmatter(block: str) -> dict[str, Any] | None:
    """The mapping of a frontmatter block in the simple subset, else None (use YAML)."""
    data: dict[str, Any] = {}
    patterns = _patterns()
    lines = block.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    for raw in lines:
        line = raw[:-1] if raw.endswith("\r") else raw
        key, sep, value = line.partition(":")
        if not sep or not patterns.key.match(key):
            return None
        if value and value[0] != " ":
            return None
        value = value.strip(" ")
        if "\t" in value:
            return None
        if value.startswith("["):
            if not value.endswith("]"):
                return None
            inner = value[1:-1].strip(" ")
            items: list[Any] = []
            if inner:
                for part in inner.split(","):
                    item = _scalar(part.strip(" "), patterns)
                    if item is _NO:
                        return None
                    items.append(item)
            data[key] = items
            continue
        item = _scalar(value, patterns)
        if item is _NO:
            return None
        data[key] = item
    return data
