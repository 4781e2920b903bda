"""Steps appended to a run record one at a time (``add_run_step``; the ``agent_run_steps`` table of
schema 7) on both backends, through the real ``Harness`` over a temporary workspace: SQLite and a real
PostgreSQL (``support/postgres.py``).

An append stores the record's head and one step in one transaction, and writes as much after 2,000
steps of 2 kB as after the first (the database's own log says so: SQLite's WAL frames, PostgreSQL's
WAL bytes), where saving the whole record rewrote all of it after every step. Steps read back in
order, the listing's ``step_count`` counts them, ``save_run`` still replaces the whole record, a
schema-6 database (its ``agent_runs`` table holding steps as one JSON array) migrates keeping every
run, and ``ctx db migrate --to postgres`` copies steps appended one by one."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from typing import Any

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.store.backend import DocumentStorage
from context_harness.store.schema import _MIGRATIONS, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, SCHEMA_VERSION
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio
RUN = "r20261207-151012-ab12"


def store_of(h: Harness) -> DocumentStorage:
    assert h.store is not None
    return h.store


def head(run_id: str = RUN, **changes: Any) -> dict[str, Any]:
    """A record without its steps, as the run loop keeps it."""
    return {"id": run_id, "agent": "note-filer", "task": "file today's notes", "model": "local",
            "arguments": {"day": "today"}, "status": "running", "reason": None, "started_at": "2026-12-07T15:10:12Z",
            "ended_at": None, "tokens": {"prompt": 0, "completion": 0}, "answer": None, **changes}


def step(i: int, size: int = 60, rng: random.Random | None = None) -> dict[str, Any]:
    """A tool step of about ``size`` characters (random hex: what neither backend compresses)."""
    text = (rng or random.Random(i)).randbytes(size // 2).hex()
    return {"kind": "tool", "at": "2026-12-07T15:10:13Z", "tool": "get", "call": f"call_{i}", "outcome": "ok",
            "result": text}


def whole(run_head: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {**run_head, "steps": steps}


def listed(run_head: dict[str, Any], count: int) -> dict[str, Any]:
    return {**run_head, "step_count": count}


async def test_steps_are_appended_in_order_with_the_head_each_time(harness: Harness) -> None:
    store = store_of(harness)
    first = head()
    store.add_run_step(first, step(0))  # the first step makes the run
    assert store.run(RUN) == whole(first, [step(0)])
    assert store.runs() == [listed(first, 1)]
    steps = [step(0)]
    for i in range(1, 30):
        changed = head(tokens={"prompt": 10 * i, "completion": i}, answer=None if i < 29 else "filed 3 notes",
                       status="running" if i < 29 else "finished", ended_at=None if i < 29 else "2026-12-07T15:11:00Z")
        store.add_run_step(changed, step(i))
        steps.append(step(i))
        assert store.runs()[0]["step_count"] == i + 1
    assert store.run(RUN) == whole(changed, steps)  # the head is the last one stored, the steps all, in order
    assert store.runs() == [listed(changed, 30)] and store.runs(agent="note-filer")[0]["status"] == "finished"
    # another run's steps are its own
    other = head("r20261207-151013-cd34", agent="summariser", started_at="2026-12-07T15:10:13Z")
    store.add_run_step(other, {"kind": "start"})
    assert store.run(other["id"]) == whole(other, [{"kind": "start"}])
    assert [(r["id"], r["step_count"]) for r in store.runs()] == [(other["id"], 1), (RUN, 30)]
    assert store.run(RUN) == whole(changed, steps)


async def test_a_steps_key_in_the_head_is_ignored(harness: Harness) -> None:
    """The run loop may hand its record as it is: its ``steps`` are not stored again."""
    store = store_of(harness)
    store.add_run_step(whole(head(), [step(0)]), step(0))
    store.add_run_step(whole(head(status="finished"), [step(0), step(1)]), step(1))
    assert store.run(RUN) == whole(head(status="finished"), [step(0), step(1)])
    assert store.runs()[0]["step_count"] == 2


async def test_save_run_replaces_the_steps_and_appends_go_on_after_them(harness: Harness) -> None:
    store = store_of(harness)
    store.save_run(whole(head(), [step(i) for i in range(5)]))
    store.add_run_step(head(status="finished"), step(5))
    assert store.run(RUN) == whole(head(status="finished"), [step(i) for i in range(6)])
    assert store.runs()[0]["step_count"] == 6
    store.save_run(whole(head(), [step(10), step(11)]))  # fewer steps: the rest go
    assert store.run(RUN) == whole(head(), [step(10), step(11)])
    store.add_run_step(head(), step(12))
    assert store.run(RUN) == whole(head(), [step(10), step(11), step(12)])
    assert store.runs() == [listed(head(), 3)]
    store.save_run(whole(head(), []))
    assert store.run(RUN) == whole(head(), []) and store.runs()[0]["step_count"] == 0
    store.save_run(head(status="stopped"))  # no steps key: no steps
    assert store.run(RUN) == whole(head(status="stopped"), [])


async def test_text_a_model_may_send_is_kept_as_written(harness: Harness) -> None:
    """NUL (PostgreSQL text holds none), a lone surrogate, emoji, RTL: JSON with ASCII escapes."""
    store = store_of(harness)
    odd = {"kind": "model", "text": "nul\x00 lone\ud800 emoji 🦎 עברית", "calls": [{"arguments": "{\"a\": \"\\u0000\"}"}]}
    store.add_run_step(head(answer="nul\x00 and \udfff"), odd)
    assert store.run(RUN) == whole(head(answer="nul\x00 and \udfff"), [odd])


async def test_a_head_without_what_a_listing_needs_stores_nothing(harness: Harness) -> None:
    store = store_of(harness)
    with pytest.raises(ValueError, match="needs status, started_at"):
        store.add_run_step({"id": RUN, "agent": "a"}, step(0))
    store.add_run_step(head(), step(0))
    with pytest.raises(TypeError):  # a step that is not JSON: neither it nor the new head is stored
        store.add_run_step(head(status="finished"), {"kind": "tool", "result": object()})
    assert store.run(RUN) == whole(head(), [step(0)]) and store.runs()[0]["step_count"] == 1


async def test_appends_from_several_threads_each_get_their_own_place(harness: Harness) -> None:
    store = store_of(harness)
    store.add_run_step(head(), {"kind": "start"})
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        try:
            for i in range(25):
                store.add_run_step(head(), {"kind": "tool", "worker": worker, "i": i})
        except BaseException as exc:  # pragma: no cover - what the test reports
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    steps = store.run(RUN)["steps"]  # type: ignore[index]
    assert len(steps) == 101 and store.runs()[0]["step_count"] == 101 and steps[0] == {"kind": "start"}
    for worker in range(4):  # each thread's steps in the order it appended them
        assert [s["i"] for s in steps if s.get("worker") == worker] == list(range(25))


def _log_bytes(store: Any, backend: str, work: Callable[[], None]) -> int:
    """The bytes ``work`` wrote to the database's log: SQLite's WAL frames (emptied first), PostgreSQL's
    WAL (the server's; nothing else writes to it meanwhile but its own housekeeping)."""
    if backend == "postgres":
        with store.db.connection() as conn:
            before = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
            work()
            return int(conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)",
                                    (before,)).fetchone()[0])
    conn = store.connection()
    assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0  # not busy: the WAL is empty
    work()
    frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    return int(frames) * int(conn.execute("PRAGMA page_size").fetchone()[0])


