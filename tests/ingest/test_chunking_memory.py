"""Chunking a long document holds little more than its chunks: the chunker takes the text a line and
a block at a time (it held every line and every block besides, twice the chunks' memory at its peak)."""

from __future__ import annotations

import tracemalloc

from context_harness.ingest.chunking import chunk_markdown
from support.workspace import long_markdown


def test_chunking_peaks_at_about_what_its_chunks_hold() -> None:
    body = long_markdown(1_000_000)
    tracemalloc.start()
    try:
        chunks = chunk_markdown(body, 128, 0)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(chunks) > 1_000 and peak <= 1.3 * held, (held, peak)
