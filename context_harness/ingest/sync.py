"""The sync pipeline: connector items -> documents and chunks in SQLite -> keyword index.

Incremental: a candidate whose fingerprint (e.g. mtime and size) is unchanged costs nothing more;
one whose content hash is unchanged costs a read. Items that disappeared are deleted. ``limit``
caps the number of changes applied; the rest stay pending for the next sync, never skipped.
Documents to convert (PDF, DOCX, HTML) are hashed by their bytes and converted where they are
chunked; one that fails to convert is skipped, counted by reason and named, and never stops a sync.
Nor does any other one item: an exception loading it (``Candidate.load``) or an item that cannot be
stored (text that is not UTF-8, metadata that is not JSON) is a skip named ``error``, its stored copy
kept until it loads again; a scan that fails part-way (``scan_error``) syncs what it listed and
deletes nothing.

An item skipped when read for what it holds (binary, not UTF-8, too large, encrypted, no text ...)
is remembered with its fingerprint and the connector's settings (``remember_skips``): while both are
the same, the next sync counts the same skip without reading it again (an S3 object is not
downloaded again). ``--full`` reads everything again; skips that may pass (``ERROR_SKIP_REASONS``,
``vanished``) are never remembered.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from context_harness.common.timestamps import to_iso
from context_harness.config import ChunkingConfig, FormatsConfig, Unavailable
from context_harness.connectors.base import (
    ERROR_SKIP_REASONS,
    Candidate,
    Connector,
    HealthReporting,
    PathScanning,
    Prefetching,
    ScanReport,
    SourceItem,
    runnable,
    settings_of,
)
from context_harness.formats import ocr
from context_harness.formats.documents import Converted, ConvertOptions
from context_harness.ingest.chunk_worker import ChunkedDocument, Chunker, Job
from context_harness.ingest.chunking import CHUNKER_VERSION
from context_harness.ingest.code_chunking import CODE_CHUNKER_VERSION
from context_harness.models import SkippedItem, SyncSummary
from context_harness.store.backend import DocumentStorage, KeywordRanking, KeywordSession, flush_index, indexed_document
from context_harness.store.records import DocumentRow, DocumentWrite, document_id

log = logging.getLogger(__name__)

ProgressFn = Callable[[dict[str, Any]], None]
WRITE_BATCH = 500
CHUNK_BATCH = 128  # documents per chunking job (a document to convert counts as its cost)
NAMES_IN_NOTES = 3  # skipped items named per reason in the `sources` notes
MAX_JOBS = 8  # chunking jobs in flight before the sync waits for the oldest
TRANSIENT_SKIPS = ERROR_SKIP_REASONS | {"vanished", "duplicate_id", "symlink", "not_a_regular_file"}
"""Skips that say nothing lasting about an item's content: never remembered, the item is read again."""


@dataclass
class DocumentChanges:
    """The ids of the documents a committed sync added, updated and deleted (what listeners hear)."""

    added: set[str] = field(default_factory=set)
    updated: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.deleted)

    def merge(self, other: DocumentChanges) -> None:
        self.added |= other.added
        self.updated |= other.updated
        self.deleted |= other.deleted


@dataclass
class SyncOptions:
    full: bool = False
    dry_run: bool = False
    limit: int | None = None


def chunking_signature(config: ChunkingConfig, formats: FormatsConfig | None = None) -> str:
    """What a source's chunks were made with: a change re-reads every item (converting documents again).
    ``[formats]`` counts only when set, so that workspaces that never set it keep their signature."""
    signature: dict[str, object] = {"version": CHUNKER_VERSION, "code": CODE_CHUNKER_VERSION,
                                    "max_tokens": config.max_tokens, "overlap_tokens": config.overlap_tokens}
    if formats is not None and formats.notebook_outputs:
        signature["notebook_outputs"] = True
    if formats is not None and formats.ocr:
        signature["ocr"] = True
    return json.dumps(signature, sort_keys=True)


def _check_storable(item: SourceItem) -> None:
    """Raise unless ``item`` can be stored: its texts UTF-8 (no lone surrogates), its metadata and tags JSON."""
    for text in (item.source_id, item.title, item.body, item.author, item.source_url, item.content_type):
        if text is not None:
            text.encode("utf-8")
    json.dumps([item.metadata, item.tags], ensure_ascii=False).encode("utf-8")


