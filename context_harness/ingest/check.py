"""``ctx check``: do SQLite (documents, chunks, the keyword-index queue), the keyword index and the
vectors agree? Each problem is one line naming what is wrong and what fixes it; ``repair`` fixes what
can be fixed from what is stored (the sources are not read): the queue is flushed, missing and
duplicated keyword entries are indexed anew and extra ones dropped, chunks of gone documents and
vectors no chunk uses are deleted, documents without chunks are chunked again. A damaged SQLite file
or vectors of another embedder are reported with the command that rebuilds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from context_harness.config import ChunkingConfig
from context_harness.ingest.chunk_worker import chunk_rows
from context_harness.models import CheckProblem
from context_harness.store.backend import DocumentStorage, KeywordRanking, VectorStorage, flush_index
from context_harness.store.faults import is_panic
from context_harness.store.records import DocumentWrite, StoredChunk


@dataclass
class Checker:
    store: DocumentStorage
    index: KeywordRanking
    vectors: VectorStorage | None
    chunking: ChunkingConfig
    repair: bool = False
    problems: list[CheckProblem] = field(default_factory=list)

    def run(self) -> list[CheckProblem]:
        verdict = self.store.quick_check()
        if verdict != "ok":
            self.problems.append(CheckProblem(kind="sqlite", message=(
                f"the SQLite database is damaged ({verdict}); move the data folder aside and run "
                "`ctx sync --full` to rebuild it from the sources")))
            return self.problems  # nothing else can be trusted
        self._chunks()
        self._keyword()
        self._vectors()
        return self.problems

    def _found(self, kind: str, message: str, fix: object = None) -> None:
        repaired = False
        if self.repair and fix is not None:
            fix()  # type: ignore[operator]
            repaired = True
        self.problems.append(CheckProblem(kind=kind, message=message, repaired=repaired))

    def _chunks(self) -> None:
        stray = self.store.stray_chunks()
        if stray:
            self._found("stray_chunks", f"{stray} chunks belong to no document; `ctx check --repair` deletes them",
                        lambda: self.store.stray_chunks(delete=True))
        unchunked = self.store.unchunked()
        if unchunked:
            names = ", ".join(row.source_id for row in unchunked[:3])
            self._found("unchunked", f"{len(unchunked)} documents have no chunks ({names}); "
                        "`ctx check --repair` chunks them again", lambda: self._rechunk(unchunked))

    def _rechunk(self, rows: list) -> None:
        for row in rows:
            chunks = [StoredChunk(*r) for r in chunk_rows(row.id, row.title, row.body, self.chunking.max_tokens,
                                                          self.chunking.overlap_tokens, row.content_type)]
            self.store.apply(row.source, [DocumentWrite(row, chunks)], [])

    def _keyword(self) -> None:
        queued = self.store.queued_count()
        if queued:
            self._found("index_queue", f"{queued} documents wait for the keyword index (a sync was cut short); "
                        "`ctx check --repair` indexes them", lambda: flush_index(self.store, self.index))
        stored = self.store.all_ids()
        try:
            entries = self.index.doc_id_counts()
            sample = self.store.document(min(stored)) if stored else None
            if sample is not None:  # a search for its words reads term dictionaries and postings too
                self.index.search(" ".join(sample.body.split()[:16]), None, 1)
        except BaseException as exc:  # Tantivy's ValueError, or a Rust panic on damaged files
            if not (isinstance(exc, ValueError) or is_panic(exc)):
                raise
            self._found("keyword_damaged", f"the keyword index cannot be read ({type(exc).__name__}); "
                        "`ctx check --repair` rebuilds it from SQLite", self._rebuild_index)
            return
        missing = sorted(stored - set(entries))
        extra = sorted(set(entries) - stored)
        doubled = sorted(doc_id for doc_id, n in entries.items() if n > 1 and doc_id in stored)
        if missing or doubled:
            kind, what = (("keyword_missing", f"{len(missing)} documents are missing from the keyword index")
                          if missing else ("keyword_duplicate", f"{len(doubled)} documents are in the keyword "
                                           "index more than once"))
            self._found(kind, f"{what}; `ctx check --repair` indexes them anew",
                        lambda: self._reindex(missing + doubled))
        if extra:
            self._found("keyword_extra", f"{len(extra)} keyword-index entries belong to no document; "
                        "`ctx check --repair` drops them", lambda: self.index.replace(extra, []))

    def _rebuild_index(self) -> None:
        self.index.recreate()
        self.store.enqueue_all()
        flush_index(self.store, self.index)

    def _reindex(self, doc_ids: list[str]) -> None:
        self.store.enqueue(doc_ids)
        flush_index(self.store, self.index)

    def _vectors(self) -> None:
        if self.vectors is None:
            return
        orphans = self.vectors.orphans()
        if orphans:
            self._found("orphan_vectors", f"{orphans} vectors belong to no chunk; `ctx check --repair` "
                        "deletes them", self.vectors.delete_orphans)


def check(store: DocumentStorage, index: KeywordRanking, vectors: VectorStorage | None, chunking: ChunkingConfig,
          repair: bool = False) -> list[CheckProblem]:
    """The problems found (with ``repair``: each marked ``repaired`` when it was fixed)."""
    return Checker(store, index, vectors, chunking, repair).run()


__all__ = ["check"]
