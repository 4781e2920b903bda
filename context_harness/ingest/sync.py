"""The sync pipeline: connector items -> documents and chunks in SQLite -> keyword index.

Incremental: a candidate whose fingerprint (e.g. mtime and size) is unchanged costs nothing more;
one whose content hash is unchanged costs a read. Items that disappeared are deleted. ``limit``
caps the number of changes applied; the rest stay pending for the next sync, never skipped.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from context_harness.config import ChunkingConfig
from context_harness.connectors.base import Connector, ScanReport, SourceItem
from context_harness.ingest.chunk_worker import Chunker, DocumentText
from context_harness.ingest.chunking import CHUNKER_VERSION
from context_harness.models import SyncSummary
from context_harness.store.documents import (
    DocumentRow,
    DocumentStore,
    DocumentWrite,
    document_id,
)
from context_harness.store.keyword import IndexedDocument, KeywordIndex
from context_harness.timestamps import from_iso, to_iso

log = logging.getLogger(__name__)

ProgressFn = Callable[[dict[str, Any]], None]
WRITE_BATCH = 500
INDEX_BATCH = 5000
CHUNK_BATCH = 128  # documents per chunking job
MAX_JOBS = 8  # chunking jobs in flight before the sync waits for the oldest


@dataclass
class SyncOptions:
    full: bool = False
    dry_run: bool = False
    limit: int | None = None


def chunking_signature(config: ChunkingConfig) -> str:
    return json.dumps({"version": CHUNKER_VERSION, "max_tokens": config.max_tokens,
                       "overlap_tokens": config.overlap_tokens}, sort_keys=True)


def item_hash(item: SourceItem) -> str:
    payload = json.dumps([item.title, item.body, item.author, item.source_url, item.content_type,
                          item.metadata, item.tags, to_iso(item.created_at)], sort_keys=True, ensure_ascii=False,
                         default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def document_row(source: str, item: SourceItem, fingerprint: str | None, content_hash: str) -> DocumentRow:
    return DocumentRow(
        id=document_id(source, item.source_id), source=source, source_id=item.source_id,
        source_url=item.source_url, title=item.title, author=item.author, created_at=to_iso(item.created_at),
        updated_at=to_iso(item.updated_at), content_type=item.content_type or "text/plain", body=item.body,
        metadata=item.metadata or {}, tags=list(item.tags or []), content_hash=content_hash, fingerprint=fingerprint,
    )


def indexed_document(row: DocumentRow) -> IndexedDocument:
    return IndexedDocument(row.id, row.title or "", row.body, row.source, row.tags, from_iso(row.updated_at))


def flush_index(store: DocumentStore, index: KeywordIndex) -> int:
    """Bring the keyword index up to date with every document queued in SQLite. Idempotent."""
    total = 0
    while True:
        doc_ids = store.queued(INDEX_BATCH)
        if not doc_ids:
            return total
        rows = store.documents(doc_ids)
        index.replace(doc_ids, [indexed_document(row) for row in rows.values()])
        store.dequeue(doc_ids)
        total += len(doc_ids)


class Syncer:
    def __init__(self, store: DocumentStore, index: KeywordIndex, chunking: ChunkingConfig) -> None:
        self.store = store
        self.index = index
        self.chunking = chunking

    def chunking_changed(self, label: str) -> bool:
        stored = self.store.get_meta(f"chunking:{label}")
        return stored is not None and stored != chunking_signature(self.chunking)

    def sync(self, connector: Connector, options: SyncOptions, progress: ProgressFn | None = None,
             budget: list[int] | None = None) -> SyncSummary:
        """Sync one connector. ``budget`` is a shared one-element list holding the remaining ``limit``."""
        with contextlib.ExitStack() as stack:
            return self._sync(connector, options, progress, budget, stack)

    def _sync(self, connector: Connector, options: SyncOptions, progress: ProgressFn | None,
              budget: list[int] | None, stack: contextlib.ExitStack) -> SyncSummary:
        started = time.perf_counter()
        label = connector.label
        emit = progress or (lambda event: None)
        summary = SyncSummary(source=label, dry_run=options.dry_run)
        report = ScanReport()
        emit({"event": "scan", "source": label})
        candidates = sorted(connector.scan(report), key=lambda c: c.source_id)
        stored = self.store.fingerprints(label)
        full = options.full or self.chunking_changed(label)
        seen: set[str] = set()
        writes: list[DocumentWrite] = []
        touches: list[tuple[str, str | None]] = []
        total = len(candidates)
        emit({"event": "start", "source": label, "total": total})

        def budget_left() -> bool:
            return budget is None or budget[0] > 0

        def spend() -> None:
            if budget is not None:
                budget[0] -= 1

        session = None if options.dry_run else stack.enter_context(self.index.session())
        fed: list[str] = []

        def feed(doc_ids: list[str], written: list[DocumentWrite]) -> None:
            assert session is not None
            session.replace(doc_ids, [indexed_document(w.row) for w in written])
            fed.extend(doc_ids)

        def flush_writes() -> None:
            if writes or touches:
                if session is not None:
                    self.store.apply(label, writes, [], touches)
                    # Feed the keyword index now (it indexes in its own threads while we read on);
                    # it commits once at the end. Until then SQLite's queue covers a crash.
                    feed([w.row.id for w in writes], writes)
                writes.clear()
                touches.clear()

        chunker = Chunker(self.chunking.max_tokens, self.chunking.overlap_tokens)
        stack.callback(chunker.close)  # before the index commits (the stack unwinds in reverse)
        if not options.dry_run:
            to_read = sum(1 for c in candidates if full or c.fingerprint is None
                          or stored.get(c.source_id, ("", None, ""))[1] != c.fingerprint)
            chunker.expect(to_read if budget is None else min(to_read, budget[0]))
        pending: list[DocumentRow] = []
        jobs: collections.deque[tuple[Future, list[DocumentText], list[DocumentRow]]] = collections.deque()

        def submit() -> None:
            if pending:
                docs = [(row.id, row.title, row.body) for row in pending]
                jobs.append((chunker.submit(docs), docs, list(pending)))
                pending.clear()

        def collect(wait: bool) -> None:
            while jobs and (wait or len(jobs) > MAX_JOBS or jobs[0][0].done()):
                future, docs, rows = jobs.popleft()
                for row, chunks in zip(rows, chunker.result(future, docs), strict=True):
                    writes.append(DocumentWrite(row, chunks))
                if len(writes) >= WRITE_BATCH:
                    flush_writes()

        for done, cand in enumerate(candidates, 1):
            if cand.source_id in seen:
                report.skip("duplicate_id", cand.source_id)
                continue
            seen.add(cand.source_id)
            prev = stored.get(cand.source_id)
            if prev and not full and cand.fingerprint is not None and prev[1] == cand.fingerprint:
                summary.unchanged += 1
            elif not budget_left():
                summary.limited = True
            else:
                item = cand.load()
                if item is None:
                    seen.discard(cand.source_id)  # unreadable now: a stored copy is removed below
                else:
                    content_hash = item_hash(item)
                    if prev and not full and prev[2] == content_hash:
                        summary.unchanged += 1
                        touches.append((prev[0], cand.fingerprint))
                    else:
                        if not options.dry_run:
                            pending.append(document_row(label, item, cand.fingerprint, content_hash))
                        if prev:
                            summary.updated += 1
                        else:
                            summary.added += 1
                        spend()
            if len(pending) >= CHUNK_BATCH:
                submit()
                collect(wait=False)
            if len(touches) >= WRITE_BATCH:
                flush_writes()
            if done % 200 == 0 or done == total:
                emit({"event": "progress", "source": label, "done": done, "total": total})
        submit()
        collect(wait=True)
        flush_writes()

        deletes = []
        for source_id, (doc_id, _, _) in sorted(stored.items()):
            if source_id in seen:
                continue
            if not budget_left():
                summary.limited = True
                break
            deletes.append(doc_id)
            spend()
        summary.deleted = len(deletes)
        if deletes and session is not None:
            self.store.apply(label, [], deletes)
            feed(deletes, [])
        stack.close()  # commits the keyword index
        if fed:
            self.store.dequeue(fed)

        summary.skipped = sum(report.skipped.values())
        summary.skipped_reasons = dict(sorted(report.skipped.items()))
        for warning in report.warnings[:20]:
            log.info("%s: skipped %s", label, warning)
        if not options.dry_run:
            flush_index(self.store, self.index)
            notes = None
            if summary.skipped:
                notes = "skipped: " + ", ".join(f"{k} {v}" for k, v in summary.skipped_reasons.items())
            self.store.record_sync(label, notes)
            if not summary.limited:
                self.store.set_meta(f"chunking:{label}", chunking_signature(self.chunking))
        summary.seconds = round(time.perf_counter() - started, 3)
        emit({"event": "done", "source": label, **summary.model_dump(exclude={"source"})})
        return summary