async def test_an_append_writes_as_much_after_2000_steps_as_after_the_first(harness: Harness, backend: str) -> None:
    """Appending costs O(1) in the run's length: the issue's 2,000-call run took 44.4 s when the whole
    record was rewritten after each step (4 MB here: the last save alone writes all of it)."""
    store = store_of(harness)
    rng = random.Random(55)
    first = _log_bytes(store, backend, lambda: store.add_run_step(head(), step(0, 2000, rng)))
    store.save_run(whole(head(), [step(i, 2000, rng) for i in range(2000)]))
    record_bytes = len(json.dumps(store.run(RUN)))
    assert record_bytes > 4_000_000
    late = []
    for n in range(5):
        one = step(2000 + n, 2000, rng)
        later = head(tokens={"prompt": n, "completion": 0})
        late.append(_log_bytes(store, backend, lambda: store.add_run_step(later, one)))  # noqa: B023 (called at once)
    assert store.runs()[0]["step_count"] == 2005
    # a few pages each (full-page images after a PostgreSQL checkpoint included), never the record
    assert max(late) < 160_000 and max(late) < record_bytes / 25, (first, late, record_bytes)
    assert min(late) <= 3 * first + 40_000, (first, late)
    # save_run of the whole record with one more step writes that step, not the record again
    record = store.run(RUN)
    assert record is not None
    record["steps"].append(step(2005, 2000, rng))
    resaved = _log_bytes(store, backend, lambda: store.save_run(record))
    assert resaved < 400_000 and store.run(RUN) == record, (resaved, record_bytes)