def document_row(source: str, item: SourceItem, fingerprint: str | None, content_hash: str) -> DocumentRow:
    return DocumentRow(
        id=document_id(source, item.source_id), source=source, source_id=item.source_id,
        source_url=item.source_url, title=item.title, author=item.author, created_at=to_iso(item.created_at),
        updated_at=to_iso(item.updated_at), content_type=item.content_type or "text/plain", body=item.body,
        metadata=item.metadata or {}, tags=list(item.tags or []), content_hash=content_hash, fingerprint=fingerprint,
    )


def converted_row(row: DocumentRow, converted: Converted) -> DocumentRow:
    """``row`` with a converted document's text, and its title, author, creation date and metadata where
    the document's own metadata gives them (else the file's name and times stay). Its ``updated_at`` is
    the later of the file's and the metadata's: a saved file's own "modified" may be stale (a deck
    written by a tool that keeps its template's date), and ``since`` filters must see today's edit."""
    stamps = [stamp for stamp in (to_iso(converted.updated), row.updated_at) if stamp]
    return replace(row, title=converted.title or row.title, body=converted.text, author=converted.author or row.author,
                   created_at=to_iso(converted.created) or row.created_at, updated_at=max(stamps, default=None),
                   metadata={**row.metadata, **converted.metadata} if converted.metadata else row.metadata)


def settings_signature(connector: Connector) -> str:
    """A hash of the connector's settings: a remembered skip holds only while they stay the same (a
    raised ``max_file_size`` reads a too-large item again)."""
    settings = settings_of(connector)
    dumped = settings.model_dump_json() if hasattr(settings, "model_dump_json") else repr(settings)
    return hashlib.sha256(dumped.encode("utf-8", "backslashreplace")).hexdigest()[:16]


def passed_by(target: str, connectors: Iterable[Connector], unavailable: Iterable[Unavailable]) -> dict[str, str]:
    """The sources a sync of ``target`` "all" passes by (``runnable`` is false: a variable not set, a
    script that does not load), each with why; not a registry's connector that is off (in
    ``unavailable`` with an error "off: ...": ``ctx registry list`` says why). Any other target: none."""
    if target != "all":
        return {}
    off = {u.name for u in unavailable if u.kind == "connector" and (u.error or "").startswith("off:")}
    return {c.label: (c.health()[1] if isinstance(c, HealthReporting) else None) or "it cannot run now"
            for c in connectors if not runnable(c) and c.label not in off}


def skip_notes(summary: SyncSummary) -> str:
    """``skipped: encrypted 1 (secret.pdf), too_large 2 (a.md, b.md)`` for the ``sources`` notes."""
    parts = []
    for reason, count in summary.skipped_reasons.items():
        names = [i.source_id for i in summary.skipped_items if i.reason == reason]
        shown = ", ".join(names[:NAMES_IN_NOTES]) + (", …" if count > min(len(names), NAMES_IN_NOTES) else "")
        parts.append(f"{reason} {count}" + (f" ({shown})" if names else ""))
    return "skipped: " + ", ".join(parts)


