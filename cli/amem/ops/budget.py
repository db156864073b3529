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
    omitted: list[str] = []
    for position, record in enumerate(order):
        body = record["body"]
        if omitted or (position and left < 0):
            omitted.append(record["id"])
            continue
        if left >= 0 and len(body) <= left:
            left -= len(body)
            continue
        kept = _whole_lines(body, left)
        if kept or position == 0:
            record["body"] = kept
            record["truncated"] = True
            left = -1  # nothing more fits: nearest first means nothing further may pass this one
        else:
            omitted.append(record["id"])
    cut = left < 0 or bool(omitted)
    if omitted:
        _drop(order[0], set(omitted))
    return {"truncated": cut, "omitted": omitted}


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
