"""The sync history (the ``sync_history`` table of schema 6) on both backends, through the real
``Harness`` over a temporary workspace: SQLite and a real PostgreSQL (``support/postgres.py``).
Each whole sync that ends adds one entry with its outcome, times and counts (a failed one its error;
not a dry run, not a path sync of the live index); a source keeps its newest 50, listed newest
first; a schema-5 database migrates keeping its data; ``ctx db migrate --to postgres`` copies it."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import NotConfigured
from context_harness.store.backend import DocumentStorage
from context_harness.store.records import SyncEntry
from context_harness.store.schema import HISTORY_KEPT, POSTGRES_SCHEMA_VERSION, SCHEMA_VERSION
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio
LABEL = "filesystem:docs"


def store_of(h: Harness) -> DocumentStorage:
    assert h.store is not None
    return h.store


def entry(n: int, source: str = "s3:bucket", outcome: str = "ok") -> SyncEntry:
    return SyncEntry(source, outcome, "the bucket was gone" if outcome == "error" else None,
                     f"2026-11-28T10:{n // 60:02d}:{n % 60:02d}Z", f"2026-11-28T11:{n // 60:02d}:{n % 60:02d}Z",
                     n + 0.25, *((None,) * 5 if outcome == "error" else (n, 1, 0, 100 - n, 2)))


async def test_a_source_keeps_its_newest_50_syncs_newest_first(harness: Harness) -> None:
    store = store_of(harness)
    assert store.sync_history() == []
    mine = [entry(n, outcome="error" if n % 7 == 0 else "ok") for n in range(HISTORY_KEPT + 12)]
    other = [entry(n, source="web:site") for n in range(3)]
    for n, one in enumerate(mine):
        store.record_history(one)
        if n < len(other):
            store.record_history(other[n])
    assert HISTORY_KEPT == 50
    kept = store.sync_history("s3:bucket", limit=None)
    assert kept == mine[::-1][:50]  # the 12 oldest went; the error entries keep their error and no counts
    assert kept[-1] == entry(12) and kept[0] == entry(61) and entry(56, outcome="error") in kept
    assert store.sync_history("web:site", limit=None) == other[::-1]  # another source's cap is its own
    assert store.sync_history("s3:bucket", limit=3) == mine[::-1][:3]
    assert store.sync_history(limit=None)[:1] == [mine[-1]] and len(store.sync_history(limit=None)) == 53
    assert len(store.sync_history()) == 20  # the default limit
    assert store.sync_history("nobody") == [] and store.sync_history(limit=0) == []


async def test_each_whole_sync_that_ends_adds_an_entry_with_its_counts(harness: Harness,
                                                                       workspace: Workspace) -> None:
    first = (await harness.sync()).sources[0]
    assert first.added == 3
    shutil.move(workspace.docs, workspace.root / "moved")
    with pytest.raises(NotConfigured):
        await harness.sync()
    shutil.move(workspace.root / "moved", workspace.docs)
    workspace.write("new.md", "# New\n\nA fourth document.\n")
    (workspace.docs / "blob.md").write_bytes(b"\x00\x01binary")
    await harness.sync(dry_run=True)  # not an outcome: no entry
    last = (await harness.sync()).sources[0]
    assert (last.added, last.updated, last.deleted, last.unchanged, last.skipped) == (1, 0, 0, 3, 1)
    workspace.write("new.md", "# New\n\nA fourth document, edited.\n")
    await harness.sync_paths(LABEL, ["new.md"])  # the live index's per-file sync: no entry

    history = await harness.sync_history()
    assert [(h["source"], h["outcome"]) for h in history] == [(LABEL, "ok"), (LABEL, "error"), (LABEL, "ok")]
    newest, failed, oldest = history
    assert {k: newest[k] for k in ("added", "updated", "deleted", "unchanged", "skipped", "error")} == \
        {"added": 1, "updated": 0, "deleted": 0, "unchanged": 3, "skipped": 1, "error": None}
    assert (oldest["added"], oldest["unchanged"]) == (3, 0)
    assert failed["error"] is not None and "fix its root in the config" in failed["error"]
    assert [failed[k] for k in ("added", "updated", "deleted", "unchanged", "skipped")] == [None] * 5
    for one in history:
        assert one["started_at"] <= one["ended_at"] and 0 <= one["seconds"] < 60
        assert one["started_at"].endswith("Z") and len(one["started_at"]) == 20
    assert oldest["ended_at"] <= failed["started_at"] and failed["ended_at"] <= newest["started_at"]
    # the outcome the table keeps is the newest entry's
    stored = store_of(harness).outcomes()[LABEL]
    assert (stored.outcome, stored.at) == ("ok", newest["ended_at"])
    assert await harness.sync_history(LABEL, limit=1) == history[:1]
    assert await harness.sync_history("web:nowhere") == []


async def test_syncs_in_a_row_that_change_nothing_are_one_entry(harness: Harness, workspace: Workspace) -> None:
    """A source polled every few seconds syncs whole each time: its quiet syncs make one entry that
    counts them (from the first's start to the last's end), so real changes stay in the history."""
    await harness.sync()
    for _ in range(4):  # nothing changed
        await harness.sync()
    history = await harness.sync_history(LABEL)
    assert [(h["added"], h["repeats"]) for h in history] == [(0, 4), (3, 1)]
    quiet, first = history
    assert first["ended_at"] <= quiet["started_at"] <= quiet["ended_at"] and quiet["unchanged"] == 3
    workspace.write("new.md", "# New\n\nA fourth document.\n")
    await harness.sync()  # a change: an entry of its own, and the quiet run after it starts again
    await harness.sync()
    assert [(h["added"], h["repeats"]) for h in await harness.sync_history(LABEL)] == [(0, 1), (1, 1), (0, 4), (3, 1)]


async def test_a_schema_5_database_migrates_keeping_its_data(workspace: Workspace, backend: str,
                                                                 url: str | None) -> None:
    fake.register()
    write_sample_docs(workspace)
    config = backend_config(workspace, backend, url)
    run = {"id": "r20261128-183012-ab12", "agent": "filer", "status": "finished", "started_at": "2026-11-28T18:30:12Z",
           "steps": [{"kind": "message", "text": "done"}]}
    async with Harness.open(config) as h:
        await h.sync()
        store = store_of(h)
        store.save_run(run)
        documents, outcomes, skips = store.counts(), store.outcomes(), store.remembered_skips(LABEL)
        assert documents[0] == 3 and outcomes[LABEL].outcome == "ok"
        with (store.db.transaction() if backend == "postgres" else store.transaction()) as conn:  # type: ignore[attr-defined]
            conn.execute("DROP TABLE sync_history")
            conn.execute(f"UPDATE {'ctx_meta' if backend == 'postgres' else 'meta'} SET value = '5' "
                         "WHERE key = 'schema_version'")
        assert store.schema_version == 5
    async with Harness.open(config) as h:
        store = store_of(h)
        assert store.schema_version == (POSTGRES_SCHEMA_VERSION if backend == "postgres" else SCHEMA_VERSION)
        assert store.counts() == documents and store.outcomes() == outcomes
        assert store.remembered_skips(LABEL) == skips and store.run(run["id"]) == run
        assert await h.sync_history() == []  # the history starts with the migration
        again = (await h.sync()).sources[0]
        assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
        assert [(e["outcome"], e["unchanged"]) for e in await h.sync_history()] == [("ok", 3)]


async def test_db_migrate_copies_the_sync_history_in_its_order(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_sample_docs(workspace)
    async with Harness.open(backend_config(workspace, "embedded", None)) as embedded:
        source = store_of(embedded)
        for n in range(3):
            source.record_history(entry(n, outcome="error" if n == 1 else "ok"))
        await embedded.sync()
        history: list[dict[str, Any]] = await embedded.sync_history(limit=100)
        assert len(history) == 4 and history[0]["source"] == LABEL
        await embedded.migrate_to_postgres(pg_url)
    async with Harness.open(backend_config(workspace, "postgres", pg_url)) as moved:
        assert await moved.sync_history(limit=100) == history  # with their own times, not the copy's
        await moved.sync()
        after = await moved.sync_history(limit=100)
        assert after[1:] == history and after[0]["unchanged"] == 3


def test_only_whole_syncs_that_end_are_handed_on_with_their_summary() -> None:
    """``Activity.syncing`` (the Harness hands what it gets to the store): a whole sync that ends ok
    or with an error is handed on once, with its times and summary; a dry run, a path sync and an
    interrupted sync (Ctrl-C, a Rust panic: a ``BaseException``) are not."""
    from context_harness.core.activity import Activity, EndedSync
    from context_harness.models import SyncSummary

    got: list[EndedSync] = []
    activity = Activity(got.append)
    with activity.syncing(LABEL) as state:
        state.summary = SyncSummary(source=LABEL, added=2, unchanged=5)
    with pytest.raises(NotConfigured), activity.syncing(LABEL):
        raise NotConfigured("the root is gone; fix its root in the config")
    with activity.syncing(LABEL, remember=False) as state:  # a dry run
        state.summary = SyncSummary(source=LABEL, added=9, dry_run=True)
    with activity.syncing(LABEL, "paths") as state:
        state.summary = SyncSummary(source=LABEL, updated=1)
    with pytest.raises(KeyboardInterrupt), activity.syncing(LABEL):
        raise KeyboardInterrupt
    assert [(e.outcome, e.error, e.summary) for e in got] == [
        ("ok", None, SyncSummary(source=LABEL, added=2, unchanged=5)),
        ("error", "the root is gone; fix its root in the config", None)]  # not the first sync's summary
    assert all(e.source == LABEL and e.started_at <= e.ended_at and 0 <= e.seconds < 5 for e in got)