class Syncer:
    def __init__(self, store: DocumentStorage, index: KeywordRanking, chunking: ChunkingConfig,
                 formats: FormatsConfig | None = None) -> None:
        self.store = store
        self.index = index
        self.chunking = chunking
        self.formats = formats or FormatsConfig()

    def catch_up(self) -> None:
        """Index documents an earlier write stored but could not index (its keyword commit failed:
        a full disk, a read-only index folder). Runs after a successful sync, whose caller holds the
        workspace's writer lock, so nothing queued belongs to a write still in progress."""
        if self.store.queued(1):
            log.info("indexing %d documents an earlier write left queued", self.store.queued_count())
            flush_index(self.store, self.index)

    def chunking_changed(self, label: str) -> bool:
        stored = self.store.get_meta(f"chunking:{label}")
        return stored is not None and stored != chunking_signature(self.chunking, self.formats)

    def sync(self, connector: Connector, options: SyncOptions, progress: ProgressFn | None = None,
             budget: list[int] | None = None, changes: DocumentChanges | None = None) -> SyncSummary:
        """Sync one connector. ``budget`` is a shared one-element list holding the remaining ``limit``;
        ``changes`` collects the ids of the documents changed."""
        with contextlib.ExitStack() as stack:
            run = _SyncRun(self, connector, options, progress, _Budget(budget), stack)
            summary = run.run()
        if not options.dry_run:
            self.catch_up()
        if changes is not None:
            changes.merge(run.changes)
        return summary

    def sync_paths(self, connector: Connector, rel_paths: Iterable[str],
                   changes: DocumentChanges | None = None) -> SyncSummary:
        """Sync only what lies at or under ``rel_paths`` (files or folders, relative to the connector's
        root), deciding each by the connector's own scan rules (``scan_paths``), and commit the
        keyword index once. A connector that cannot scan paths (or a tree that only a full scan can
        judge) gets a full incremental sync instead."""
        with contextlib.ExitStack() as stack:
            run = _PathSyncRun(self, connector, SyncOptions(), None, _Budget(None), stack)
            run.paths = list(rel_paths)
            summary = run.run()
        self.catch_up()
        if changes is not None:
            changes.merge(run.changes)
        return summary


class _Budget:
    """The remaining ``limit`` of changes, shared by the sources of one sync (None: no limit)."""

    def __init__(self, cell: list[int] | None) -> None:
        self.cell = cell

    def left(self) -> bool:
        return self.cell is None or self.cell[0] > 0

    def spend(self) -> None:
        if self.cell is not None:
            self.cell[0] -= 1

    def cap(self, wanted: int) -> int:
        return wanted if self.cell is None else min(wanted, self.cell[0])


FailureFn = Callable[[DocumentRow, str], None]


class _Writer:
    """Chunks changed documents (converting those that come as raw bytes; in helper processes when
    there are many), stores them in batches and feeds the keyword index session, which indexes in its
    own threads while the sync reads on and commits once at the end; until then SQLite's
    ``index_queue`` covers a crash. A document that fails to convert goes to ``failed`` instead.
    Without a session (a dry run) nothing is written."""

    def __init__(self, store: DocumentStorage, label: str, session: KeywordSession | None, chunker: Chunker,
                 failed: FailureFn) -> None:
        self.store = store
        self.label = label
        self.session = session
        self.chunker = chunker
        self.failed = failed
        self.fed: list[str] = []  # documents the session holds: dequeued once it has committed
        self._rows: list[DocumentRow] = []  # waiting to be chunked
        self._docs: list[Job] = []  # what the chunker gets for each of them
        self._cost = 0
        self._jobs: collections.deque[tuple[Future, list[Job], list[DocumentRow]]] = collections.deque()
        self._writes: list[DocumentWrite] = []
        self._touches: list[tuple[str, str | None]] = []  # (doc id, new fingerprint) of unchanged content

    def add(self, row: DocumentRow, raw: bytes | None = None, cost: int = 1) -> None:
        """Queue ``row`` for chunking; with ``raw``, its body is converted from those bytes first."""
        self._rows.append(row)
        self._docs.append((row.id, row.title, row.body, row.content_type) if raw is None
                          else (row.id, row.title, raw, row.content_type))
        self._cost += cost
        if self._cost >= CHUNK_BATCH:
            self._submit()
            self._collect(wait=False)

    def touch(self, doc_id: str, fingerprint: str | None) -> None:
        self._touches.append((doc_id, fingerprint))
        if len(self._touches) >= WRITE_BATCH:
            self._flush()

    def finish(self) -> None:
        """Chunk and store everything added so far."""
        self._submit()
        self._collect(wait=True)
        self._flush()

    def delete(self, doc_ids: list[str]) -> None:
        if doc_ids and self.session is not None:
            self.store.apply(self.label, [], doc_ids)
            self._feed(doc_ids, [])

    def _submit(self) -> None:
        if self._rows:
            docs = list(self._docs)
            self._jobs.append((self.chunker.submit(docs, self._cost), docs, list(self._rows)))
            self._rows.clear()
            self._docs.clear()
            self._cost = 0

    def _collect(self, wait: bool) -> None:
        while self._jobs and (wait or len(self._jobs) > MAX_JOBS or self._jobs[0][0].done()):
            future, docs, rows = self._jobs.popleft()
            results = self.chunker.result(future, docs)
            del future, docs  # only the writes hold the chunks now (_flush lets them go once stored)
            for row, done in zip(rows, results, strict=True):
                self._written(row, done)
            del results
            if len(self._writes) >= WRITE_BATCH:
                self._flush()

    def _written(self, row: DocumentRow, done: ChunkedDocument) -> None:
        if done.failure is not None:
            self.failed(row, done.failure)
            return
        if done.converted is not None:
            row = converted_row(row, done.converted)
        self._writes.append(DocumentWrite(row, done.chunks))

    def _flush(self) -> None:
        writes, touches = self._writes, self._touches
        self._writes, self._touches = [], []
        if self.session is not None and (writes or touches):
            self.store.apply(self.label, writes, [], touches)
            rows = [w.row for w in writes]
            del writes  # stored: the chunks go before the keyword index copies the bodies (a huge file's peak)
            self._feed([r.id for r in rows], rows)

    def _feed(self, doc_ids: list[str], rows: list[DocumentRow]) -> None:
        assert self.session is not None
        self.session.replace(doc_ids, [indexed_document(row) for row in rows])
        self.fed.extend(doc_ids)


