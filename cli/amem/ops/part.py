"""Part of a note, as `amem read --lines` and `--section` return it: the file's own lines, numbered as an
editor numbers them (from 1, frontmatter included, a line ends at LF), and where they lie in the file."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ..errors import UsageError
from ..output import quote

#: `A-B`, `A-` (to the end) or `A` (that line alone), spaces allowed around the dash.
_RANGE = re.compile(r"\s*(\d{1,10})\s*(?:(-)\s*(\d{1,10})?)?\s*\Z", re.ASCII)


class Part(NamedTuple):
    """The part of a note a read asks for: a line range (first, last or None: to the end), or a section."""

    span: tuple[int, int | None] | None
    section: str | None

    def take(self, record: dict[str, Any], data: bytes) -> dict[str, int]:
        """Make the note's read `record` (of the note's bytes `data`) hold this part as its body; where
        the part lies (`part_of`)."""
        text = data.decode("utf-8", errors="replace")  # as the record decoded it, its warning given
        record["body"], where = part_of(text, record["id"], self.span, self.section)
        return where


def asked_part(lines: str | None, section: str | None) -> Part | None:
    """The part `lines` ('A-B', 'A-' or 'A') or `section` (a heading) asks for; None when neither is given.
    A usage error for a malformed or backward range, for both a range and a section, or for a section
    that names no heading."""
    if lines is not None and section is not None:
        raise UsageError("give lines or section, not both")
    if section is not None:
        from ..notes.sections import heading_key

        if not heading_key(section)[1]:
            raise UsageError("no heading: name the section's heading, e.g. 'Status' or '## Status'")
        return Part(None, section)
    return None if lines is None else Part(_span(lines), None)


def held(record: dict[str, Any], where: dict[str, int]) -> dict[str, int]:
    """`where` for the body the read's `record` holds: a budget that cut the body (at a line's end)
    makes `to` the last line it kept."""
    if record.get("truncated"):
        return {**where, "to": where["from"] - 1 + record["body"].count("\n")}
    return where


def _span(lines: str) -> tuple[int, int | None]:
    """The range `lines` names; a usage error when it is malformed or backward."""
    found = _RANGE.match(lines)
    if found is None or int(found.group(1)) == 0 or (found.group(3) is not None and int(found.group(3)) == 0):
        raise UsageError(f"lines must be A-B, A- (to the end) or A, numbered from 1; got {quote(lines)}")
    first = int(found.group(1))
    last = None if found.group(2) and found.group(3) is None else int(found.group(3) or first)
    if last is not None and last < first:
        raise UsageError(f"lines {first}-{last}: the first line comes after the last")
    return first, last


def _file_lines(text: str) -> list[str]:
    """`text`'s lines, each with its line ending (a last line without one is still a line)."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def part_of(
    text: str, note_id: str, span: tuple[int, int | None] | None, section: str | None
) -> tuple[str, dict[str, int]]:
    """The part of the note's `text` (a BOM left out) that `span` (a line range, see `Part`) or `section` asks
    for, and `{from, to, total}`: its first and last lines and the file's line count. A range's end past
    the file's is the file's; a start past it, or a section that is not exactly one heading's, is a usage
    error. A section runs from its heading line to the next heading of the same or a higher level (in the
    body, as `edit --section` finds it), its trailing blank lines left out."""
    text = text.removeprefix("\ufeff")
    lines = _file_lines(text)
    total = len(lines)
    if section is not None:
        first, last = _section_lines(text, note_id, section)
    else:
        assert span is not None
        first, last = span[0], min(span[1] or total, total)
        if first > total:
            lines_word = "line" if total == 1 else "lines"
            message = f"cannot read from line {first} of note {quote(note_id)}: it has {total} {lines_word}"
            raise UsageError(message, total=total)
    return "".join(lines[first - 1 : last]), {"from": first, "to": last, "total": total}


def _section_lines(text: str, note_id: str, section: str) -> tuple[int, int]:
    """The first and last lines of the one section `section` names."""
    from ..notes.sections import sections
    from ..notes.simple_yaml import split_frontmatter

    body = split_frontmatter(text)[1]
    found = sections(body, section)
    if len(found) != 1:
        hint = "check the heading's text" if not found else "give its level ('## …') or read it by lines"
        message = f"cannot read note {quote(note_id)}: the heading {quote(section.strip())} occurs {len(found)} times"
        raise UsageError(f"{message} in the body; {hint}", matches=len(found))
    heading, end = found[0]
    offset = len(text) - len(body)
    first = text.count("\n", 0, offset + heading.start) + 1
    kept = body[heading.start : end].rstrip(" \t\r\n")
    return first, first + kept.count("\n")
