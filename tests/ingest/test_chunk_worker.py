"""Chunking in helper processes: same chunks as inline, and a dead helper costs nothing but time."""

from __future__ import annotations

import anyio

from context_harness.core.harness import Harness
from context_harness.ingest.chunk_worker import Chunker, chunk_rows
from context_harness.models import SearchRequest

DOCS = [(f"doc{i}", f"Title {i}", f"# Title {i}\n\n" + "\n\n".join(
    f"## Part {j}\n\n" + " ".join(f"word{(i * 31 + j * 7 + k) % 501}" for k in range(90)) for j in range(4)))
    for i in range(300)]


def inline(docs):
    return [[tuple(row) for row in chunk_rows(d, t, b, 64, 8)] for d, t, b in docs]


def as_rows(chunks):
    return [[(c.id, c.idx, c.text, c.content_hash, c.heading, c.start) for c in doc.chunks] for doc in chunks]


def test_helpers_give_the_same_chunks_as_inline_chunking() -> None:
    chunker = Chunker(64, 8, helpers=2, threshold=1)
    try:
        batches = [DOCS[i:i + 50] for i in range(0, len(DOCS), 50)]
        futures = [(chunker.submit(batch), batch) for batch in batches]
        assert chunker._pool is not None  # the helpers really ran
        got = [row for future, batch in futures for row in as_rows(chunker.result(future, batch))]
    finally:
        chunker.close()
    assert got == inline(DOCS)


def test_a_killed_helper_falls_back_to_inline_chunking() -> None:
    chunker = Chunker(64, 8, helpers=1, threshold=1)
    try:
        first = chunker.submit(DOCS[:10])
        assert as_rows(chunker.result(first, DOCS[:10])) == inline(DOCS[:10])
        assert chunker._pool is not None
        for helper in chunker._pool._helpers:
            helper.process.kill()
            helper.process.wait()
        later = [(chunker.submit(DOCS[i:i + 10]), DOCS[i:i + 10]) for i in range(10, 60, 10)]
        got = [row for future, batch in later for row in as_rows(chunker.result(future, batch))]
    finally:
        chunker.close()
    assert got == inline(DOCS[10:60])


def test_small_batches_stay_in_process() -> None:
    chunker = Chunker(64, 8, helpers=1, threshold=1000)
    future = chunker.submit(DOCS[:5])
    assert future.done() and chunker._pool is None
    assert as_rows(chunker.result(future, DOCS[:5])) == inline(DOCS[:5])


def test_a_large_sync_stores_the_same_chunks_as_chunking_inline(sample_docs) -> None:
    """Enough documents for the sync to start helpers (on a machine with two or more cores)."""
    for i in range(700):
        sample_docs.write(f"bulk/doc{i:04d}.md", f"# Bulk {i}\n\n" + " ".join(f"w{(i + k) % 997}" for k in range(300)))

    async def main() -> None:
        cfg = sample_docs.config()
        async with Harness.open(cfg) as h:
            await h.sync()
            assert h.store is not None
            rows = h.store.connection().execute(
                "SELECT d.id, d.title, d.body FROM documents d WHERE d.source_id LIKE 'bulk/%'").fetchall()
            assert len(rows) == 700
            for doc_id, title, body in rows[::50]:
                stored = [(c.id, c.idx, c.text, c.content_hash, c.heading, c.start) for c in h.store.chunks(doc_id)]
                expected = chunk_rows(doc_id, title, body, cfg.chunking.max_tokens, cfg.chunking.overlap_tokens)
                assert stored == [tuple(r) for r in expected]
            hits = (await h.search(SearchRequest(query="bulk 123", limit=3))).results
            assert hits and hits[0].title == "Bulk 123"

    anyio.run(main)
