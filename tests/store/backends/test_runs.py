"""The records of agent runs (``store/runs.py``, the ``agent_runs`` table of schema 5; their steps one
row each in ``agent_run_steps`` since schema 7: ``test_run_steps.py``) on both backends,
through the real ``Harness`` over a temporary workspace: SQLite and a real PostgreSQL
(``support/postgres.py``). Saved, replaced by id, listed newest first without their steps, filtered
by agent, cut at a limit, a record of several MB whole; a schema-4 database migrates keeping its
data; ``ctx db migrate --to postgres`` copies the runs (and the sync outcomes and remembered skips)."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.store.backend import DocumentStorage
from context_harness.store.schema import POSTGRES_SCHEMA_VERSION, SCHEMA_VERSION
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio


def store_of(h: Harness) -> DocumentStorage:
    assert h.store is not None
    return h.store


def record(run_id: str, agent: str = "note-filer", started: str = "2026-11-28T18:30:12Z", steps: int = 2,
           **extra: Any) -> dict[str, Any]:
    return {"id": run_id, "agent": agent, "task": f"task of {run_id}", "model": "local", "arguments": {"day": "today"},
            "status": "running", "reason": None, "started_at": started, "ended_at": None,
            "tokens": {"prompt": 10, "completion": 3}, "answer": None,
            "steps": [{"kind": "tool_call", "tool": "search", "arguments": {"query": f"q{i}"}, "result": {"n": i}}
                      for i in range(steps)], **extra}


def listed(full: dict[str, Any]) -> dict[str, Any]:
    """What ``runs`` shows of a record: everything but its steps, and how many there are."""
    return {**{k: v for k, v in full.items() if k != "steps"}, "step_count": len(full["steps"])}


async def test_a_run_is_saved_replaced_and_read_back_whole(harness: Harness) -> None:
    store = store_of(harness)
    assert store.runs() == [] and store.run("r-none") is None
    first = record("r20261128-183012-ab12", steps=1)
    store.save_run(first)
    assert store.run(first["id"]) == first
    assert store.runs() == [listed(first)]

    # after each step the loop saves the whole record again: the same id is replaced, not added
    finished = copy.deepcopy(first)
    finished["steps"].append({"kind": "message", "text": "filed 3 notes", "tokens": {"prompt": 40}})
    finished.update(status="finished", ended_at="2026-11-28T18:31:00Z", answer="filed 3 notes",
                    tokens={"prompt": 50, "completion": 9})
    store.save_run(finished)
    assert store.run(first["id"]) == finished
    assert store.runs() == [listed(finished)] and store.runs()[0]["step_count"] == 2

    # text a model may answer with: NUL (PostgreSQL text holds none), a lone surrogate, emoji, RTL
    odd = record("r20261128-183013-odd", steps=0, answer="nul\x00 lone\ud800 emoji 🦎 עברית")
    store.save_run(odd)
    assert store.run(odd["id"]) == odd


async def test_runs_are_listed_newest_first_by_agent_and_up_to_a_limit(harness: Harness) -> None:
    store = store_of(harness)
    saved = [record(f"r2026112{day}-0900{n}0-x{day}{n}", agent="filer" if n % 2 else "summariser",
                    started=f"2026-11-2{day}T09:00:{n}0Z", steps=n) for day in (3, 1, 2) for n in range(3)]
    for one in saved:
        store.save_run(one)
    newest_first = sorted(saved, key=lambda r: r["started_at"], reverse=True)
    assert [r["id"] for r in store.runs()] == [r["id"] for r in newest_first]
    assert store.runs() == [listed(r) for r in newest_first]
    assert all("steps" not in r for r in store.runs())
    assert [r["id"] for r in store.runs(limit=4)] == [r["id"] for r in newest_first[:4]]
    assert store.runs(limit=0) == []
    assert len(store.runs(limit=None)) == len(saved) == 9
    filers = [r["id"] for r in newest_first if r["agent"] == "filer"]
    assert [r["id"] for r in store.runs(agent="filer")] == filers and len(filers) == 3
    assert [r["id"] for r in store.runs(limit=2, agent="summariser")] == \
        [r["id"] for r in newest_first if r["agent"] == "summariser"][:2]
    assert store.runs(agent="nobody") == []
    # started in the same second: the id (which sorts by start time) decides
    store.save_run(record("r20261129-000000-aaaa", started="2026-11-29T00:00:00Z"))
    store.save_run(record("r20261129-000000-bbbb", started="2026-11-29T00:00:00Z"))
    assert [r["id"] for r in store.runs(limit=2)] == ["r20261129-000000-bbbb", "r20261129-000000-aaaa"]


async def test_a_record_of_several_megabytes_is_kept_whole_and_listing_does_not_read_its_steps(
        harness: Harness) -> None:
    store = store_of(harness)
    big = record("r20261128-200000-big", steps=0)
    big["steps"] = [{"kind": "tool_result", "tool": "get", "text": f"{i:05d} " + "lorem ipsum " * 2_000}
                    for i in range(300)]  # ~7 MB of JSON
    store.save_run(big)
    small = record("r20261128-190000-small")
    store.save_run(small)
    assert store.run(big["id"]) == big
    started = time.perf_counter()
    listing = store.runs()
    took = time.perf_counter() - started
    assert listing == [listed(big), listed(small)] and listing[0]["step_count"] == 300
    assert took < 1.0, took  # the steps are not read: benchmarks/agent_runs.py lists 50 runs in ~0.4 ms


async def test_a_record_without_what_a_listing_needs_is_refused(harness: Harness) -> None:
    store = store_of(harness)
    with pytest.raises(ValueError, match="needs status, started_at"):
        store.save_run({"id": "r1", "agent": "a"})
    assert store.runs() == []


async def test_a_schema_4_database_migrates_keeping_its_data(workspace: Workspace, backend: str,
                                                                 url: str | None) -> None:
    fake.register()
    write_sample_docs(workspace)
    config = backend_config(workspace, backend, url)
    async with Harness.open(config) as h:
        await h.sync()
        store = store_of(h)
        documents, outcomes = store.counts(), store.outcomes()
        assert documents[0] == 3 and outcomes["filesystem:docs"].outcome == "ok"
        if backend == "postgres":
            with store.db.transaction() as conn:  # type: ignore[attr-defined]
                conn.execute("DROP TABLE agent_run_steps")
                conn.execute("DROP TABLE agent_runs")
                conn.execute("UPDATE ctx_meta SET value = '4' WHERE key = 'schema_version'")
        else:
            with store.transaction() as conn:  # type: ignore[attr-defined]
                conn.execute("DROP TABLE agent_run_steps")
                conn.execute("DROP TABLE agent_runs")
                conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        assert store.schema_version == 4
    async with Harness.open(config) as h:
        store = store_of(h)
        assert store.schema_version == (POSTGRES_SCHEMA_VERSION if backend == "postgres" else SCHEMA_VERSION)
        assert store.counts() == documents and store.outcomes() == outcomes
        store.save_run(record("r20261128-183012-ab12"))
        assert [r["id"] for r in store.runs()] == ["r20261128-183012-ab12"]
        again = (await h.sync()).sources[0]
        assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)


async def test_db_migrate_copies_the_runs_outcomes_and_remembered_skips(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_sample_docs(workspace)
    (workspace.docs / "blob.md").write_bytes(b"\x00\x01binary")  # skipped for what it holds, and remembered
    runs = [record(f"r20261128-1{n}0000-m{n}", agent=f"agent-{n % 2}", started=f"2026-11-28T1{n}:00:00Z", steps=n)
            for n in range(4)]
    runs[3]["steps"] = [{"kind": "tool_result", "text": "x" * 1_000_000} for _ in range(3)]  # 3 MB
    async with Harness.open(backend_config(workspace, "embedded", None)) as embedded:
        await embedded.sync()
        source = store_of(embedded)
        for one in runs:
            source.save_run(one)
        assert source.outcomes()["filesystem:docs"].outcome == "ok"
        source.record_outcome("filesystem:docs", "error", "the bucket was gone", "2026-01-02T03:04:05Z")
        outcomes, skips = source.outcomes(), source.remembered_skips("filesystem:docs")
        assert set(skips) == {"blob.md"}
        listing = source.runs()
        await embedded.migrate_to_postgres(pg_url)
    async with Harness.open(backend_config(workspace, "postgres", pg_url)) as moved:
        target = store_of(moved)
        assert target.runs() == listing and len(listing) == 4
        assert all(target.run(one["id"]) == one for one in runs)
        assert target.outcomes() == outcomes  # with the time it was recorded, not the time of the copy
        assert target.remembered_skips("filesystem:docs") == skips
        again = (await moved.sync()).sources[0]
        assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
