"""Changing the embedding model without losing search.

When ``[embedding]`` selects another embedder than the one that made the stored vectors, embedding
(``ctx embed pending``, ``ctx sync``, a serving knowledge base's background embedding) fills a *next
vector set* with the configured embedder while searches keep using the current set, with queries
embedded by the current set's own embedder (``embedding.providers.embedder_for``). When every chunk
has its vector in the next set, the store swaps the two in one transaction and drops the old set
(``swap_next``); every process's index then reloads with the new identity.

Each batch commits, and what remains is what the next set lacks: a run killed midway resumes where
it stopped. A config switched back to the current set's embedder drops the next set; switched to a
third one, the next set starts anew for it. ``ctx embed rebuild`` clears both sets instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from context_harness.embedding.base import Embedder, EmbedderIdentity
from context_harness.ingest.chunking import embedding_text
from context_harness.ingest.embed import FETCH, EmbedReport, ProgressFn, embed_pending
from context_harness.store.records import PendingChunk

if TYPE_CHECKING:
    import numpy as np

    from context_harness.store.vectors import VectorStore

log = logging.getLogger(__name__)

CURRENT_EVERY = 30.0  # seconds between embedding a switch's new chunks into the current set too


class VectorSets(Protocol):
    """What a switch needs of a vector store (``VectorStore`` and ``PgVectorStore`` both)."""

    def identity(self) -> EmbedderIdentity | None: ...
    def next_identity(self) -> EmbedderIdentity | None: ...
    def switch_due(self, identity: EmbedderIdentity) -> bool: ...
    def begin_next(self, identity: EmbedderIdentity, config: str) -> None: ...
    def drop_next(self) -> None: ...
    def put_next(self, pairs: Iterable[tuple[str, np.ndarray]]) -> int: ...
    def pending_next(self, limit: int | None = None, after: int = 0) -> list[PendingChunk]: ...
    def next_counts(self) -> tuple[int, int]: ...
    def swap_next(self) -> bool: ...
    def remember_config(self, identity: EmbedderIdentity, config: str) -> None: ...
    def embedder_config(self, identity: EmbedderIdentity) -> str | None: ...
    def pending(self, limit: int | None = None, after: int = 0) -> list[PendingChunk]: ...


def embed_configured(vectors: VectorSets, embedder: Embedder, settings: str, current: Callable[[], Embedder | None],
                     *, batch_size: int = 16, limit: int | None = None,
                     progress: ProgressFn | None = None) -> EmbedReport:
    """Embed for the configured ``embedder`` (its ``settings``: ``providers.settings_of``): the
    pending chunks, or, when the stored vectors are another embedder's, a switch (``switch``);
    ``current`` builds the current set's embedder (None when it cannot be built here)."""
    if vectors.switch_due(embedder.identity):
        return switch(vectors, embedder, settings, current(), batch_size=batch_size, limit=limit, progress=progress)
    if vectors.next_identity() is not None:
        log.info("the config selects the current vectors' embedder again: the unfinished switch to %s is dropped",
                 vectors.next_identity())
        vectors.drop_next()
    report = embed_pending(_plain(vectors), embedder, batch_size=batch_size, limit=limit, progress=progress)
    vectors.remember_config(embedder.identity, settings)
    return report


def switch(vectors: VectorSets, embedder: Embedder, settings: str, current: Embedder | None, *,
           batch_size: int = 16, limit: int | None = None, progress: ProgressFn | None = None) -> EmbedReport:
    """Fill the next set for ``embedder`` (up to ``limit`` texts), then swap it in when complete.
    ``current``: the current set's embedder, which embeds chunks added meanwhile into the current set
    too (so searches find them until the swap); None leaves them to keyword search until then."""
    started = time.perf_counter()
    emit = progress or (lambda event: None)
    identity = embedder.identity
    vectors.begin_next(identity, settings)
    done_before, chunks = vectors.next_counts()
    log.info("re-embedding for %s: %d of %d chunks done", identity.key, done_before, chunks)
    total = chunks - done_before if limit is None else min(chunks - done_before, limit)  # as embed_pending counts
    emit({"event": "start", "source": "embeddings", "total": total, "switch": identity.key})
    done = after = 0
    swapped = False
    next_current = 0.0
    while limit is None or done < limit:
        if current is not None and time.monotonic() >= next_current:
            if vectors.pending(1):
                embed_pending(_plain(vectors), current, batch_size=batch_size)
            next_current = time.monotonic() + CURRENT_EVERY
        page = vectors.pending_next(FETCH if limit is None else min(FETCH, limit - done), after)
        if not page:
            if after == 0:  # nothing left from the first chunk on: swap (refused when a sync added chunks)
                swapped = vectors.swap_next()
                if swapped or vectors.next_identity() != identity or not vectors.pending_next(1):
                    break
            after = 0  # chunks may have been added before the last page: look from the start
            continue
        after = page[-1].row
        for start in range(0, len(page), batch_size * 8):
            part = page[start:start + batch_size * 8]
            matrix = embedder.embed_documents([embedding_text(c.title, c.heading, c.text) for c in part])
            vectors.put_next(zip([c.content_hash for c in part], matrix, strict=True))
            done += len(part)
            emit({"event": "progress", "source": "embeddings", "done": done, "total": total, "switch": identity.key})
    if not swapped and limit is not None and done >= limit and not vectors.pending_next(1):
        swapped = vectors.swap_next()
    embedded, chunks = vectors.next_counts() if not swapped else (chunks, chunks)
    seconds = round(time.perf_counter() - started, 3)
    if swapped:
        log.info("switched to %s: the old vectors are deleted", identity.key)
    emit({"event": "done", "source": "embeddings", "embedded": done, "pending": chunks - embedded,
          "seconds": seconds, "switch": identity.key, "swapped": swapped})
    return EmbedReport(done, chunks - embedded, seconds, identity.key)


def _plain(vectors: VectorSets) -> VectorStore:
    """The store as ``embed_pending`` types it (both stores serve it)."""
    return vectors  # type: ignore[return-value]
