"""Timestamps as amem prints them: ISO-8601, to the second, with the configured zone's offset."""

from __future__ import annotations

from datetime import date, datetime, tzinfo


def now(tz: tzinfo | None) -> datetime:
    """The current time in `tz`, or in the system's local zone when tz is None."""
    return datetime.now(tz).replace(microsecond=0) if tz else datetime.now().astimezone().replace(microsecond=0)


def iso(moment: datetime) -> str:
    return moment.replace(microsecond=0).isoformat()


def from_epoch(seconds: float, tz: tzinfo | None) -> str:
    moment = datetime.fromtimestamp(seconds, tz) if tz else datetime.fromtimestamp(seconds).astimezone()
    return iso(moment)


def normalise(value: object, tz: tzinfo | None) -> object:
    """A `created`/`updated` value at second precision with an offset; values that name no moment the
    zone can hold (`2023-11-31`, `0001-01-01T00:00:00+05:00` moved west) stay as they are."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return value
    else:
        return value
    try:  # a moment at the edge of the calendar can fall off it when moved to another zone
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=tz) if tz else moment.astimezone()
        else:
            moment = moment.astimezone(tz) if tz else moment.astimezone()
    except (OverflowError, ValueError):
        return value
    return iso(moment)
