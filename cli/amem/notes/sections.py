"""A note body's sections: what lies under a heading, up to the next heading of the same or a higher level,
as `amem edit --section` replaces it and `amem read --section` returns it."""

from __future__ import annotations

import itertools
import re
from typing import NamedTuple

#: A heading as the caller names it: `Status`, `## Status`, `##Status`.
_NAMED = re.compile(r"(#{1,6})[ \t]*(.*)\Z", re.S)


def heading_key(heading: str) -> tuple[int | None, str]:
    """(level, comparable text) of a heading as the caller names it: `#`s fix the level, else any; the
    text is compared ignoring case and runs of spaces (an empty text names no heading)."""
    heading = heading.strip()
    named = _NAMED.match(heading)
    level = len(named.group(1)) if named else None
    text = named.group(2) if named else heading
    text = re.sub(r"[ \t]+#+[ \t]*\Z", "", text)
    return level, " ".join(text.split()).casefold()


class Heading(NamedTuple):
    start: int  # offset of the heading's first line in the body
    after: int  # offset just past its last line's ending (the end of the body when it has none)
    level: int
    key: str


def headings(body: str) -> list[Heading]:
    """The sections' headings of `body`, in order: ATX and setext headings outside code and HTML blocks,
    not inside a block quote or list item (such a heading is part of its container, and ends no section)."""
    from .blocks import headings as blocks_headings

    found = [heading for heading in blocks_headings(body) if not heading.nested]
    if not found:
        return []
    lines = body.split("\n")
    starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)]
    return [
        Heading(starts[h.first], min(starts[h.end], len(body)), h.level, " ".join(h.text.split()).casefold())
        for h in found
    ]


class Section(NamedTuple):
    heading: Heading
    #: where the section ends: the start of the next heading of the same or a higher level, else the body's end
    end: int


def sections(body: str, heading: str) -> list[Section]:
    """Every section of `body` whose heading `heading` names (see `heading_key`), in order; a caller
    that needs one section refuses none or several."""
    level, key = heading_key(heading)
    found = headings(body)
    named = []
    for i, this in enumerate(found):
        if this.key == key and (level is None or this.level == level):
            following = next((h for h in found[i + 1 :] if h.level <= this.level), None)
            named.append(Section(this, following.start if following is not None else len(body)))
    return named
