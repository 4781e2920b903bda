"""A note's own date (front matter, title or file name: ``common/dates.py``) on both backends: stored,
shown in results, used by the ``since``/``until`` filters in every mode, filled for the documents of
a store written before it existed, and the time words of a query lifting what is dated then."""

from __future__ import annotations

import sqlite3

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import SearchFilters, SearchRequest
from support.workspace import Workspace, backend_config

pytestmark = pytest.mark.anyio


def write_dated_notes(workspace: Workspace) -> None:
    """Files written now (their times are today), dated months ago by what they say."""
    workspace.write("fence-a.md", "---\ndate: 2026-03-14\n---\n# Fence\n\nWe chose cedar boards for the fence.\n")
    workspace.write("Session 2026-05-02 fence.md", "# Session 2026-05-02: fence\n\nThe fence gets a gate.\n")
    workspace.write("2026-07-20-fence.md", "# Fence again\n\nThe fence will be painted green.\n")
    workspace.write("undated.md", "# Undated\n\nA fence note that names no date.\n")


async def dated(h: Harness, **filters) -> dict[str, str | None]:
    found = await h.search(SearchRequest(query="fence", mode="keyword", filters=SearchFilters(**filters)))
    return {r.title or "": r.date for r in found.results}


@pytest.mark.parametrize("backend", ["embedded", "postgres", "postgres-sql"])
async def test_the_own_date_is_stored_shown_and_filtered_on(workspace: Workspace, backend: str,
                                                            request: pytest.FixtureRequest) -> None:
    fake.register()
    write_dated_notes(workspace)
    url = request.getfixturevalue("pg_url") if backend != "embedded" else None
    async with Harness.open(backend_config(workspace, backend, url)) as h:
        await h.sync()
        every = await dated(h)
        assert every["Fence"] == "2026-03-14T00:00:00Z"
        assert every["Session 2026-05-02: fence"] == "2026-05-02T00:00:00Z"
        assert every["Fence again"] == "2026-07-20T00:00:00Z"
        assert every["Undated"] is None
        assert set(await dated(h, until="2026-05-02")) == {"Fence", "Session 2026-05-02: fence"}
        assert set(await dated(h, since="2026-05-03", until="2026-08-01")) == {"Fence again"}
        assert set(await dated(h, since="2026-03-15")) == {"Session 2026-05-02: fence", "Fence again", "Undated"}
        for mode in ("semantic", "hybrid"):
            found = await h.search(SearchRequest(query="fence", mode=mode, filters=SearchFilters(until="2026-04-01")))
            assert [r.title for r in found.results] == ["Fence"], mode


async def test_a_store_from_before_gets_its_documents_dates(workspace: Workspace, backend: str,
                                                             url: str | None) -> None:
    """The migration (SQLite schema 8, PostgreSQL 10) fills the date of every stored document."""
    fake.register()
    write_dated_notes(workspace)
    config = backend_config(workspace, backend, url)
    async with Harness.open(config) as h:
        await h.sync()
    undo = ["DROP INDEX documents_dated", "ALTER TABLE documents DROP COLUMN dated"]
    if backend == "embedded":
        with sqlite3.connect(workspace.root / "data" / "ctx.sqlite") as conn:
            for statement in undo:
                conn.execute(statement)
            conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            for statement in undo:
                pg.execute(statement)
            pg.execute("UPDATE ctx_meta SET value = '9' WHERE key = 'schema_version'")
    async with Harness.open(config) as h:
        assert (await dated(h))["Fence"] == "2026-03-14T00:00:00Z"
        assert set(await dated(h, until="2026-05-02")) == {"Fence", "Session 2026-05-02: fence"}


