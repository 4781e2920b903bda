"""Chunking in helper processes, so that a large sync uses more than one core.

Chunking is pure Python and bound by the interpreter lock; converting a document (PDF, DOCX, HTML:
``formats/documents.py``) is heavy too and happens here, just before its chunking. The rest of a sync
(reading files, SQLite writes, feeding Tantivy, whose indexing runs in its own threads) stays in the
main process.
A ``ChunkPool`` starts ``python -m context_harness.ingest.chunk_worker`` helpers and talks to each
over its stdin/stdout pipes (length-prefixed pickles; the helper's stray output goes to stderr, so
an MCP server's stdout stays clean). Small syncs never start a helper: ``Chunker`` chunks inline
until enough work has queued up, and falls back to inline chunking if a helper fails.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import IO, Any

from context_harness.common import pipes
from context_harness.common.lineage import exit_with_parent
from context_harness.common.passages import chunk_starts
from context_harness.common.symbols import Unparsed, language_of
from context_harness.formats import ocr
from context_harness.formats.documents import ConversionFailed, Converted, ConvertOptions, convert
from context_harness.ingest.chunking import Chunk, chunk_markdown, content_hash, embedding_text
from context_harness.ingest.code_chunking import chunk_code
from context_harness.store.records import StoredChunk, chunk_id

log = logging.getLogger(__name__)

PROCESS_THRESHOLD = 512  # documents queued for chunking before helper processes pay off
MAX_HELPERS = 4
_SAID: set[str] = set()  # reasons to read code as text that hold for every file, once logged

DocumentText = tuple[str, str | None, str] | tuple[str, str | None, str, str]  # (doc_id, title, body[, type])
DocumentFile = tuple[str, str | None, bytes, str]  # (doc_id, title unless it names one, raw bytes, content type)
Job = DocumentText | DocumentFile
ChunkRow = tuple[str, int, str, str, str, int]  # StoredChunk fields
# Per document: its chunk rows; a converted one's (conversion, rows); or why it could not be converted.
Outcome = list[ChunkRow] | tuple[Converted, list[ChunkRow]] | str
Report = Callable[[dict[str, Any]], None]  # hears the pages OCR reads (formats/ocr.py); a helper sends them


@dataclass
class ChunkedDocument:
    chunks: list[StoredChunk]
    converted: Converted | None = None  # a converted document's title, text and metadata
    failure: str | None = None  # why a document could not be converted (a skip reason); then no chunks


def _chunks(title: str | None, body: str, max_tokens: int, overlap_tokens: int,
            content_type: str | None) -> tuple[list[Chunk], int]:
    """The chunks of a body and the overlap they were made with: code by symbol (no overlap), unless
    it must be read as text (``symbols.Unparsed``: then the reason is logged); anything else as text."""
    language = language_of(content_type)
    if language is not None:
        try:
            return chunk_code(body, language, title or "", max_tokens), 0
        except Unparsed as exc:
            if not exc.general:
                log.warning("%s is chunked as text, not by symbol: %s", title, exc.reason)
            elif exc.reason not in _SAID:  # the same for every file: said once
                _SAID.add(exc.reason)
                log.warning("code files are chunked as text, not by symbol: %s", exc.reason)
    return chunk_markdown(body, max_tokens, overlap_tokens), overlap_tokens


def chunk_rows(doc_id: str, title: str | None, body: str, max_tokens: int, overlap_tokens: int,
               content_type: str | None = None) -> list[ChunkRow]:
    """A document's chunks as stored: content-addressed id, position, text, embedding hash, heading
    and where its span begins in the body."""
    rows = []
    seen: dict[str, int] = {}
    chunks, overlap_tokens = _chunks(title, body, max_tokens, overlap_tokens, content_type)
    starts = chunk_starts(body, [chunk.text for chunk in chunks], overlap_tokens)
    for chunk, start in zip(chunks, starts, strict=True):
        occurrence = seen.get(chunk.text, 0)
        seen[chunk.text] = occurrence + 1
        heading = " > ".join(chunk.heading_path)
        rows.append((chunk_id(doc_id, chunk.text, occurrence), chunk.index, chunk.text,
                     content_hash(embedding_text(title, heading, chunk.text)), heading, start))
    return rows


def _process(doc: Job, max_tokens: int, overlap_tokens: int, options: ConvertOptions | None = None,
             report: Report | None = None) -> Outcome:
    if isinstance(doc[2], str):
        return chunk_rows(doc[0], doc[1], doc[2], max_tokens, overlap_tokens, doc[3] if len(doc) > 3 else None)
    doc_id, fallback_title, raw, content_type = doc
    try:
        with ocr.reporting(report, doc_id):  # the sync names the document by its path
            converted = convert(raw, content_type, options)
    except ConversionFailed as exc:
        return exc.reason
    converted = replace(converted, title=converted.title or fallback_title)
    return converted, chunk_rows(doc_id, converted.title, converted.text, max_tokens, overlap_tokens)


def _chunk_all(docs: list[Job], max_tokens: int, overlap_tokens: int,
               options: ConvertOptions | None = None, report: Report | None = None) -> list[Outcome]:
    return [_process(doc, max_tokens, overlap_tokens, options, report) for doc in docs]


def _chunked(outcome: Outcome) -> ChunkedDocument:
    if isinstance(outcome, str):
        return ChunkedDocument([], failure=outcome)
    if isinstance(outcome, tuple):
        converted, rows = outcome
        return ChunkedDocument([StoredChunk(*row) for row in rows], converted=converted)
    return ChunkedDocument([StoredChunk(*row) for row in outcome])


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _send(stream: IO[bytes], obj: object) -> None:
    pipes.send(stream, obj)


def _receive(stream: IO[bytes]) -> Any:
    return pipes.receive(stream, "the chunking helper")


# -- the parent side -----------------------------------------------------------------------------

class _Helper:
    """One helper process and the thread that feeds it one job at a time."""

    def __init__(self, jobs: queue.Queue, report: Report | None = None) -> None:
        self.report = report
        self.process = subprocess.Popen(
            [sys.executable, "-m", "context_harness.ingest.chunk_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, close_fds=True,
        )
        self.thread = threading.Thread(target=self._serve, args=(jobs,), name="ctx-chunk-helper", daemon=True)
        self.thread.start()

    def _serve(self, jobs: queue.Queue) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        while True:
            job = jobs.get()
            if job is None:
                return
            future, request = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                _send(self.process.stdin, request)
                future.set_result(self._reply())
            except BaseException as exc:
                future.set_exception(exc)
                return

    def _reply(self) -> Any:
        """The helper's answer to a job; the OCR progress it sends before it is passed on."""
        assert self.process.stdout is not None
        while True:
            reply = _receive(self.process.stdout)
            if not (isinstance(reply, dict) and reply.get("event") == "ocr"):
                return reply
            if self.report is not None:
                self.report(reply)

    def close(self) -> None:
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


