"""A document's own date: when the note says it was written, not when its file last changed.

In order: the front matter's ``date`` (or ``created``, ``created_at``; an e-mail's ``Date`` header),
else a date in the title (``Session 2026-03-14: ...``, ``14 March 2026``, ``March 14, 2026``), else an
ISO date in the file name (``2026-03-14-standup.md``, ``2026_03_14.md``). Stored as
``documents.dated`` in the stored timestamp form (``common/timestamps``); search filters and the time
words of a query (``search/timewords.py``) use it, and ``updated_at`` where a document has none.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from pathlib import PurePosixPath
from typing import Any

from context_harness.common import timestamps

DATE_KEYS = ("date", "created", "created_at")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
# An English month name or its abbreviation ("Sep", "Sept"), as a group
MONTH_PATTERN = "(sept|" + "|".join(m[:3] + f"(?:{m[3:]})?" if len(m) > 3 else m for m in MONTHS) + r")\.?"
_ISO = re.compile(r"(?<!\d)(\d{4})[-_.](\d{2})[-_.](\d{2})(?!\d)")
_DAY_MONTH_YEAR = re.compile(rf"(?<!\d)(\d{{1,2}})(?:st|nd|rd|th)?\s+{MONTH_PATTERN}\s+(\d{{4}})(?!\d)", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{MONTH_PATTERN}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.IGNORECASE)


def month_number(name: str) -> int | None:
    """1-12 for an English month name or its three-letter abbreviation (any case), else None."""
    key = name.lower().rstrip(".")
    key = "sep" if key == "sept" else key
    for i, month in enumerate(MONTHS, 1):
        if key == month or (len(key) == 3 and month.startswith(key)):
            return i
    return None


def _valid(year: int, month: int, day: int) -> dt.datetime | None:
    if not 1900 <= year <= 2199:
        return None
    try:
        return dt.datetime(year, month, day, tzinfo=dt.UTC)
    except ValueError:
        return None


def date_in_text(text: str, iso_only: bool = False) -> dt.datetime | None:
    """The first valid date written in ``text``: ISO (``2026-03-14``, ``-``, ``_`` or ``.`` between), or,
    unless ``iso_only``, ``14 March 2026`` / ``March 14, 2026`` (English month names)."""
    for match in _ISO.finditer(text):
        if (found := _valid(int(match[1]), int(match[2]), int(match[3]))) is not None:
            return found
    if iso_only:
        return None
    for match in _DAY_MONTH_YEAR.finditer(text):
        month = month_number(match[2])
        if month and (found := _valid(int(match[3]), month, int(match[1]))) is not None:
            return found
    for match in _MONTH_DAY_YEAR.finditer(text):
        month = month_number(match[1])
        if month and (found := _valid(int(match[3]), month, int(match[2]))) is not None:
            return found
    return None


def meta_time(value: Any) -> dt.datetime | None:
    """A front matter value as a UTC datetime: a YAML date or date-time, an ISO string (as stored), or an
    e-mail's ``Date`` header (a message's metadata)."""
    if isinstance(value, dt.datetime):
        return timestamps.as_utc(value)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    if isinstance(value, str):
        try:
            return timestamps.parse(value)
        except ValueError:
            pass
        try:  # an e-mail's Date header ("Tue, 08 Dec 2026 10:00:00 +0100")
            return timestamps.as_utc(email.utils.parsedate_to_datetime(value))
        except (TypeError, ValueError, IndexError):
            return None
    return None


def own_date(metadata: dict[str, Any] | None, title: str | None, source_id: str) -> str | None:
    """A document's own date in the stored form, or None (see the module's docstring)."""
    for key in DATE_KEYS:
        if (found := meta_time((metadata or {}).get(key))) is not None:
            return timestamps.to_iso(found)
    found = date_in_text(title) if title else None
    found = found or date_in_text(PurePosixPath(source_id).name, iso_only=True)
    return timestamps.to_iso(found)
