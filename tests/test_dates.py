"""A document's own date (``common/dates.py``): front matter first, then its title, then its file name."""

from __future__ import annotations

import datetime as dt

import pytest

from context_harness.common.dates import date_in_text, own_date


@pytest.mark.parametrize(("meta", "title", "source_id", "expected"), [
    ({"date": dt.date(2026, 3, 14)}, "Session 2025-01-01", "2024-02-02.md", "2026-03-14T00:00:00Z"),
    ({"created": "2026-03-14T09:30:00+01:00"}, None, "x.md", "2026-03-14T08:30:00Z"),
    ({"date": "2026-03-14"}, None, "x.md", "2026-03-14T00:00:00Z"),  # as stored: front matter made JSON-safe
    ({"date": "soon"}, "Session 2026-05-02: fence", "x.md", "2026-05-02T00:00:00Z"),  # not a date: the title's
    ({"date": "Sat, 14 Mar 2026 10:30:00 +0100"}, "Re: fence", "a.eml", "2026-03-14T09:30:00Z"),  # e-mail
    ({"date": "not a date, 99"}, "Re: fence", "a.eml", None),
    ({}, "Standup 14 March 2026", "x.md", "2026-03-14T00:00:00Z"),
    ({}, "Retro, March 14th, 2026", "x.md", "2026-03-14T00:00:00Z"),
    ({}, "Plain title", "journal/2026_03_14.md", "2026-03-14T00:00:00Z"),
    ({}, "Plain title", "2026/03/14/notes.md", None),  # folders are not the note's name
    ({}, "Version 2026-13-45", "notes.md", None),  # not a valid date
    ({}, "Meeting", "release-20260314.md", None),  # no separators: a number, not a date
    (None, None, "x.md", None),
])
def test_own_date(meta, title, source_id, expected) -> None:
    assert own_date(meta, title, source_id) == expected


def test_month_names_only_where_the_text_allows() -> None:
    assert date_in_text("due 2 Sept 2026") == dt.datetime(2026, 9, 2, tzinfo=dt.UTC)
    assert date_in_text("due 2 Sept 2026", iso_only=True) is None
    assert date_in_text("the 30 February 2026 meeting") is None
