"""Timestamps: the one stored text form, and parsing what users and connectors send.

Stored form (``documents.created_at``/``updated_at``, ``synced_at``, ``sources.last_sync``): UTC,
whole seconds, a ``Z`` suffix, e.g. ``2026-01-31T12:00:00Z``. Every stored value has exactly this
shape, so comparing the strings compares the instants; a bound with sub-second precision is rounded
to whole seconds the way that keeps the comparison exact (``since_text``, ``until_text``).

Naive datetimes are taken as UTC everywhere (never as the machine's local time).
"""

from __future__ import annotations

import datetime as dt

UTC = dt.UTC


def as_utc(value: dt.datetime) -> dt.datetime:
    """``value`` in UTC; a naive value is taken as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def to_iso(value: dt.datetime | None) -> str | None:
    """The stored form of ``value`` (sub-second digits are dropped: truncated, not rounded)."""
    if value is None:
        return None
    return as_utc(value).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def now_iso() -> str:
    return to_iso(dt.datetime.now(UTC)) or ""


def parse(value: str) -> dt.datetime:
    """An ISO 8601 date or date-time (``Z`` or an offset; naive is UTC) -> aware UTC datetime.

    Raises ``ValueError`` with a message that shows the expected form.
    """
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"expected an ISO 8601 date or date-time such as 2026-01-31 or 2026-01-31T12:00:00Z, got {value!r}"
        ) from None
    return as_utc(parsed)


def from_iso(value: str | None) -> dt.datetime | None:
    """A stored timestamp (or None) as an aware UTC datetime."""
    return parse(value) if value else None


def from_unix(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, tz=UTC)


def since_text(value: dt.datetime) -> str:
    """The smallest stored form at or after ``value``: ``stored >= since_text(v)`` iff the stored
    instant is at or after ``v`` (a sub-second bound rounds up to the next whole second)."""
    utc = as_utc(value)
    if utc.microsecond:
        utc = utc.replace(microsecond=0) + dt.timedelta(seconds=1)
    return to_iso(utc) or ""


def until_text(value: dt.datetime) -> str:
    """The largest stored form at or before ``value``: ``stored <= until_text(v)`` iff the stored
    instant is at or before ``v`` (a sub-second bound rounds down)."""
    return to_iso(value) or ""
