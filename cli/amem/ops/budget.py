"""A read's budget: the characters of all bodies in its output bounded, the note first, then linked notes
nearest first, each cut at a line; what did not fit is named."""

from __future__ import annotations

from typing import Any


def fit_bodies(order: list[dict[str, Any]], max_chars: int) -> dict[str, Any]:
    """Cut the records of a read (`order`: the note's, then its linked notes' breadth-first) to at most
    `max_chars` characters of bodies in all, in that order. The first body that does not fit ends at its
    last whole line within what is left and says `truncated: true`; every record after it is left out
    (dropped from its parent's `linkedNotes`), and so is that linked note when not one line of it fits.
    Returns the top level's `{truncated, omitted: [ids]}`."""
    left = max_chars
    full = False  # once one body does not fit, nothing after it may pass it: nearest first
    omitted: list[str] = []
    for position, record in enumerate(order):
        body = record["body"]
        if full:
            omitted.append(record["id"])
        elif len(body) <= left:
            left -= len(body)
        else:
            full = True
            kept = _whole_lines(body, left)
            if kept or position == 0:  # the note itself is always there, if only its record
                record["body"] = kept
                record["truncated"] = True
            else:
                omitted.append(record["id"])
    if omitted:
        _drop(order[0], set(omitted))
    return {"truncated": full, "omitted": omitted}


def _whole_lines(body: str, limit: int) -> str:
    """The longest prefix of `body` of at most `limit` characters that ends at a line's end."""
    if limit <= 0:
        return ""
    end = body.rfind("\n", 0, limit)
    return body[: end + 1] if end >= 0 else ""


def _drop(record: dict[str, Any], omitted: set[str]) -> None:
    record["linkedNotes"] = [r for r in record["linkedNotes"] if r["id"] not in omitted]
    for linked in record["linkedNotes"]:
        _drop(linked, omitted)
