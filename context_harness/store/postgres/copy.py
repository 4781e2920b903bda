"""``ctx db migrate --to postgres``: copy an embedded workspace into an empty PostgreSQL database.

Documents keep their ids, chunks their ids and content hashes, and vectors move with the embedder
identity that made them, so nothing is chunked or embedded again; the per-source chunking
signatures move too, so the next sync is incremental.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from context_harness.errors import BadRequest
from context_harness.store.backend import Backend
from context_harness.store.records import DocumentWrite

BATCH = 500


@dataclass
class CopyCounts:
    documents: int = 0
    chunks: int = 0
    vectors: int = 0


def copy_embedded(source: Backend, target: Backend, progress: Callable[[dict[str, Any]], None] | None = None,
                  ) -> CopyCounts:
    emit = progress or (lambda event: None)
    present = target.documents.counts()[0]
    if present:
        raise BadRequest(f"the database at {target.location} already holds {present} documents; "
                         "migrate into an empty database")
    counts = CopyCounts()
    ids = sorted(source.documents.all_ids())
    emit({"event": "start", "source": "documents", "total": len(ids)})
    for start in range(0, len(ids), BATCH):
        rows = source.documents.documents(ids[start:start + BATCH])
        by_source: dict[str, list[DocumentWrite]] = {}
        for row in rows.values():
            chunks = source.documents.chunks(row.id)
            by_source.setdefault(row.source, []).append(DocumentWrite(row, chunks))
            counts.chunks += len(chunks)
        for label, writes in by_source.items():
            target.documents.apply(label, writes, [])
        counts.documents += len(rows)
        emit({"event": "progress", "source": "documents", "done": counts.documents, "total": len(ids)})
    synced = source.documents.source_rows()
    for label in sorted(set(source.documents.source_counts()) | set(synced)):
        signature = source.documents.get_meta(f"chunking:{label}")
        if signature is not None:
            target.documents.set_meta(f"chunking:{label}", signature)
        if label in synced:
            target.documents.record_sync(label, synced[label][1])
    if source.vectors is not None and target.vectors is not None:
        counts.vectors = _copy_vectors(source.vectors, target.vectors)
    return counts


def _copy_vectors(source: Any, target: Any) -> int:
    identity = source.identity()
    if identity is None:
        return 0
    target.set_identity(identity)
    copied = 0
    with source.snapshot():
        for batch in source.vector_batches():
            copied += target.put_many((h, np.frombuffer(blob, dtype="<f4")) for h, blob in batch)
    return copied