def _old_save(conn: Any, mark: str, record: dict[str, Any]) -> None:
    """How schema 6 stored a run: the head and all the steps as one JSON array, in ``agent_runs``."""
    steps = record.get("steps")
    conn.execute(("INSERT INTO agent_runs(id, agent, status, started_at, step_count, record, steps) "
                  "VALUES(?,?,?,?,?,?,?)").replace("?", mark),
                 (record["id"], record["agent"], record["status"], record["started_at"],
                  len(steps) if isinstance(steps, list) else 0,
                  json.dumps({k: v for k, v in record.items() if k != "steps"}),
                  None if steps is None else json.dumps(steps)))


async def test_a_schema_6_database_migrates_its_runs_steps_into_rows(workspace: Workspace, backend: str,
                                                                    url: str | None) -> None:
    fake.register()
    write_sample_docs(workspace)
    config = backend_config(workspace, backend, url)
    old = [whole(head(), [step(i, 1500) for i in range(300)]),
           whole(head("r20261207-151013-odd", started_at="2026-12-07T15:10:13Z", answer="nul\x00 \ud800"),
                 [{"kind": "model", "text": "nul\x00 lone\udfff 🦎"}, {"kind": "end"}]),
           whole(head("r20261207-151014-none", started_at="2026-12-07T15:10:14Z"), [])]
    stepless = head("r20261207-151015-nokey", started_at="2026-12-07T15:10:15Z")  # saved with no steps key
    postgres = backend == "postgres"
    async with Harness.open(config) as h:
        await h.sync()
        store = store_of(h)
        documents, outcomes = store.counts(), store.outcomes()
        # the tables as schema 6 had them, holding runs as schema 6 wrote them
        with (store.db.transaction() if postgres else store.transaction()) as conn:  # type: ignore[attr-defined]
            conn.execute("DROP TABLE agent_run_steps")
            conn.execute("DROP TABLE agent_runs")
            for statement in (POSTGRES_MIGRATIONS if postgres else _MIGRATIONS)[5].split(";"):
                conn.execute(statement)
            for one in [*old, stepless]:
                _old_save(conn, "%s" if postgres else "?", one)
            conn.execute(f"UPDATE {'ctx_meta' if postgres else 'meta'} SET value = '6' WHERE key = 'schema_version'")
        assert store.schema_version == 6
    async with Harness.open(config) as h:
        store = store_of(h)
        assert store.schema_version == (POSTGRES_SCHEMA_VERSION if postgres else SCHEMA_VERSION) >= 7
        assert store.counts() == documents and store.outcomes() == outcomes
        for one in old:
            assert store.run(one["id"]) == one
        assert store.run(stepless["id"]) == whole(stepless, [])
        assert [(r["id"], r["step_count"]) for r in store.runs()] == \
            [(stepless["id"], 0), (old[2]["id"], 0), (old[1]["id"], 2), (RUN, 300)]
        store.add_run_step(head(status="finished"), step(300, 1500))  # appends go on after the moved steps
        assert store.run(RUN) == whole(head(status="finished"), [*old[0]["steps"], step(300, 1500)])
        with (store.db.connection() if postgres else store.transaction()) as conn:  # type: ignore[attr-defined]
            left = conn.execute("SELECT count(*) FROM agent_runs WHERE steps IS NOT NULL").fetchone()[0]
        assert left == 0  # moved, not copied: the arrays are gone


async def test_db_migrate_copies_steps_appended_one_by_one(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_sample_docs(workspace)
    async with Harness.open(backend_config(workspace, "embedded", None)) as embedded:
        source = store_of(embedded)
        for i in range(200):
            source.add_run_step(head(tokens={"prompt": i, "completion": 0}), step(i, 1000))
        source.save_run(whole(head("r20261207-151013-cd34", started_at="2026-12-07T15:10:13Z"), [step(7)]))
        runs = {r["id"]: source.run(r["id"]) for r in source.runs()}
        listing = source.runs()
        await embedded.migrate_to_postgres(pg_url)
    async with Harness.open(backend_config(workspace, "postgres", pg_url)) as moved:
        target = store_of(moved)
        assert target.runs() == listing and [r["step_count"] for r in listing] == [1, 200]
        assert {r["id"]: target.run(r["id"]) for r in listing} == runs
        assert len(runs[RUN]["steps"]) == 200  # type: ignore[index]
        target.add_run_step(head(status="finished"), step(200, 1000))
        assert target.run(RUN)["steps"][-2:] == [step(199, 1000), step(200, 1000)]  # type: ignore[index]
