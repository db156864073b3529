"""The frontmatter most notes have, read without YAML: `key: value` lines whose values are plain words,
whole numbers, dates, or flow lists of plain words (`tags: [a, b]`). A build reads thousands of notes,
and PyYAML costs more per note than everything else the index does. Anything beyond that subset (quotes,
nesting, comments, anchors, words YAML reads as booleans or nulls…) returns None: the caller then parses
the block with YAML, so the result is always what YAML gives.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

# The shapes below are tested with string methods, not regular expressions: compiling the five patterns
# they were cost a read or a write of one note about a millisecond, more than parsing its frontmatter.
# Each test is exactly the pattern written beside it (`test_notes.py` holds them to it).

#: What may follow a plain scalar's first character besides a word character: punctuation that has no
#: meaning in YAML's plain style here.
_PLAIN_PUNCTUATION = str.maketrans("", "", " .-/()+&!?@$%^=~_")


def is_key(text: str) -> bool:
    """`[A-Za-z_][A-Za-z0-9_\\-]*\\Z`"""
    if not text or not text.isascii() or not (text[0].isalpha() or text[0] == "_"):
        return False
    rest = text[1:].replace("_", "").replace("-", "")
    return not rest or rest.isalnum()


def is_plain(text: str) -> bool:
    """`[^\\W\\d_][\\w .\\-/()+&!?@$%^=~]*\\Z`: a plain scalar YAML reads as that very string, starting
    with a letter (a word character, not a digit, not `_`). re's `\\w` is str.isalnum() or `_`, its `\\d`
    str.isdecimal()."""
    if not text or not text[0].isalnum() or text[0].isdecimal():
        return False
    rest = text[1:].translate(_PLAIN_PUNCTUATION)
    return not rest or rest.isalnum()


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def is_integer(text: str) -> bool:
    """`(?:0|[1-9][0-9]{0,17})\\Z`"""
    return 0 < len(text) <= 18 and _digits(text) and (text[0] != "0" or text == "0")


def is_date(text: str) -> bool:
    """`[0-9]{4}-[0-9]{2}-[0-9]{2}\\Z`"""
    return len(text) == 10 and text[4] == "-" and text[7] == "-" and _digits(text[:4] + text[5:7] + text[8:])


def is_timestamp(text: str) -> bool:
    """`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?\\Z`:
    the timestamps amem itself writes (`2026-11-29T20:15:03+08:00`), a strict subset of YAML's."""
    if len(text) < 19 or text[10] != "T" or text[13] != ":" or text[16] != ":" or not is_date(text[:10]):
        return False
    if not _digits(text[11:13] + text[14:16] + text[17:19]):
        return False
    rest = text[19:]
    if rest.startswith("."):
        end = 1
        while end < len(rest) and "0" <= rest[end] <= "9":
            end += 1
        if end == 1:
            return False
        rest = rest[end:]
    if rest in ("", "Z"):
        return True
    return len(rest) == 6 and rest[0] in "+-" and rest[3] == ":" and _digits(rest[1:3] + rest[4:])


#: Plain words that YAML 1.1 (PyYAML) reads as booleans, nulls or special floats.
_SPECIAL = frozenset(
    "y n yes no on off true false null nan inf".split()  # noqa: SIM905
)


def _scalar(text: str) -> Any:
    """The value YAML gives a plain scalar, or a `_NO` marker when this subset cannot tell."""
    if not text:
        return _NO
    if is_integer(text):
        return int(text)
    # Both shapes lie inside YAML's timestamp pattern, so a value of either shape that names no real
    # day or moment (`2024-02-30`, `25:61:61`) is, as the note parser keeps it, the text as written.
    if is_date(text):
        try:
            return date.fromisoformat(text).isoformat()
        except ValueError:
            return text
    if is_timestamp(text):
        try:  # as the note parser keeps a YAML timestamp: ISO-8601 text with its own offset
            return datetime.fromisoformat(text).isoformat()
        except ValueError:
            return text
    if is_plain(text) and text.casefold().strip(".") not in _SPECIAL and ": " not in text:
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
    lines = block.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    for raw in lines:
        line = raw[:-1] if raw.endswith("\r") else raw
        key, sep, value = line.partition(":")
        if not sep or not is_key(key):
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
                    item = _scalar(part.strip(" "))
                    if item is _NO:
                        return None
                    items.append(item)
            data[key] = items
            continue
        item = _scalar(value)
        if item is _NO:
            return None
        data[key] = item
    return data
