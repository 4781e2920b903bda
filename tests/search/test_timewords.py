"""The time words of a question (``search/timewords.py``) as the days they mean, against a fixed today."""

from __future__ import annotations

import datetime as dt

import pytest

from context_harness.search.timewords import asks_latest, event_words, resolve, today

TODAY = dt.date(2026, 12, 8)  # a Tuesday
D = dt.date


@pytest.mark.parametrize(("query", "rest", "first", "last"), [
    ("What did I decide about the fence last week?", "What did I decide about the fence?", D(2026, 11, 30),
     D(2026, 12, 6)),
    ("Last week, what did we settle on?", "what did we settle on?", D(2026, 11, 30), D(2026, 12, 6)),
    ("the plan from yesterday", "the plan from", D(2026, 12, 7), D(2026, 12, 7)),
    ("what we said two days ago about tiles", "what we said about tiles", D(2026, 12, 6), D(2026, 12, 6)),
    ("3 weeks ago", "", D(2026, 11, 16), D(2026, 11, 22)),
    ("budget last month", "budget", D(2026, 11, 1), D(2026, 11, 30)),
    ("budget this month", "budget", D(2026, 12, 1), D(2026, 12, 8)),  # not after today
    ("the fence in March", "the fence", D(2026, 3, 1), D(2026, 3, 31)),
    ("the fence in December 2025", "the fence in December 2025", D(2025, 12, 1), D(2025, 12, 31)),  # a year stays
    ("what did I decide in 2025", "what did I decide in 2025", D(2025, 1, 1), D(2025, 12, 31)),
    ("cases since 1979", "cases since 1979", D(1979, 1, 1), TODAY),  # since: up to today
    ("notes on March 14", "notes", D(2026, 3, 14), D(2026, 3, 14)),
    ("notes on the 30th of December", "notes", D(2025, 12, 30), D(2025, 12, 30)),  # not yet this year: last
    ("the call on Monday", "the call", D(2026, 12, 7), D(2026, 12, 7)),
    ("standup 2026-03-14", "standup 2026-03-14", D(2026, 3, 14), D(2026, 3, 14)),
])
def test_time_words_resolve_against_today(query, rest, first, last) -> None:
    found = resolve(query, TODAY)
    assert found is not None
    assert found[0] == rest
    assert (found[1].first, found[1].last) == (first, last)


@pytest.mark.parametrize("query", ["the fence", "I may go", "march of the penguins", "in 2027",
                                   "was ist letzte Woche passiert"])
def test_no_time_words(query) -> None:
    """No time words (a verb "may", a "march" without a date, a year to come; other languages: as written)."""
    assert resolve(query, TODAY) is None


def test_today_is_ctx_today_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_TODAY", "2026-03-01")
    assert today() == D(2026, 3, 1)
    monkeypatch.delenv("CTX_TODAY")
    assert today() == dt.date.today()


@pytest.mark.parametrize(("query", "asks"), [("What did I finally decide about the fence?", True),
                                             ("How much is my rent now?", True), ("the latest plan", True),
                                             ("the fence decision", False), ("I know the rent", False)])
def test_asking_for_the_latest(query, asks) -> None:
    assert asks_latest(query) is asks


@pytest.mark.parametrize(("query", "languages", "rest", "first", "last"), [
    ("Was habe ich letzte Woche zum Zaun entschieden?", ["de"], "Was habe ich zum Zaun entschieden?",
     D(2026, 11, 30), D(2026, 12, 6)),
    ("Zaun vor zwei Tagen", ["de"], "Zaun", D(2026, 12, 6), D(2026, 12, 6)),
    ("Zaun im März", ["de", "en"], "Zaun", D(2026, 3, 1), D(2026, 3, 31)),
    ("Zaun seit Mai", ["de"], "Zaun", D(2026, 5, 1), TODAY),
    ("la clôture la semaine dernière", ["fr"], "la clôture", D(2026, 11, 30), D(2026, 12, 6)),
    ("hier, la clôture", ["fr"], "la clôture", D(2026, 12, 7), D(2026, 12, 7)),
    ("il y a 3 jours", ["fr"], "", D(2026, 12, 5), D(2026, 12, 5)),
    ("la cerca el mes pasado", ["es"], "la cerca", D(2026, 11, 1), D(2026, 11, 30)),
    ("en marzo de 2025", ["es"], "en marzo de 2025", D(2025, 3, 1), D(2025, 3, 31)),
])
def test_other_languages_where_the_index_holds_them(query, languages, rest, first, last) -> None:
    found = resolve(query, TODAY, languages)
    assert found is not None
    assert (found[0], found[1].first, found[1].last) == (rest, first, last)
    assert resolve(query, TODAY, ["en"]) is None  # not read where the index holds none of that language


def test_french_hier_is_german_here() -> None:
    assert resolve("hier ist der Zaun", TODAY, ["de", "fr"]) is None


def test_an_event_dates_the_question() -> None:
    event = event_words("What did I decide about the fence just before my trip to Japan?")
    assert event is not None and (event.rest, event.after, event.words) == (
        "What did I decide about the fence?", False, "trip to Japan")
    span = event.span("2026-08-14T00:00:00Z")
    assert (span.first, span.last) == (D(2026, 7, 15), D(2026, 8, 13))
    after = event_words("the garden after our move")
    assert after is not None and after.after and after.span("2026-03-01").first == D(2026, 3, 2)
    assert event_words("Was the concert before or after my trip?") is None  # a comparison, not a time
    assert event_words("what to check before deploying") is None  # no "my"/"our": not an event the user lived
