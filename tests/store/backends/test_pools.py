"""PostgreSQL's connections under load (a real server: ``support/postgres.py``): reading a document
never queues behind searches, and a replica whose search connections are all taken answers ``busy``
within ``[db] pool_wait`` instead of letting the wait grow."""

from __future__ import annotations

import threading
import time

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import Busy
from context_harness.models import SearchRequest
from support.workspace import Workspace, write_sample_docs

pytestmark = pytest.mark.anyio


def pg_config(workspace: Workspace, url: str) -> config_mod.Config:
    workspace.config_path.write_text(
        f'[db]\npath = "data/ctx.sqlite"\nbackend = "postgres"\nurl = "{url}"\npool_size = 2\npool_wait = 0.5\n'
        '[embedding]\nprovider = "fake"\n[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
    return workspace.config()


async def test_get_skips_the_search_queue_and_a_full_pool_answers_busy(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_sample_docs(workspace)
    async with Harness.open(pg_config(workspace, pg_url)) as harness:
        await harness.sync()
        hit = (await harness.search(SearchRequest(query="lua sandbox", mode="keyword"))).results[0]
        taken, release = threading.Event(), threading.Event()

        def long_searches() -> None:  # hold both search connections, as two slow queries would
            db = harness.store.db  # type: ignore[union-attr]
            with db.connection() as first, db.connection() as second:
                taken.set()
                release.wait(10)
                first.execute("SELECT 1")
                second.execute("SELECT 1")

        holder = threading.Thread(target=long_searches)
        holder.start()
        try:
            assert taken.wait(5)
            started = time.perf_counter()
            doc = await harness.get(hit.id)
            assert doc.id == hit.id and time.perf_counter() - started < 0.4  # its own pool: no wait
            started = time.perf_counter()
            with pytest.raises(Busy, match=r"pool_size / pool_wait"):
                await harness.search(SearchRequest(query="lua sandbox", mode="keyword"))
            assert 0.4 <= time.perf_counter() - started < 2.0  # pool_wait, then busy: not an unbounded queue
        finally:
            release.set()
            holder.join(10)
        assert (await harness.search(SearchRequest(query="lua sandbox", mode="keyword"))).results