async def test_last_week_lifts_the_note_of_last_week_over_a_better_match(workspace: Workspace, backend: str,
                                                                          url: str | None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """"last week", resolved against a fixed today, puts last week's note first, above a note from months
    ago that matches the words better; without the time words (or with a date the client gives), the
    better match stays first."""
    fake.register()
    monkeypatch.setenv("CTX_TODAY", "2026-12-08")
    workspace.write("march.md", "---\ndate: 2026-03-10\n---\n# Fence\n\nThe fence decision: cedar boards for the fence.\n")
    workspace.write("last-week.md", "---\ndate: 2026-12-02\n---\n# Chat\n\nAnother fence decision: green paint. The "
                    "weather was cold and the train was late.\n")
    workspace.write("other.md", "---\ndate: 2026-12-03\n---\n# Chat\n\nThe kitchen tiles are terracotta.\n")
    async with Harness.open(backend_config(workspace, backend, url)) as h:
        await h.sync()
        for mode in ("keyword", "hybrid"):
            plain = await h.search(SearchRequest(query="fence decision", mode=mode))
            assert plain.results[0].source_id == "march.md", mode
            timed = await h.search(SearchRequest(query="fence decision last week", mode=mode,
                                                 explain=True))
            assert timed.results[0].source_id == "last-week.md", mode
            assert timed.results[0].date == "2026-12-02T00:00:00Z"
            assert any("last week" in note for note in timed.results[0].explain.notes), mode
            assert "march.md" in [r.source_id for r in timed.results], mode  # lifted, not filtered
            given = await h.search(SearchRequest(query="fence decision last week", mode=mode,
                                                 filters=SearchFilters(since="2026-01-01")))
            assert given.results[0].source_id == "march.md", mode  # the client's date: the words are words


async def test_asking_for_the_latest_lifts_the_newest_good_match(workspace: Workspace, backend: str,
                                                                  url: str | None) -> None:
    """"now", "finally", "latest": of the notes matching well, the one with the newest own date comes first,
    above an older one matching better; a file's own time does not count (it says when it was saved)."""
    fake.register()
    workspace.write("old.md", "---\ndate: 2026-01-10\n---\n# Rent\n\nThe rent: the landlord keeps the rent at 1,150.\n")
    workspace.write("new.md", "---\ndate: 2026-06-02\n---\n# Chat\n\nThe landlord raised the rent to 1,240 from July "
                    "and the heating is finally fixed.\n")
    workspace.write("undated.md", "# Chat\n\nSomething about rent.\n")  # saved today, no date of its own
    async with Harness.open(backend_config(workspace, backend, url)) as h:
        await h.sync()
        plain = await h.search(SearchRequest(query="rent landlord", mode="keyword"))
        assert plain.results[0].source_id == "old.md"
        latest = await h.search(SearchRequest(query="rent landlord now", mode="keyword", explain=True))
        assert latest.results[0].source_id == "new.md"
        assert any("newest" in note for note in latest.results[0].explain.notes)


async def test_german_time_words_where_the_notes_are_german(workspace: Workspace, backend: str,
                                                             url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.register()
    monkeypatch.setenv("CTX_TODAY", "2026-12-08")
    workspace.write("maerz.md", "---\ndate: 2026-03-10\n---\n# Notiz\n\nDie Entscheidung zum Zaun: Zedernholz für "
                    "den Zaun.\n")
    workspace.write("woche.md", "---\ndate: 2026-12-02\n---\n# Gespräch\n\nNoch eine Entscheidung zum Zaun: grüne "
                    "Farbe. Das Wetter war kalt.\n")
    async with Harness.open(backend_config(workspace, backend, url, language="de")) as h:
        await h.sync()
        plain = await h.search(SearchRequest(query="Zaun Entscheidung", mode="keyword"))
        assert plain.results[0].source_id == "maerz.md"
        timed = await h.search(SearchRequest(query="Zaun Entscheidung letzte Woche", mode="keyword"))
        assert timed.results[0].source_id == "woche.md"


async def test_a_message_is_dated_by_its_date_header(workspace: Workspace, backend: str, url: str | None) -> None:
    fake.register()
    workspace.write("fence.eml", "From: a@example.org\nTo: b@example.org\nSubject: Re: fence\n"
                    "Date: Sat, 14 Mar 2026 10:30:00 +0100\nMessage-ID: <1@example.org>\n\nThe fence is done.\n")
    async with Harness.open(backend_config(workspace, backend, url)) as h:
        await h.sync()
        assert await dated(h) == {"Re: fence": "2026-03-14T09:30:00Z"}


async def test_before_my_trip_means_the_days_before_the_note_of_the_trip(workspace: Workspace, backend: str,
                                                                          url: str | None) -> None:
    fake.register()
    workspace.write("trip.md", "---\ndate: 2026-08-14\n---\n# Japan\n\nBooked the flights for the trip to Japan.\n")
    workspace.write("july.md", "---\ndate: 2026-08-01\n---\n# Chat\n\nFence: we will paint it. The weather was "
                    "hot all day.\n")
    workspace.write("march.md", "---\ndate: 2026-03-10\n---\n# Notes\n\nThe fence decision: cedar for the fence.\n")
    async with Harness.open(backend_config(workspace, backend, url)) as h:
        await h.sync()
        assert (await h.search(SearchRequest(query="fence", mode="keyword"))).results[0].source_id == "march.md"
        found = await h.search(SearchRequest(query="fence just before my trip to Japan", mode="keyword",
                                             explain=True))
        assert found.results[0].source_id == "july.md"
        assert any("before trip to Japan (2026-08-14)" in note for note in found.results[0].explain.notes)