class ChunkPool:
    """Helper processes chunking batches of documents; ``submit`` returns a Future per batch."""

    def __init__(self, max_tokens: int, overlap_tokens: int, helpers: int,
                 options: ConvertOptions | None = None, report: Report | None = None) -> None:
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.options = options
        self._jobs: queue.Queue = queue.Queue()
        self._helpers = [_Helper(self._jobs, report) for _ in range(helpers)]

    def submit(self, docs: list[Job]) -> Future:
        future: Future = Future()
        self._jobs.put((future, (self.max_tokens, self.overlap_tokens, docs, self.options)))
        return future

    def close(self) -> None:
        for _ in self._helpers:
            self._jobs.put(None)
        for helper in self._helpers:
            helper.close()
            helper.thread.join(timeout=5)
        while True:  # jobs no helper took (all of them died): fail them rather than leave them hanging
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is not None and job[0].set_running_or_notify_cancel():
                job[0].set_exception(EOFError("no chunking helper is running"))


class Chunker:
    """Chunks (and converts) batches of documents inline, or in helper processes once a sync is large
    enough: ``threshold`` counts documents, a document to convert as its ``cost``. ``options`` say how
    documents are converted (``[formats]``); ``progress`` hears the pages OCR reads."""

    def __init__(self, max_tokens: int, overlap_tokens: int, *, helpers: int | None = None,
                 threshold: int = PROCESS_THRESHOLD, options: ConvertOptions | None = None,
                 progress: Report | None = None) -> None:
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.options = options
        self.progress = progress
        self.helpers = max(0, min(available_cores() - 1, MAX_HELPERS)) if helpers is None else helpers
        self.threshold = threshold
        self._queued = 0
        self._pool: ChunkPool | None = None
        self._failed = False

    def expect(self, documents: int) -> None:
        """Start the helpers now if about ``documents`` will be chunked (they start while files load)."""
        if documents >= self.threshold:
            self._start()

    def _start(self) -> None:
        if self._pool is None and not self._failed and self.helpers > 0:
            try:
                self._pool = ChunkPool(self.max_tokens, self.overlap_tokens, self.helpers, self.options,
                                       self.progress)
            except OSError as exc:
                log.warning("could not start chunking helpers (%s); chunking in this process", exc)
                self._failed = True

    def submit(self, docs: list[Job], cost: int | None = None) -> Future:
        self._queued += len(docs) if cost is None else cost
        if self._queued >= self.threshold:
            self._start()
        if self._pool is not None:
            return self._pool.submit(docs)
        return self.inline(docs)

    def inline(self, docs: list[Job]) -> Future:
        future: Future = Future()
        future.set_result(_chunk_all(docs, self.max_tokens, self.overlap_tokens, self.options, self.progress))
        return future

    def result(self, future: Future, docs: list[Job]) -> list[ChunkedDocument]:
        """The chunks of a submitted batch; chunked (and converted) inline if its helper failed."""
        try:
            rows = future.result()
        except (EOFError, OSError, pickle.PickleError) as exc:
            if not self._failed:
                log.warning("a chunking helper failed (%s); chunking in this process", exc)
            self._failed = True
            self.close()
            rows = _chunk_all(docs, self.max_tokens, self.overlap_tokens, self.options, self.progress)
        return [_chunked(outcome) for outcome in rows]

    def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.close()


# -- the helper side -----------------------------------------------------------------------------

def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    while True:
        try:
            max_tokens, overlap_tokens, docs, options = _receive(stdin)
        except EOFError:
            return
        _send(stdout, _chunk_all(docs, max_tokens, overlap_tokens, options, lambda event: _send(stdout, event)))


def main() -> None:
    exit_with_parent()  # even in the middle of a long conversion, and while another process holds the pipes
    # Keep the result pipe to ourselves: anything printed by accident goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
