"""The window of a document that ``get`` returns: which part of the body, and the chunks in it.

Spans come from the chunks' stored starts (``passages.spans_of``), or, for chunks synced before
starts were stored, from their texts (``passages.chunk_spans``). See ``passages`` for how a window
ends and where a chunk's section begins and ends.

A chunk's window is its section (``passages.section_window``; in code, a definition with the ones
inside it: ``symbol_sections``), at most ``SECTION_CHARS`` characters unless the request's
``max_chars`` says otherwise (or ``[server] get_max_chars`` is smaller), centred on the chunk when the
section is longer.

A window holds at most ``MAX_GET_CHARS`` characters, whatever the request: ``max_chars`` 0 (and a
request-less read, as scripts make) asks for the whole document and gets it up to that ceiling,
with ``next_offset`` to read on. Where the store can read part of a document (``WindowedReads``: both
backends), ``read_window`` reads only the chunks near the window and the slice of the body it needs,
so the work of a ``get`` follows the size of its answer, not of the document; it gives the same
answer as ``document_window`` over the whole document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from context_harness.common import passages
from context_harness.common.symbols import language_of
from context_harness.errors import BadRequest, NotFound
from context_harness.models import MAX_GET_CHARS, SECTION_CHARS, ChunkOut, DocumentOut, GetRequest, TextRange
from context_harness.store.backend import DocumentStorage
from context_harness.store.records import DocumentRow, StoredChunk, WindowRead

FAR = 1 << 53  # further than any document reaches


@runtime_checkable
class WindowedReads(Protocol):
    """A store that reads part of a document (both backends: ``store/documents.py``, ``store/postgres``)."""

    def read_window(self, doc_id: str, chunk: int | None, offset: int, reach: int) -> WindowRead | None: ...
    def chunk_headings(self, doc_id: str, first: int, last: int) -> tuple[list[str], int] | None: ...


@dataclass(frozen=True)
class Headings:
    """The heading paths of the chunks ``first`` to ``first + len(headings) - 1`` of a document of
    ``count`` chunks (the console's table of contents around the part it shows)."""

    first: int
    headings: list[str]
    count: int


def headings_near(store: DocumentStorage, doc_id: str, around: int, reach: int) -> Headings:
    """The headings of ``2 * reach + 1`` chunks around chunk ``around`` (``reach`` on each side, more
    after it near the start): read alone where the store can (``WindowedReads``), else from all the
    document's chunks."""
    first = max(0, around - reach)
    if isinstance(store, WindowedReads):
        found = store.chunk_headings(doc_id, first, first + 2 * reach)
        if found is None:
            raise not_found(doc_id)
        return Headings(first, *found)
    whole = store.document_with_chunks(doc_id)
    if whole is None:
        raise not_found(doc_id)
    return Headings(first, [c.heading for c in whole[1][first:first + 2 * reach + 1]], len(whole[1]))


def not_found(doc_id: str) -> NotFound:
    return NotFound(f"no document with id {doc_id!r}; use an id returned by search")


def budget(request: GetRequest | None, default_max_chars: int) -> int:
    """The most characters of body the answer holds: the request's ``max_chars``, else the default
    (for a chunk, its section: ``SECTION_CHARS`` or the default if smaller); 0 (the whole document)
    and anything above are the ceiling, ``MAX_GET_CHARS``."""
    if request is not None and request.max_chars is not None:
        return min(request.max_chars or MAX_GET_CHARS, MAX_GET_CHARS)
    ceiling = min(default_max_chars or MAX_GET_CHARS, MAX_GET_CHARS)
    return min(SECTION_CHARS, ceiling) if request is not None and request.chunk is not None else ceiling


def symbol_sections(row: DocumentRow, headings: list[str], k: int | None) -> list[str]:
    """``headings`` as chunk ``k``'s section reads them: in code (``common.symbols``) the chunks of the
    definitions inside ``k``'s (a class's methods) belong to its section, so ``get`` of a class's chunk
    returns the class whole (within the budget); a module's own chunks keep to themselves."""
    if k is None or not 0 <= k < len(headings) or "." not in headings[k] or language_of(row.content_type) is None:
        return headings
    own = headings[k]
    return [own if heading.startswith(own + ".") else heading for heading in headings]


def spans(body: str, chunks: Sequence[StoredChunk], overlap: int) -> list[tuple[int, int]]:
    starts = [c.start for c in chunks if c.start is not None]
    if len(starts) == len(chunks):
        return passages.spans_of(starts, len(body))
    return passages.chunk_spans(body, [c.text for c in chunks], overlap)


def _out_of_range(chunk: int, count: int) -> BadRequest:
    return BadRequest(f"chunk {chunk} is out of range: this document has {count} chunks (0-{count - 1})"
                      if count else "this document has no chunks")


def _past_end(offset: int, total: int) -> BadRequest:
    return BadRequest(f"offset {offset} is past the end of the document ({total} characters)")


def window(body: str, spans: list[tuple[int, int]], headings: Sequence[str], request: GetRequest | None,
           budget: int) -> tuple[int, int]:
    """``[start, end)`` of the body that ``request`` asks for, at most ``budget`` characters (``headings``:
    the chunks' heading paths, for a chunk's section)."""
    if request is not None and request.chunk is not None:
        if request.chunk >= len(spans):
            raise _out_of_range(request.chunk, len(spans))
        return passages.section_window(body, spans, headings, request.chunk, budget)
    offset = (request.offset or 0) if request is not None else 0
    if offset > len(body):
        raise _past_end(offset, len(body))
    return offset, passages.window_end(body, offset, budget)


def _answer(row: DocumentRow, part: str, base: int, total: int, chunks: Sequence[StoredChunk],
            found: Sequence[tuple[int, int]], start: int, end: int) -> DocumentOut:
    """The answer for the window ``[start, end)``; ``part`` is the body from ``base`` on (or all of it)."""
    whole = start == 0 and end == total
    # The chunks whose spans overlap the window (an empty span counts as its one position); a
    # window's chunks carry no text, as the body already holds it.
    shown = [ChunkOut(index=c.idx, text=c.text if whole else "", heading=c.heading or None, start=s, end=e)
             for c, (s, e) in zip(chunks, found, strict=True) if whole or (s < end and max(e, s + 1) > start)]
    return DocumentOut(
        id=row.id, source=row.source, source_id=row.source_id, source_url=row.source_url, title=row.title,
        author=row.author, created_at=row.created_at, updated_at=row.updated_at,
        content_type=row.content_type, body=part[start - base:end - base], metadata=row.metadata, chunks=shown,
        truncated=not whole, range=TextRange(start=start, end=end), total_chars=total,
        next_offset=end if end < total else None, version=row.content_hash,
    )


def document_window(row: DocumentRow, chunks: Sequence[StoredChunk], request: GetRequest | None,
                    default_max_chars: int, overlap: int) -> DocumentOut:
    """The document as ``get`` returns it, from the whole of it: the window ``request`` names
    (``max_chars`` defaulting to ``default_max_chars``; without ``request``, from the start), with the
    chunks overlapping it."""
    found = spans(row.body, chunks, overlap)
    headings = symbol_sections(row, [c.heading or "" for c in chunks], request.chunk if request is not None else None)
    start, end = window(row.body, found, headings, request, budget(request, default_max_chars))
    return _answer(row, row.body, 0, len(row.body), chunks, found, start, end)


def read(store: DocumentStorage, doc_id: str, request: GetRequest | None, default_max_chars: int,
         overlap: int) -> DocumentOut:
    """The answer of ``get``: read in proportion to the window where the store can (``read_window``),
    else from the whole document (``document_window``)."""
    if isinstance(store, WindowedReads):
        doc = read_window(store, doc_id, request, default_max_chars)
        if doc is not None:
            return doc
    found = store.document_with_chunks(doc_id)
    if found is None:
        raise not_found(doc_id)
    return document_window(*found, request, default_max_chars, overlap)


def read_window(store: WindowedReads, doc_id: str, request: GetRequest | None,
                default_max_chars: int) -> DocumentOut | None:
    """``document_window``'s answer, read from ``store`` in proportion to the window
    (``WindowedReads.read_window``: the chunks within the window's reach and the slice of the body it
    may cover). None when the chunks' starts are not stored (then only the whole document tells where
    they lie)."""
    size = budget(request, default_max_chars)
    # Past any body: a larger chunk number or offset answers the same, and stays within SQL's integers.
    k = min(request.chunk, FAR) if request is not None and request.chunk is not None else None
    offset = min(request.offset or 0, FAR) if request is not None else 0
    # A chunk's window lies within the budget of its start (passages.section_window), and so do the
    # chunks and text that tell where its section begins and ends: the reach is the budget.
    found = store.read_window(doc_id, k, offset, size)
    if found is None:
        raise not_found(doc_id)
    row, lo, total, count, chunks = found.row, found.base, found.total, found.count, found.chunks
    if k is not None and k >= count:
        raise _out_of_range(k, count)
    if count and (not chunks or any(c.start is None for c in chunks)):
        return None
    starts = [c.start or 0 for c in chunks]
    if chunks and chunks[-1].idx != count - 1:
        chunks = chunks[:-1]  # the chunk after the reach: read for where the one before it ends
    placed = list(zip(starts, [*starts[1:], total], strict=False))[:len(chunks)]
    if k is not None:
        local = [(s - lo, e - lo) for s, e in placed]  # in the slice of the body read
        local_k = k - chunks[0].idx
        start, end = passages.section_window(row.body, local, symbol_sections(row, [c.heading or "" for c in chunks],
                                                                              local_k), local_k, size)
        start, end = start + lo, end + lo
    else:
        if offset > total:
            raise _past_end(offset, total)
        start, end = offset, offset + passages.window_end(row.body, 0, size)
    return _answer(row, row.body, lo, total, chunks, placed, start, end)


__all__ = ["Headings", "WindowedReads", "budget", "document_window", "headings_near", "not_found", "read",
           "read_window", "spans", "window"]
