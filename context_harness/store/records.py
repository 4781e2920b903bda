"""The records that cross the storage seam (``store/backend.py``): what the core writes to a backend and
reads back, the same for the embedded backend and PostgreSQL. Plain data; no backend imports them
from another backend."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import urlsplit

log = logging.getLogger(__name__)


def document_id(source: str, source_id: str) -> str:
    """Stable id for the same (source, source_id) across syncs: lowercase hex."""
    return hashlib.sha256(f"{source}\x00{source_id}".encode()).hexdigest()[:24]


def chunk_id(doc_id: str, text: str, occurrence: int = 0) -> str:
    """Content-addressed chunk id: the same text in the same document keeps its id."""
    return hashlib.sha256(f"{doc_id}\x00{occurrence}\x00{text}".encode()).hexdigest()[:32]


URL_SCHEMES = frozenset({"http", "https", "file", "ftp", "sftp", "ssh", "git", "git+ssh", "git+https", "s3"})
"""Schemes a document's ``source_url`` may have. Anything else (``javascript:``, ``data:``,
``vbscript:``, ...) could run or show content when a client renders the URL as a link: it is not
stored. A URL without a scheme (a relative path, an scp-style ``git@host:repo``) is kept."""


def safe_source_url(url: str | None) -> str | None:
    """``url`` when its scheme is in ``URL_SCHEMES`` (or it has none), else None. The scheme is read
    as a browser reads it: leading spaces and control characters skipped, tabs and newlines ignored."""
    if not url:
        return url
    scheme = urlsplit(url).scheme.lower()
    return url if not scheme or scheme in URL_SCHEMES else None


@dataclass
class DocumentRow:
    """A stored document. Its ``source_url`` is checked here, at the stores' boundary (both backends
    build every row they write or read through this class): see ``safe_source_url``."""

    id: str
    source: str
    source_id: str
    source_url: str | None
    title: str | None
    author: str | None
    created_at: str | None
    updated_at: str | None
    content_type: str
    body: str
    metadata: dict[str, Any]
    tags: list[str]
    content_hash: str
    fingerprint: str | None

    def __post_init__(self) -> None:
        safe = safe_source_url(self.source_url)
        if safe != self.source_url:
            log.warning("%s: %s: not storing its source_url %r (allowed schemes: %s)", self.source, self.source_id,
                        str(self.source_url)[:80], ", ".join(sorted(URL_SCHEMES)))
            self.source_url = safe


@dataclass
class DocumentWrite:
    """A document and its chunks, ready to store."""

    row: DocumentRow
    chunks: list[StoredChunk]


@dataclass
class StoredChunk:
    id: str
    idx: int
    text: str
    content_hash: str
    heading: str
    start: int | None = None  # where the chunk's span begins in the body (``passages``); None: not stored


@dataclass(frozen=True)
class WindowRead:
    """What ``read_window`` reads of a document for one window of ``get`` (``search/windows``): the
    document with ``body`` cut to the slice from ``base``, the whole body's length in characters
    (``total``), its number of chunks (``count``) and the chunks within the window's reach."""

    row: DocumentRow
    base: int
    total: int
    count: int
    chunks: list[StoredChunk]


@dataclass(frozen=True)
class ChunkPlace:
    """Which chunk of a document holds a place in its body: position and heading path."""

    idx: int
    heading: str


class Summary(NamedTuple):
    """What a search result shows of a document (``summaries``). ``body`` is read with ``with_body``;
    ``places``, the chunks' (starts, positions, headings), where a backend reads them with the row
    (``with_places`` on PostgreSQL, where a query is a round trip), else None."""

    title: str | None
    source: str
    source_id: str
    updated_at: str | None
    source_url: str | None
    version: str  # the content hash
    body: str | None = None
    places: tuple[list, list, list] | None = None
    dated: str | None = None  # the document's own date (``common/dates.py``), when it has one


def chunk_place(places: tuple[list, list, list], offset: int) -> ChunkPlace | None:
    """The chunk holding ``offset`` of the body, as ``chunks_at`` finds it (the last one starting at or
    before it), from a document's chunk places (starts, positions, headings: ``summaries(with_places)``);
    None when no chunk has a stored start at or before it."""
    best = None
    for start, idx, heading in zip(*places, strict=True):
        if start is not None and start <= offset and (best is None or idx > best.idx):
            best = ChunkPlace(idx, heading)
    return best


@dataclass
class IndexedDocument:
    doc_id: str
    title: str
    body: str
    source: str
    tags: list[str]
    updated: dt.datetime | None
    language: str = "auto"  # an ISO code to analyse it in; "auto": its source's configured one, else detected
    content_type: str = "text/plain"  # code (``common.symbols``) is indexed with its symbols too


@dataclass
class KeywordFilters:
    source: str | None = None
    tags: list[str] | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    symbol: str | None = None  # only code defining this symbol (a path or its end: "Harness.open")


@dataclass
class DocumentHit:
    doc_id: str
    score: float


@dataclass(frozen=True)
class PendingChunk:
    """A chunk text without a vector, with what leads it in the embedded text (see ``embedding_text``)."""

    content_hash: str
    title: str | None
    heading: str
    text: str
    row: int = field(default=0, compare=False)  # the chunk's rowid: pass it as ``after`` for the next page


__all__ = ["ChunkPlace", "DocumentHit", "DocumentRow", "DocumentWrite", "IndexedDocument", "KeywordFilters",
           "PendingChunk", "StoredChunk", "Summary", "URL_SCHEMES", "WindowRead", "chunk_id",
           "chunk_place", "document_id", "safe_source_url"]


@dataclass(frozen=True)
class SyncOutcome:
    """How the last whole sync of a source ended, in whichever process ran it: ``outcome`` is "ok" or
    "error" (then ``error`` says what went wrong); ``at`` is when it ended (ISO 8601, UTC)."""

    outcome: str
    error: str | None
    at: str


@dataclass(frozen=True)
class SyncEntry:
    """One whole sync of a source in the sync history: how it ended (``outcome``, ``error`` as in
    ``SyncOutcome``), when it started and ended (ISO 8601, UTC, whole seconds) and how long it took
    (``seconds``), and its counts (None when it failed before it had them). Syncs in a row that
    changed nothing are one entry (``repeats`` of them, from the first's start to the last's end): a
    source polled every 10 s would otherwise push its real syncs out of the history in minutes."""

    source: str
    outcome: str
    error: str | None
    started_at: str
    ended_at: str
    seconds: float
    added: int | None = None
    updated: int | None = None
    deleted: int | None = None
    unchanged: int | None = None
    skipped: int | None = None
    repeats: int = 1

    def quiet(self) -> bool:
        """An ok sync that added, updated and deleted nothing."""
        return self.outcome == "ok" and self.added == 0 and self.updated == 0 and self.deleted == 0


def repeats(new: SyncEntry, last: SyncEntry) -> bool:
    """Whether ``new`` only repeats ``last`` (both quiet, the same skips): it extends that entry."""
    return new.source == last.source and new.quiet() and last.quiet() and new.skipped == last.skipped
