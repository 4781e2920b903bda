"""Embed chunks that have no vector yet. Content-addressed: unchanged text is never embedded twice."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from context_harness.embedding.base import Embedder
from context_harness.ingest.chunking import embedding_text
from context_harness.store.vectors import VectorStore, switch_text

log = logging.getLogger(__name__)

ProgressFn = Callable[[dict[str, Any]], None]
FETCH = 512  # pending texts read from SQLite at a time


@dataclass
class EmbedReport:
    embedded: int
    pending: int
    seconds: float
    identity: str


def embed_pending(vectors: VectorStore, embedder: Embedder, *, batch_size: int = 16, limit: int | None = None,
                  progress: ProgressFn | None = None) -> EmbedReport:
    """Embed up to ``limit`` pending chunk texts in batches, committing after each fetch."""
    started = time.perf_counter()
    emit = progress or (lambda event: None)
    vectors.ensure_identity(embedder.identity)
    total = vectors.stats().pending_chunks
    if limit is not None:
        total = min(total, limit)
    emit({"event": "start", "source": "embeddings", "total": total})
    done = after = 0
    while limit is None or done < limit:
        want = FETCH if limit is None else min(FETCH, limit - done)
        pending = vectors.pending(want, after)
        if not pending:
            break
        after = pending[-1].row
        for start in range(0, len(pending), batch_size * 8):
            part = pending[start:start + batch_size * 8]
            # The text each content hash was computed from: title and headings lead the chunk.
            matrix = embedder.embed_documents([embedding_text(c.title, c.heading, c.text) for c in part])
            vectors.put_many(zip([c.content_hash for c in part], matrix, strict=True))
            done += len(part)
            emit({"event": "progress", "source": "embeddings", "done": done, "total": total})
    left = vectors.stats().pending_chunks
    seconds = round(time.perf_counter() - started, 3)
    emit({"event": "done", "source": "embeddings", "embedded": done, "pending": left, "seconds": seconds})
    return EmbedReport(done, left, seconds, embedder.identity.key)


def embedding_status(provider: str, vectors: VectorStore | None, configured_key: Callable[[], str]) -> dict[str, Any]:
    """Embedded and pending chunks, the embedder the config selects (``identity``) and the one the
    stored vectors were made by (``stored_identity``); ``mismatch`` when both hold vectors' worth of
    meaning and differ (searches then use the stored vectors, with their own embedder, until a model
    switch replaces them: ``ingest/reembed.py``; ``switch`` says how far it is)."""
    status: dict[str, Any] = {"provider": provider}
    if vectors is None:
        return status | {"identity": None, "embedded_chunks": 0, "pending_chunks": 0}
    stats = vectors.stats()
    try:
        configured: str | None = configured_key()
    except Exception as exc:  # e.g. a model that cannot be looked up: stats still answer
        log.debug("embedder identity unavailable: %s", exc)
        configured = None
    stored = stats.identity.key if stats.identity else None
    return status | {
        "identity": configured, "stored_identity": stored,
        "mismatch": bool(stats.vectors and stored and configured and stored != configured),
        "embedded_chunks": stats.embedded_chunks, "pending_chunks": stats.pending_chunks,
        "vectors": stats.vectors, "switch": switch_status(vectors, configured),
    }


def switch_status(vectors: VectorStore, configured: str | None) -> dict[str, Any] | None:
    """A model switch under way (``ingest/reembed.py``): ``to`` (the next set's embedder), ``done``
    and ``total`` chunks, and ``text`` ("re-embedding for MODEL: 1,234 of 5,183 chunks"); None
    without one, or when the config no longer selects its embedder (the next run drops it)."""
    target = vectors.next_identity()
    if target is None or (configured is not None and target.key != configured):
        return None
    done, total = vectors.next_counts()
    return {"to": target.key, "done": done, "total": total, "text": switch_text(target, done, total)}
