"""Several replicas on one PostgreSQL: one writer at a time (advisory locks, across connections and
so across hosts), and every replica sees another's commit at once (no per-process cache to wait for)."""

from __future__ import annotations

import os
import time

import anyio
import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import StoreBusy
from context_harness.models import SearchRequest
from context_harness.store.postgres.lock import AdvisoryLock
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio


async def test_one_replica_writes_at_a_time_and_the_others_say_whom_they_wait_for(
        workspace: Workspace, pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    fake.register()
    write_sample_docs(workspace)
    config = backend_config(workspace, "postgres", pg_url)
    async with Harness.open(config) as a, Harness.open(config) as b:
        assert isinstance(a.index_lock, AdvisoryLock) and isinstance(b.index_lock, AdvisoryLock)
        async with a.writing("sync all"):
            assert not b.index_lock.try_acquire("sync all")
            assert "ctx sync all (pid" in b.index_lock.holder()
            assert b.embed_lock.try_acquire("embed pending")  # embedding has a lock of its own
            b.embed_lock.release()
            with pytest.raises(StoreBusy, match="gave up after 0 s waiting for ctx sync all"):
                async with b.writing("sync docs", wait=0.2):
                    pass
        async with b.writing("sync docs"):  # free again
            assert not a.index_lock.try_acquire("sync all")
        assert a.index_lock.try_acquire("sync all")
        a.index_lock.release()


async def test_the_holder_a_replica_names_fits_postgres_and_keeps_the_pid(workspace: Workspace, pg_url: str) -> None:
    """PostgreSQL keeps 63 bytes of a connection's name: the note is cut to fit, closing bracket and
    pid kept, instead of being cut mid-way by the server."""
    fake.register()
    config = backend_config(workspace, "postgres", pg_url)
    async with Harness.open(config) as a, Harness.open(config) as b:
        assert a.index_lock.try_acquire("sync filesystem:a-source-with-a-rather-long-name-indeed (live)")
        try:
            holder = b.index_lock.holder()
        finally:
            a.index_lock.release()
    assert holder.startswith("ctx sync filesystem:a-source-with") and holder.endswith(")"), holder
    assert f"(pid {os.getpid()}: " in holder and len(holder) <= 63, holder


async def test_a_sync_through_one_replica_is_found_through_another_at_once(workspace: Workspace,
                                                                            pg_url: str) -> None:
    fake.register()
    write_sample_docs(workspace)
    config = backend_config(workspace, "postgres", pg_url)
    async with Harness.open(config) as a, Harness.open(config) as b:
        await a.sync()
        for mode in ("keyword", "semantic", "hybrid"):  # b loads its view of the vectors before the write
            before = (await b.search(SearchRequest(query="pelicans throat pouch", mode=mode))).results
            assert all(r.title != "Pelicans" for r in before), mode
        workspace.write("pelican.md", "# Pelicans\n\nPelicans have a large throat pouch for catching fish.\n")
        started = time.monotonic()
        async with anyio.create_task_group() as tg:  # two replicas syncing at once take turns
            tg.start_soon(a.sync)
            tg.start_soon(b.sync)
        committed = time.monotonic()
        for mode in ("keyword", "semantic", "hybrid"):
            results = (await b.search(SearchRequest(query="pelicans throat pouch", mode=mode))).results
            assert results and results[0].title == "Pelicans", mode
        assert time.monotonic() - committed < 1.0
        assert committed - started < 30
        assert (await b.stats()).documents == 4
        assert (await a.check()).consistent
