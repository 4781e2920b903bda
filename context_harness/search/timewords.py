"""Time words in a question ("last week", "in March", "two days ago") as the days they mean.

A search whose request names no date (no ``filters.since``/``until``) reads the time words of its
query against today: ``yesterday``, ``N days/weeks/months ago``, ``last``/``this`` ``week``/``month``/
``year``, ``recently``, a weekday (``on Monday``: the last one before today), a month (``in March``,
``March 2025``: the last March not after this month when no year is said), a year (``in 2025``) and
a day (``on March 14``, ``14 March 2026``, ``2026-03-14``); ``since`` reaches to today. The words are
taken out of the query (they would only match notes that say "week"; a year stays: papers say "in
2001" too), and documents dated in that span (their own date, else when they last changed:
``common/dates.py``) rank higher: ``search/engine.py`` searches that span too and lifts what it finds.

A query asking for the newest state ("latest", "finally", "now") lifts the newest of its good
matches by their own dates (``lift_newest``); "before my trip to Japan" means the ``EVENT_DAYS``
before the own date of the document best matching "trip to Japan" (``event_words``).

English time words are always read; German, French and Spanish ones (``gestern``, ``vor zwei Tagen``,
``letzte Woche``, ``im März``; ``hier``, ``il y a 3 jours``, ``la semaine dernière``, ``en mars``;
``ayer``, ``hace dos días``, ``la semana pasada``, ``en marzo``) where the index holds documents in
that language; in other languages the query is searched as written.

Today is the machine's local date, or ``CTX_TODAY`` (an ISO date) when set, for tests and benchmarks.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from context_harness.common.dates import MONTH_PATTERN, month_number

TODAY_ENV = "CTX_TODAY"
TIME_BOOST = 1.0  # a document dated in the span of a query's time words, or the newest match: score x (1 + this)
LATEST_POOL = 50  # the matches a query asking for the latest looks at for the newest
LATEST_SHARE = 0.5  # ...of those scoring at least this share of the best
EVENT_DAYS = 30  # "before my trip": the days before the own date of the note telling of the trip
RECENT_DAYS = 30  # what "recently" and "lately" span
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_NUMBER = r"(\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_MONTH = MONTH_PATTERN
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = "(" + "|".join(_WEEKDAYS) + ")"
_LEAD = r"(?:in|during|from|since|over|back in|earlier in|early|late|mid|at the start of|at the end of)"


@dataclass(frozen=True)
class TimeSpan:
    """The days a query's time words mean (both included), and the words."""

    first: dt.date
    last: dt.date
    words: str

    def bounds(self) -> tuple[dt.datetime, dt.datetime]:
        """The span as UTC instants, from the first day's start to the last day's end."""
        start = dt.datetime.combine(self.first, dt.time(), tzinfo=dt.UTC)
        end = dt.datetime.combine(self.last, dt.time(23, 59, 59), tzinfo=dt.UTC)
        return start, end


def today() -> dt.date:
    """``CTX_TODAY`` when set (an ISO date), else the machine's local date."""
    if value := os.environ.get(TODAY_ENV, "").strip():
        return dt.date.fromisoformat(value[:10])
    return dt.date.today()


