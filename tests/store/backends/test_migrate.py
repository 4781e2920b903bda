"""``ctx db migrate --to postgres``: an embedded workspace copied into PostgreSQL keeps its ids, chunks,
vectors and embedder identity, so nothing is embedded again and searches find the same documents."""

from __future__ import annotations

import pytest

from context_harness.embedding import fake
from context_harness.errors import BadRequest
from context_harness.harness import Harness
from context_harness.models import SearchRequest
from support.workspace import Workspace, write_sample_docs

from .test_conformance import backend_config

pytestmark = pytest.mark.anyio


async def found(h: Harness, query: str, mode: str) -> list[str]:
    return [r.id for r in (await h.search(SearchRequest(query=query, mode=mode))).results]


async def test_migrate_copies_everything_without_embedding_again(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_sample_docs(workspace)
    async with Harness.open(backend_config(workspace, "embedded", None)) as embedded:
        await embedded.sync()
        before = await embedded.stats()
        expected = {mode: await found(embedded, "search engines sandbox", mode) for mode in ("keyword", "hybrid")}
        report = await embedded.migrate_to_postgres(pg_url)
        assert (report.documents, report.chunks) == (before.documents, before.chunks)
        assert report.vectors == before.embedding["vectors"] > 0
        assert report.embedder == before.embedding["identity"]
        assert "@" not in report.target and report.target.startswith("postgresql://")
        with pytest.raises(BadRequest, match="already holds 3 documents"):
            await embedded.migrate_to_postgres(pg_url)
    async with Harness.open(backend_config(workspace, "postgres", pg_url)) as moved:
        after = await moved.stats()
        assert (after.documents, after.chunks) == (before.documents, before.chunks)
        assert after.embedding["pending_chunks"] == 0 and after.embedding["mismatch"] is False
        assert (await moved.embed()).embedded == 0  # nothing left to embed
        for mode, ids in expected.items():
            assert await found(moved, "search engines sandbox", mode) == ids, mode
        again = (await moved.sync()).sources[0]
        assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
        assert (await moved.check()).consistent
        with pytest.raises(BadRequest, match="on postgres already"):
            await moved.migrate_to_postgres(pg_url)