class _SyncRun:
    """One connector's sync: scan, store what changed, delete what disappeared, commit the index."""

    def __init__(self, syncer: Syncer, connector: Connector, options: SyncOptions, progress: ProgressFn | None,
                 budget: _Budget, stack: contextlib.ExitStack) -> None:
        self.syncer = syncer
        self.store = syncer.store
        self.connector = connector
        self.label = connector.label
        self.options = options
        self.emit: ProgressFn = progress or (lambda event: None)
        self.budget = budget
        self.stack = stack
        self.summary = SyncSummary(source=self.label, dry_run=options.dry_run)
        self.report = ScanReport()
        self.stored: dict[str, tuple[str, str | None, str]] = {}  # source_id -> (doc id, fingerprint, hash)
        self.full = options.full
        self.seen: set[str] = set()
        self.changes = DocumentChanges()
        self.partial = False  # a path sync: the rest of the source was not looked at
        self.cut_short = False  # the scan failed part-way: what it did not list is not known to be gone
        self.remembered: dict[str, tuple[str, str]] = {}  # source_id -> (fingerprint|settings, reason)
        self.skips: dict[str, tuple[str, str]] = {}  # what this sync remembers, the same way
        self.signature = ""
        self.converting: dict[str, str] = {}  # with OCR on: doc id -> source_id of the documents to convert

    def run(self) -> SyncSummary:
        started = time.perf_counter()
        candidates = self._scan()
        writer = self._writer(candidates)
        self._prefetch(candidates)
        total = len(candidates)
        self.emit({"event": "start", "source": self.label, "total": total})
        for done, candidate in enumerate(candidates, 1):
            if not self._visit(candidate, writer):
                continue  # a duplicate id
            if done % 200 == 0 or done == total:
                self.emit({"event": "progress", "source": self.label, "done": done, "total": total})
        writer.finish()
        writer.delete(self._missing())
        self.stack.close()  # closes the chunker, then commits the keyword index
        if writer.fed:
            self.store.dequeue(writer.fed)
        self._finish(started)
        return self.summary

    def _scan(self) -> list[Candidate]:
        self.emit({"event": "scan", "source": self.label})
        candidates = sorted(self._listed(self.connector.scan(self.report)), key=lambda c: c.source_id)
        self.stored = self.store.fingerprints(self.label)
        self.full = self.options.full or self.syncer.chunking_changed(self.label)
        self.signature = settings_signature(self.connector)
        if not self.full:
            self.remembered = self.store.remembered_skips(self.label)
        return candidates

    def _skip_key(self, candidate: Candidate | DocumentRow) -> str | None:
        """What a remembered skip of this item holds: its fingerprint and the connector's settings."""
        return f"{candidate.fingerprint}|{self.signature}" if candidate.fingerprint is not None else None

    def _remembered(self, candidate: Candidate) -> str | None:
        """The reason a sync skipped this unchanged item before, or None: read it."""
        if self.full or candidate.source_id in self.stored:
            return None
        fingerprint, reason = self.remembered.get(candidate.source_id, (None, ""))
        return reason if fingerprint is not None and fingerprint == self._skip_key(candidate) else None

    def _listed(self, scan: Iterable[Candidate]) -> list[Candidate]:
        """The scan's candidates. A scan that fails before listing anything fails the sync; one that
        fails part-way keeps what it listed, as a ``scan_error`` skip (and the sync deletes nothing)."""
        candidates: list[Candidate] = []
        try:
            candidates.extend(scan)
        except Exception as exc:
            if not candidates:
                raise
            log.warning("%s: the scan stopped after %d items: %s: %s", self.label, len(candidates),
                        type(exc).__name__, exc)
            self.report.skip("scan_error", f"scan stopped after {len(candidates)} items ({type(exc).__name__})",
                             item=f"(after {candidates[-1].source_id})")
            self.cut_short = True
        return candidates

    def _writer(self, candidates: list[Candidate]) -> _Writer:
        session = None if self.options.dry_run else self.stack.enter_context(self.syncer.index.session())
        chunking, formats = self.syncer.chunking, self.syncer.formats
        if formats.ocr:
            ocr.require()  # a clear error naming the install, before anything is read
        chunker = Chunker(chunking.max_tokens, chunking.overlap_tokens, progress=self._ocr_progress,
                          options=ConvertOptions(notebook_outputs=formats.notebook_outputs, ocr=formats.ocr,
                                                 ocr_page_seconds=formats.ocr_page_seconds))
        self.stack.callback(chunker.close)  # before the index commits (the stack unwinds in reverse)
        if not self.options.dry_run:
            to_read = sum(c.cost for c in candidates if self._may_have_changed(c))
            chunker.expect(self.budget.cap(to_read))
        return _Writer(self.store, self.label, session, chunker, self._failed)

    def _ocr_progress(self, event: dict[str, Any]) -> None:
        """A page read by OCR (``formats/ocr.py``; ``document`` is its id), passed on to the progress display
        with the source and the document's path."""
        document = self.converting.get(event.get("document") or "", event.get("document"))
        self.emit({**event, "source": self.label, "document": document})

    def _prefetch(self, candidates: list[Candidate]) -> None:
        """Tell a connector that fetches ahead (``Prefetching``) which candidates will be loaded."""
        if isinstance(self.connector, Prefetching):
            wanted = [c.source_id for c in candidates if self._may_have_changed(c)]
            self.connector.prefetch(wanted[:self.budget.cap(len(wanted))])

    def _may_have_changed(self, candidate: Candidate) -> bool:
        """False when the fingerprint says the stored copy is current (the item is not even read)."""
        previous = self.stored.get(candidate.source_id)
        if previous is None:
            return self._remembered(candidate) is None
        return self.full or candidate.fingerprint is None or previous[1] != candidate.fingerprint

    def _visit(self, candidate: Candidate, writer: _Writer) -> bool:
        """Classify one candidate and hand a change to the writer; False for a duplicate id."""
        summary = self.summary
        if candidate.source_id in self.seen:
            self.report.skip("duplicate_id", candidate.source_id, item=candidate.source_id)
            return False
        self.seen.add(candidate.source_id)
        previous = self.stored.get(candidate.source_id)
        if previous and not self._may_have_changed(candidate):
            summary.unchanged += 1
            return True
        reason = self._remembered(candidate)
        if reason is not None:  # skipped before, and unchanged since: not read again
            self.report.skip(reason, f"{candidate.source_id} ({reason}; unchanged since)", item=candidate.source_id)
            self.skips[candidate.source_id] = self.remembered[candidate.source_id]
            self.seen.discard(candidate.source_id)
            return True
        if not self.budget.left():
            summary.limited = True
            return True
        loaded = self._load(candidate)
        if loaded is None:
            return True
        item, content_hash = loaded
        if previous and not self.full and previous[2] == content_hash:
            summary.unchanged += 1
            writer.touch(previous[0], candidate.fingerprint)
            return True
        if not self.options.dry_run or item.raw is not None:  # a dry run converts, to report failures
            row = document_row(self.label, item, candidate.fingerprint, content_hash)
            if item.raw is not None and self.syncer.formats.ocr:
                self.converting[row.id] = row.source_id
            writer.add(row, item.raw, candidate.cost)
        if previous:
            summary.updated += 1
            self.changes.updated.add(previous[0])
        else:
            summary.added += 1
            self.changes.added.add(document_id(self.label, candidate.source_id))
        self.budget.spend()
        return True

    def _load(self, candidate: Candidate) -> tuple[SourceItem, str] | None:
        """The candidate's item and its hash, or None: skipped by the connector (unreadable now: a
        stored copy is removed), or failed (``error``: an exception, or an item that cannot be stored;
        a stored copy is kept, and the item is tried again next sync)."""
        try:
            before = dict(self.report.skipped)
            item = candidate.load()
            if item is None:
                self.seen.discard(candidate.source_id)
                grown = [r for r, n in self.report.skipped.items() if n > before.get(r, 0)]
                self._remember(candidate, grown[0] if len(grown) == 1 else None)
                return None
            _check_storable(item)
            return item, item.version()
        except Exception as exc:
            log.warning("%s: skipped %r: %s: %s", self.label, candidate.source_id, type(exc).__name__, exc)
            self.report.skip("error", f"{candidate.source_id} ({type(exc).__name__}: {str(exc)[:200]})",
                             item=candidate.source_id)
            return None

    def _failed(self, row: DocumentRow, reason: str) -> None:
        """A document that could not be converted: skipped and named; a stored copy is removed."""
        self.report.skip(reason, f"{row.source_id} ({reason})", item=row.source_id)
        self._remember(row, reason)
        self.seen.discard(row.source_id)
        if row.source_id in self.stored:
            self.summary.updated -= 1
        else:
            self.summary.added -= 1

    def _remember(self, item: Candidate | DocumentRow, reason: str | None) -> None:
        """Remember an item the connector skipped when read (or that failed to convert) for ``reason``."""
        key = self._skip_key(item)
        if reason is not None and reason not in TRANSIENT_SKIPS and key is not None:
            self.skips[item.source_id] = (key, reason)

    def _missing(self) -> list[str]:
        """Stored documents no longer listed by the connector (within the budget), to delete."""
        deletes: list[str] = []
        if self.cut_short:
            return deletes
        for source_id, (doc_id, _, _) in sorted(self.stored.items()):
            if source_id in self.seen:
                continue
            if not self.budget.left():
                self.summary.limited = True
                break
            deletes.append(doc_id)
            self.budget.spend()
        self.summary.deleted = len(deletes)
        self.changes.deleted.update(deletes)
        return deletes

    def _finish(self, started: float) -> None:
        summary = self.summary
        summary.skipped = sum(self.report.skipped.values())
        summary.skipped_reasons = dict(sorted(self.report.skipped.items()))
        summary.skipped_items = [SkippedItem(source_id=i, reason=r) for i, r in self.report.named]
        for warning in self.report.warnings[:20]:
            log.info("%s: skipped %s", self.label, warning)
        if not self.options.dry_run:
            flush_index(self.store, self.syncer.index)
            self.store.record_sync(self.label, skip_notes(summary) if summary.skipped else None,
                                   keep_notes=self.partial)
            if not summary.limited and not self.partial and not self.cut_short:
                signature = chunking_signature(self.syncer.chunking, self.syncer.formats)
                self.store.set_meta(f"chunking:{self.label}", signature)
            if not self.partial and (self.skips or self.remembered):
                self.store.remember_skips(self.label, self.skips)
        if self.options.dry_run:
            self.changes = DocumentChanges()
        summary.seconds = round(time.perf_counter() - started, 3)
        self.emit({"event": "done", "source": self.label, **summary.model_dump(exclude={"source"})})


class _PathSyncRun(_SyncRun):
    """A sync of some paths of a source: the candidates at or under them, the stored documents there."""

    paths: list[str]

    def _scan(self) -> list[Candidate]:
        connector = self.connector
        scan = connector.scan_paths(self.paths, self.report) if isinstance(connector, PathScanning) else None
        if scan is None or scan.full:
            return super()._scan()
        self.partial = True
        self.stored = self.store.fingerprints(self.label, under=scan.covered)
        self.full = self.syncer.chunking_changed(self.label)
        return sorted(scan.candidates, key=lambda c: c.source_id)