def _month_span(year: int, month: int) -> tuple[dt.date, dt.date]:
    first = dt.date(year, month, 1)
    following = dt.date(year + month // 12, month % 12 + 1, 1)
    return first, following - dt.timedelta(days=1)


def _months_back(day: dt.date, count: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 - count
    return index // 12, index % 12 + 1


def _week_of(day: dt.date) -> tuple[dt.date, dt.date]:
    monday = day - dt.timedelta(days=day.weekday())
    return monday, monday + dt.timedelta(days=6)


def _day(year: int, month: int | None, day: int) -> tuple[dt.date, dt.date] | None:
    try:
        found = dt.date(year, month or 0, day)
    except ValueError:
        return None
    return found, found


def _back(count: int, unit: str, now: dt.date) -> tuple[dt.date, dt.date]:
    """The day, calendar week, month or year ``count`` units (``day``, ``week``, ``month``, ``year``) ago."""
    if unit == "day":
        day = now - dt.timedelta(days=count)
        return day, day
    if unit == "week":
        return _week_of(now - dt.timedelta(weeks=count))
    if unit == "month":
        return _month_span(*_months_back(now, count))
    return dt.date(now.year - count, 1, 1), dt.date(now.year - count, 12, 31)


def _ago(m: re.Match, now: dt.date) -> tuple[dt.date, dt.date] | None:
    count = int(m[1]) if m[1].isdigit() else _NUMBERS[m[1].lower()]
    return _back(count, m[2].lower().rstrip("s"), now)


def _relative(m: re.Match, now: dt.date) -> tuple[dt.date, dt.date]:
    which, unit = m[1].lower(), m[2].lower()
    back = 1 if which in ("last", "past", "previous") else 0
    if unit == "week":
        return _week_of(now - dt.timedelta(weeks=back))
    if unit == "month":
        return _month_span(*_months_back(now, back))
    return dt.date(now.year - back, 1, 1), dt.date(now.year - back, 12, 31)


def _weekday(m: re.Match, now: dt.date) -> tuple[dt.date, dt.date]:
    back = (now.weekday() - _WEEKDAYS.index(m[1].lower())) % 7 or 7
    day = now - dt.timedelta(days=back)
    return day, day


def _month(m: re.Match, now: dt.date) -> tuple[dt.date, dt.date] | None:
    month = month_number(m[1])
    if month is None:
        return None
    year = int(m[2]) if m[2] else (now.year if month <= now.month else now.year - 1)
    return _month_span(year, month)


def _month_day(m: re.Match, now: dt.date) -> tuple[dt.date, dt.date] | None:
    month = month_number(m[1])
    year = int(m[3]) if m[3] else now.year
    span = _day(year, month, int(m[2]))
    if span is not None and not m[3] and span[0] > now:  # "on December 30" said in January: last year's
        span = _day(year - 1, month, int(m[2]))
    return span


def _day_month(m: re.Match, now: dt.date) -> tuple[dt.date, dt.date] | None:
    month = month_number(m[2])
    year = int(m[3]) if m[3] else now.year
    span = _day(year, month, int(m[1]))
    if span is not None and not m[3] and span[0] > now:
        span = _day(year - 1, month, int(m[1]))
    return span


Resolver = Callable[[re.Match, dt.date], "tuple[dt.date, dt.date] | None"]
# Most specific first: the first that matches wins.
_PATTERNS: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), lambda m, now: _day(int(m[1]), int(m[2]), int(m[3]))),
    (re.compile(rf"\b(?:on\s+)?(?:the\s+)?{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", re.I),
     _month_day),
    (re.compile(rf"\b(?:on\s+)?(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+(\d{{4}}))?\b",
                re.I), _day_month),
    (re.compile(r"\bthe day before yesterday\b", re.I), lambda m, now: (now - dt.timedelta(days=2),) * 2),
    (re.compile(r"\byesterday\b", re.I), lambda m, now: (now - dt.timedelta(days=1),) * 2),
    (re.compile(r"\btoday\b|\bthis (?:morning|afternoon|evening)\b|\btonight\b", re.I), lambda m, now: (now, now)),
    (re.compile(rf"\b{_NUMBER}\s+(days?|weeks?|months?|years?)\s+ago\b", re.I), _ago),
    (re.compile(r"\b(?:(?:in|during|over)\s+)?(?:the\s+)?(last|past|previous|this)\s+(week|month|year)\b", re.I),
     _relative),
    (re.compile(r"\b(?:recently|lately|in the last few weeks)\b", re.I),
     lambda m, now: (now - dt.timedelta(days=RECENT_DAYS), now)),
    (re.compile(rf"\b(?:on\s+|last\s+)?{_WEEKDAY}\b", re.I), _weekday),
    (re.compile(rf"\b{_LEAD}[\s-]+{_MONTH}(?:\s+(\d{{4}}))?\b", re.I), _month),  # not a bare "may"
    (re.compile(rf"\b{_MONTH}\s+(\d{{4}})\b", re.I), _month),
    (re.compile(r"\b(?:in|during|from|since|back in|throughout)\s+(\d{4})\b", re.I),
     lambda m, now: (dt.date(int(m[1]), 1, 1), dt.date(int(m[1]), 12, 31))),
]


_YEAR = re.compile(r"\d{4}")


@dataclass(frozen=True)
class _Words:
    """One language's time words: regex alternatives (lowercase), each unit word -> day/week/month/year."""

    yesterday: str
    before_yesterday: str
    today: str
    ago: str  # the expression around "{n} {unit}": "vor {n} {unit}", "il y a {n} {unit}"
    numbers: dict[str, int]
    units: dict[str, str]
    last: str  # "{unit}" with the words that make it the previous one: "(?:letzte[nr]?) {unit}"
    this: str
    month_lead: str  # what says "in" before a month name
    months: tuple[str, ...]  # January..December, with variants split by "|"


