"""The window of a document that ``get`` returns: which part of the body, and the chunks in it.

Spans come from the chunks' stored starts (``passages.spans_of``), or, for chunks synced before
starts were stored, from their texts (``passages.chunk_spans``). See ``passages`` for how a window
ends and how a chunk's window widens with its neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_harness import passages
from context_harness.errors import BadRequest
from context_harness.models import ChunkOut, DocumentOut, GetRequest, TextRange
from context_harness.store.documents import DocumentRow, StoredChunk


def spans(body: str, chunks: Sequence[StoredChunk], overlap: int) -> list[tuple[int, int]]:
    starts = [c.start for c in chunks if c.start is not None]
    if len(starts) == len(chunks):
        return passages.spans_of(starts, len(body))
    return passages.chunk_spans(body, [c.text for c in chunks], overlap)


def window(body: str, spans: list[tuple[int, int]], request: GetRequest, max_chars: int) -> tuple[int, int]:
    """``[start, end)`` of the body that ``request`` asks for (``max_chars`` 0: no limit)."""
    total = len(body)
    budget = max_chars or total
    if request.chunk is not None:
        if request.chunk >= len(spans):
            raise BadRequest(f"chunk {request.chunk} is out of range: this document has {len(spans)} "
                             f"chunks (0-{len(spans) - 1})" if spans else "this document has no chunks")
        if not max_chars:
            return 0, total
        return passages.section_window(body, spans, request.chunk, budget)
    offset = request.offset or 0
    if offset > total:
        raise BadRequest(f"offset {offset} is past the end of the document ({total} characters)")
    return offset, passages.window_end(body, offset, budget) if max_chars else total


def document_window(row: DocumentRow, chunks: Sequence[StoredChunk], request: GetRequest | None,
                    default_max_chars: int, overlap: int) -> DocumentOut:
    """The document as ``get`` returns it: the whole of it without ``request``, else the window it
    names (``max_chars`` defaulting to ``default_max_chars``), with the chunks overlapping it."""
    body, total = row.body, len(row.body)
    found = spans(body, chunks, overlap)
    max_chars = default_max_chars if request is None or request.max_chars is None else request.max_chars
    start, end = (0, total) if request is None else window(body, found, request, max_chars)
    whole = start == 0 and end == total
    # The chunks whose spans overlap the window (an empty span counts as its one position); a
    # window's chunks carry no text, as the body already holds it.
    shown = [ChunkOut(index=c.idx, text=c.text if whole else "", heading=c.heading or None, start=s, end=e)
             for c, (s, e) in zip(chunks, found, strict=True) if whole or (s < end and max(e, s + 1) > start)]
    return DocumentOut(
        id=row.id, source=row.source, source_id=row.source_id, source_url=row.source_url, title=row.title,
        author=row.author, created_at=row.created_at, updated_at=row.updated_at,
        content_type=row.content_type, body=body[start:end], metadata=row.metadata, chunks=shown,
        truncated=not whole, range=TextRange(start=start, end=end), total_chars=total,
        next_offset=end if end < total else None, version=row.content_hash,
    )


__all__ = ["document_window", "spans", "window"]
