"""On both backends: while this process embeds (a server after a sync), ``related`` says so and how
far it is, instead of telling the user to run ``ctx sync``."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.models import RelatedRequest, SearchRequest

pytestmark = pytest.mark.anyio


async def test_related_says_an_embedding_in_progress_is_one(harness: Harness, backend: str) -> None:
    await harness.sync(embed=False)
    hit = (await harness.search(SearchRequest(query="tantivy", mode="keyword"))).results[0]
    chunks = harness.embedding_status()["pending_chunks"]
    before = await harness.related(RelatedRequest(id=hit.id))
    assert before.note == "this document's embeddings are not computed yet (ctx sync computes them)"
    async with harness.writing("embed pending", embeddings=True):  # what a server holds while it embeds
        during = await harness.related(RelatedRequest(id=hit.id))
    assert during.similar == [] and during.note == (
        f"embedding in progress: 0 of {chunks:,} chunks; similar documents will appear as this document's "
        "chunks are computed")