_OTHER = {
    "de": _Words("gestern", "vorgestern", "heute", r"vor {n} {unit}",
                 {"einem": 1, "einer": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7,
                  "acht": 8, "neun": 9, "zehn": 10},
                 {"tag": "day", "tagen": "day", "woche": "week", "wochen": "week", "monat": "month",
                  "monaten": "month", "jahr": "year", "jahren": "year"},
                 r"(?:letzte[nmrs]?|vergangene[nmrs]?|vorige[nmrs]?) {unit}", r"(?:diese[nmrs]?) {unit}",
                 r"(?:im|in|seit)",
                 ("januar|jänner", "februar", "märz|maerz", "april", "mai", "juni", "juli", "august", "september",
                  "oktober", "november", "dezember")),
    "fr": _Words("hier", "avant-hier", "aujourd'hui|aujourd’hui", r"il y a {n} {unit}",
                 {"un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6, "sept": 7,
                  "huit": 8, "neuf": 9, "dix": 10},
                 {"jour": "day", "jours": "day", "semaine": "week", "semaines": "week", "mois": "month",
                  "an": "year", "ans": "year", "année": "year", "années": "year"},
                 r"(?:la |le |l'|l’){unit} (?:derni[eè]re?|pass[ée]e?)", r"(?:cette |ce |cet ){unit}(?:-ci)?",
                 r"(?:en|au mois de|depuis)",
                 ("janvier", "février|fevrier", "mars", "avril", "mai", "juin", "juillet", "août|aout", "septembre",
                  "octobre", "novembre", "décembre|decembre")),
    "es": _Words("ayer", "anteayer|antier", "hoy", r"hace {n} {unit}",
                 {"un": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7,
                  "ocho": 8, "nueve": 9, "diez": 10},
                 {"día": "day", "días": "day", "dia": "day", "dias": "day", "semana": "week", "semanas": "week",
                  "mes": "month", "meses": "month", "año": "year", "años": "year"},
                 r"(?:la |el ){unit} pasad[oa]", r"(?:esta |este ){unit}", r"(?:en|desde)",
                 ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre|setiembre",
                  "octubre", "noviembre", "diciembre")),
}


def _patterns_of(words: _Words, skip_yesterday: bool) -> list[tuple[re.Pattern[str], Resolver]]:
    """``words`` as patterns in the order English's are tried."""
    number = "(" + "|".join([r"\d{1,3}", *sorted(words.numbers, key=len, reverse=True)]) + ")"
    unit = "(" + "|".join(sorted(words.units, key=len, reverse=True)) + ")"
    months = [name.split("|") for name in words.months]
    month = "(" + "|".join(n for names in months for n in names) + ")"

    def count(text: str) -> int:
        return int(text) if text.isdigit() else words.numbers[text.lower()]

    def month_of(m: re.Match, now: dt.date) -> tuple[dt.date, dt.date]:
        index = next(i for i, names in enumerate(months, 1) if m[1].lower() in names)
        year = int(m[2]) if m[2] else (now.year if index <= now.month else now.year - 1)
        return _month_span(year, index)

    out: list[tuple[re.Pattern[str], Resolver]] = [
        (re.compile(rf"(?<!\w)(?:{words.before_yesterday})(?!\w)", re.I),
         lambda m, now: (now - dt.timedelta(days=2),) * 2)]
    if not skip_yesterday:
        out.append((re.compile(rf"(?<!\w)(?:{words.yesterday})(?!\w)", re.I),
                    lambda m, now: (now - dt.timedelta(days=1),) * 2))
    out += [
        (re.compile(rf"(?<!\w)(?:{words.today})(?!\w)", re.I), lambda m, now: (now, now)),
        (re.compile(r"(?<!\w)" + words.ago.format(n=number, unit=unit) + r"(?!\w)", re.I),
         lambda m, now: _back(count(m[1]), words.units[m[2].lower()], now)),
        (re.compile(r"(?<!\w)" + words.last.format(unit=unit) + r"(?!\w)", re.I),
         lambda m, now: _back(1, words.units[m[1].lower()], now)),
        (re.compile(r"(?<!\w)" + words.this.format(unit=unit) + r"(?!\w)", re.I),
         lambda m, now: _back(0, words.units[m[1].lower()], now)),
        (re.compile(rf"(?<!\w){words.month_lead}\s+{month}(?:\s+(?:de\s+)?(\d{{4}}))?(?!\w)", re.I), month_of),
    ]
    return out


@functools.cache
def _patterns(languages: frozenset[str]) -> list[tuple[re.Pattern[str], Resolver]]:
    """English's patterns, then those of the other languages the index holds (French "hier" not when it
    holds German too: there it means "here")."""
    out = list(_PATTERNS)
    for code in sorted(languages & set(_OTHER)):
        out += _patterns_of(_OTHER[code], skip_yesterday=code == "fr" and "de" in languages)
    return out


