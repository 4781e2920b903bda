"""``ctx db migrate --to postgres``: copy an embedded workspace into an empty PostgreSQL database.

Documents keep their ids, chunks their ids and content hashes, and vectors move with the embedder
identity that made them, so nothing is chunked or embedded again; the per-source chunking
signatures, last syncs, sync outcomes, the sync history and remembered skips move too, so the next
sync is incremental and reads no skipped item again. The records of agent runs move with their steps.
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
    runs: int = 0


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
    _copy_sync_state(source, target)
    for entry in reversed(source.documents.sync_history(limit=None)):  # oldest first: the order is kept
        target.documents.record_history(entry)
    counts.runs = _copy_runs(source, target)
    if source.vectors is not None and target.vectors is not None:
        counts.vectors = _copy_vectors(source.vectors, target.vectors)
    return counts


def _copy_sync_state(source: Backend, target: Backend) -> None:
    """Per source: the chunking signature, the last sync and its notes, how the last whole sync
    ended, and the items it skipped for what they hold."""
    synced = source.documents.source_rows()
    outcomes = source.documents.outcomes()
    for label in sorted(set(source.documents.source_counts()) | set(synced) | set(outcomes)):
        signature = source.documents.get_meta(f"chunking:{label}")
        if signature is not None:
            target.documents.set_meta(f"chunking:{label}", signature)
        if label in synced:
            target.documents.record_sync(label, synced[label][1])
        if label in outcomes:
            ended = outcomes[label]
            target.documents.record_outcome(label, ended.outcome, ended.error, ended.at)
        skips = source.documents.remembered_skips(label)
        if skips:
            target.documents.remember_skips(label, skips)


def _copy_runs(source: Backend, target: Backend) -> int:
    """Every agent run record, one at a time (a record with its steps may be a few MB)."""
    copied = 0
    for listed in source.documents.runs(limit=None):
        record = source.documents.run(listed["id"])
        if record is not None:
            target.documents.save_run(record)
            copied += 1
    return copied


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