def resolve(query: str, now: dt.date, languages: Iterable[str] = ()) -> tuple[str, TimeSpan] | None:
    """(the query without its time words, the span they mean) for the first time expression of the
    query that means a span not after today; None when it says none. English time words are always
    read; German, French and Spanish ones where ``languages`` (the index's) has them."""
    for pattern, meaning in _patterns(frozenset(languages)):
        for m in pattern.finditer(query):
            span = meaning(m, now)
            if span is None or span[0] > now:
                continue
            words = m[0].strip()
            last = now if words.lower().startswith(("since", "seit", "depuis", "desde")) else min(span[1], now)
            if _YEAR.search(words):  # a year is a word documents say too ("in 2001"): it stays in the query
                return query, TimeSpan(span[0], last, words)
            rest = f"{query[:m.start()]} {query[m.end():]}"
            rest = re.sub(r"\s+([,.?!])", r"\1", " ".join(rest.split())).strip(" ,")
            return rest, TimeSpan(span[0], last, words)
    return None


_EVENT = re.compile(r"\b(?:(?:just|right|shortly|soon)\s+)?(before|after)\s+(?:my|our)\s+([^?.!,;:]{3,80})", re.I)


_EITHER = re.compile(r"\b(?:before or after|after or before)\b", re.I)


@dataclass(frozen=True)
class Event:
    """An event a query dates itself by ("just before my trip to Japan"): the query without it, whether
    before or after, and the event's words, to find the document telling of it."""

    rest: str
    after: bool
    words: str

    def span(self, dated: str) -> TimeSpan:
        """The ``EVENT_DAYS`` before (or after) the event's document's own date ``dated``."""
        day = dt.date.fromisoformat(dated[:10])
        one, reach = dt.timedelta(days=1), dt.timedelta(days=EVENT_DAYS)
        first, last = (day + one, day + reach) if self.after else (day - reach, day - one)
        return TimeSpan(first, last, f"{'after' if self.after else 'before'} {self.words} ({day})")


def event_words(query: str) -> Event | None:
    """The event of "before my trip to Japan", "after our move" (English, "my"/"our": what the user lived)."""
    m = _EVENT.search(query)
    if m is None or not m[2].strip() or _EITHER.search(query):  # "before or after my trip": a comparison
        return None
    rest = re.sub(r"\s+([,.?!])", r"\1", " ".join(f"{query[:m.start()]} {query[m.end():]}".split())).strip(" ,")
    return Event(rest or query, m[1].lower() == "after", m[2].strip())


_LATEST = re.compile(r"\b(?:latest|most recent(?:ly)?|newest|finally|in the end|currently|nowadays|these days|"
                     r"now|anymore|still)\b", re.I)


def asks_latest(query: str) -> bool:
    """Whether the query asks for the newest state of things ("What did I finally decide", "my rent now")."""
    return _LATEST.search(query) is not None


class Ranked(Protocol):
    doc_id: str
    score: float
    explain: Any


R = TypeVar("R", bound=Ranked)


def _lifted(item: R, why: str) -> R:
    if item.explain is not None:
        item.explain.notes.append(f"{why}: score x{1 + TIME_BOOST}")
    return replace(item, score=item.score * (1 + TIME_BOOST) if item.score > 0 else item.score)  # type: ignore[type-var]


def lift_spanned(candidates: list[R], within: list[R], span: TimeSpan, limit: int) -> list[R]:
    """The candidates with those dated in ``span`` (``within``: the same search kept to the span)
    lifted, best ``limit`` first (a document in both lists: its better score)."""
    found = {c.doc_id: c for c in candidates}
    for c in within:
        lifted = _lifted(c, f"dated in '{span.words}' ({span.first}..{span.last})")
        if c.doc_id not in found or found[c.doc_id].score < lifted.score:
            found[c.doc_id] = lifted
    return sorted(found.values(), key=lambda c: (-c.score, c.doc_id))[:limit]


def lift_newest(candidates: list[R], dates: dict[str, str | None], limit: int) -> list[R]:
    """The candidates with the newest of the good matches (scoring ``LATEST_SHARE`` of the best or
    more) by ``dates`` (their own: a file's time says when it was saved, not of when it tells) lifted,
    best ``limit`` first; the others as they were."""
    best = max((c.score for c in candidates), default=0.0)
    good = [c for c in candidates if best > 0 and c.score >= LATEST_SHARE * best and dates.get(c.doc_id)]
    newest = max((dates[c.doc_id] or "" for c in good), default=None)
    out = [_lifted(c, f"the newest good match ({newest[:10]})") if newest and c in good and dates[c.doc_id] == newest
           else c for c in candidates]
    return sorted(out, key=lambda c: (-c.score, c.doc_id))[:limit]
