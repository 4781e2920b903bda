"""Keyword, semantic and hybrid search over the stores, with document-level results.

Keyword: Tantivy BM25 over whole documents. Semantic: exact cosine top-k over chunk vectors, best
chunk per document. Hybrid: both lists fused (``[retrieval] fusion``). Filters apply before every
top-k cut. The section shown: in semantic and hybrid mode the semantic best chunk, when the semantic
list found the document (on the Node.js section questions, hybrid top-1 0.214 -> 0.333 against the
passage with the most query words); otherwise the passage of the document showing the most query
words, or when it has none, the document's opening. Snippets are cut query-aware from it. A hybrid
search ranks BM25, and reads the rows of its best hits, on a helper thread while the query embeds
(``helper_thread.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar, runtime_checkable

from context_harness.common import timestamps
from context_harness.common.analysis import query_words
from context_harness.common.passages import chunk_at
from context_harness.config import Config
from context_harness.embedding.base import BaseEmbedder, Embedder, EmbedderIdentity, EmbedderMismatch
from context_harness.errors import BadRequest, embeddings_disabled
from context_harness.models import (
    SearchCoverage,
    SearchExplain,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from context_harness.search import timewords
from context_harness.search.copies import Copies, HasDocId
from context_harness.search.fusion import DEFAULT_ALPHA, FUSION_VERSION, Fused, fuse, keyword_reference, min_score
from context_harness.search.helper_thread import HelperThreadJob
from context_harness.search.rerank import make_reranker, rerank
from context_harness.search.snippets import Snippet, make_snippet, salient
from context_harness.search.symbols import definition_chunk, symbol_names, with_inline_symbol
from context_harness.search.timewords import TimeSpan
from context_harness.search.title_match import lift_titled
from context_harness.store.backend import DocumentStorage, GraphKeeping, KeywordRanking
from context_harness.store.chunk_scores import SECOND_BONUS, SECOND_FLOOR
from context_harness.store.records import ChunkPlace, DocumentHit, KeywordFilters, StoredChunk, Summary, chunk_place
from context_harness.store.vectors import rebuild_hint, switch_text

T = TypeVar("T", bound=HasDocId)
SPECULATIVE_ROWS = 15  # keyword hits whose rows a hybrid search reads while its query embeds
VECTOR_CHECK_SECONDS = 0.1  # searches look for vectors written by another process at most this often
REFRESH_BACKOFF = 4  # ...and after a refresh taking t seconds, not again for REFRESH_BACKOFF * t


@dataclass
class _Prepared:
    """What the keyword half of a hybrid search made ready for rendering."""

    weights: dict[str, float]  # the salient query words
    rows: dict[str, Summary]  # doc id -> its summary, with body (and places where the backend reads them)


@dataclass
class _Candidate:
    doc_id: str
    score: float
    chunk_id: str | None  # the semantic best chunk, when the semantic list found the document
    explain: SearchExplain | None


class SearchEngine:
    """Stateless per request; holds the stores and a lazily opened vector index."""

    def __init__(self, config: Config, store: DocumentStorage, index: KeywordRanking,
                 semantic: Callable[[], SemanticBackend] | None) -> None:
        self.config = config
        self.store = store
        self.index = index
        self._semantic_factory = semantic
        self._rerank = make_reranker(config)
        self.copies = Copies.of(config)  # sources whose folders overlap: their files listed once (copies.py)

    # -- entry point -------------------------------------------------------------------------

    def resolve_mode(self, request: SearchRequest) -> str:
        mode = request.mode or self.config.retrieval.default_mode
        if mode == "auto":
            backend = self._backend(required=False)
            return "hybrid" if backend is not None and backend.has_vectors() else "keyword"
        if mode in ("semantic", "hybrid"):
            self._backend(required=True)
        return mode

    def search(self, request: SearchRequest) -> SearchResponse:
        request = with_inline_symbol(request)
        mode = self.resolve_mode(request)
        limit = request.limit or self.config.retrieval.final_limit
        filters = filters_of(request)
        if filters is not None and filters.symbol:
            self._symbol_index()  # a backend without one would ignore the filter
        when = self._time_span(request, filters)
        if when is not None and when[0].strip(' ,.?!"'):  # a query of time words alone keeps them
            request = request.model_copy(update={"query": when[0]})
        newest = when is None and not _dated(request) and timewords.asks_latest(request.query)
        pool = max(limit, timewords.LATEST_POOL) if newest else limit
        candidates, prepared, weak = self._ranked(request, mode, filters, pool)
        if when is not None:  # what is dated in the span the time words mean, lifted (see timewords.py)
            since, until = when[1].bounds()
            spanned = replace(filters or KeywordFilters(), since=since, until=until)
            within, more, _ = self._ranked(request, mode, spanned, limit)
            candidates = timewords.lift_spanned(candidates, within, when[1], limit)
            if more is not None:
                prepared = more if prepared is None else _Prepared(prepared.weights, {**more.rows, **prepared.rows})
        elif newest:  # "latest", "finally", "now": the newest of the good matches with a date of their own
            rows = self.store.summaries([c.doc_id for c in candidates])
            candidates = timewords.lift_newest(candidates, {i: r.dated for i, r in rows.items()}, limit)
        response = self._render(candidates, request, mode, prepared)
        if self._rerank is not None:
            rerank(self._rerank, request.query, response, self.config.retrieval, request.explain)
        if mode == "hybrid" and weak and not response.results:
            response.notice = (f"nothing scored above [retrieval] min_score "
                               f"({weak} weaker matches left out): the knowledge base may not answer this; "
                               "try other words, or mode keyword or semantic, which return every match")
        if request.explain:
            response.explain = self._coverage(mode)
        return response

    def _time_span(self, request: SearchRequest, filters: KeywordFilters | None) -> tuple[str, TimeSpan] | None:
        """(the query without its time words, the span they mean: ``timewords.py``), None without any or
        when the request gives a date; for an event ("before my trip to Japan"), the days next to the own
        date of the document that best matches its words."""
        if _dated(request):
            return None
        when = timewords.resolve(request.query, timewords.today(), self.index.languages())
        event = timewords.event_words(request.query) if when is None else None
        if event is None:
            return when
        hits = self.index.search(event.words, filters, 1)
        row = self.store.summaries([hits[0].doc_id]).get(hits[0].doc_id) if hits else None
        return (event.rest, event.span(row.dated)) if row is not None and row.dated else None

    def _ranked(self, request: SearchRequest, mode: str, filters: KeywordFilters | None,
                limit: int) -> tuple[list[_Candidate], _Prepared | None, int]:
        """The best ``limit`` candidates in ``mode``, the keyword half's prepared rows (hybrid), and how
        many were left out as too weak (hybrid)."""
        copies = self.copies if filters is None or not filters.source or ":" not in filters.source else None
        wide = limit * copies.most if copies is not None else limit  # room for the copies left out
        if mode == "keyword":
            return _distinct(copies, self._keyword(request, filters, wide), self.store)[:limit], None, 0
        if mode == "semantic":
            return _distinct(copies, self._semantic(request, filters, wide), self.store)[:limit], None, 0
        return self._hybrid(request, filters, limit, copies)

    def _coverage(self, mode: str) -> SearchCoverage:
        """The chunks, and those the vector index holds (what semantic search saw); no count over
        the vectors (a search that only loaded the index costs nothing more)."""
        chunks = self.store.counts()[1]
        backend = self._backend(required=False)
        usable = backend is not None and backend.has_vectors()
        embedded = len(backend.index()) if backend is not None and usable else 0
        switch = backend.switch() if backend is not None else None
        return SearchCoverage(mode=mode, chunks=chunks, embedded_chunks=min(embedded, chunks),
                              embedder=backend.identity_key() if backend is not None and usable and mode != "keyword"
                              else None, switch=switch)

    # -- retrievers --------------------------------------------------------------------------

    def _keyword(self, request: SearchRequest, filters: KeywordFilters | None, limit: int) -> list[_Candidate]:
        hits = self.index.search(request.query, filters, limit)
        out = []
        for rank, hit in enumerate(hits, 1):
            explain = None
            if request.explain:
                explain = SearchExplain(keyword_score=hit.score, keyword_rank=rank,
                                        notes=["mode=keyword; document score = BM25 over the whole document"])
            out.append(_Candidate(hit.doc_id, hit.score, None, explain))
        return out

    def _semantic_hits(self, request: SearchRequest, filters: KeywordFilters | None, k: int,
                       meanwhile: Callable[[], object] | None = None):
        backend = self._backend(required=True)
        assert backend is not None  # required: raised otherwise
        allowed = self.allowed_documents(filters) if filters else None
        if allowed is not None and not allowed:
            return backend, []
        return backend, backend.top_documents(request.query, k, allowed, meanwhile)

    def _semantic(self, request: SearchRequest, filters: KeywordFilters | None, limit: int) -> list[_Candidate]:
        backend, hits = self._semantic_hits(request, filters, limit)
        out = []
        for rank, (doc_id, chunk_id, score) in enumerate(hits, 1):
            explain = None
            if request.explain:
                explain = SearchExplain(semantic_score=score, semantic_rank=rank,
                                        notes=["mode=semantic; document score = its best chunk's cosine similarity, "
                                               f"plus {SECOND_BONUS} x (second best - {SECOND_FLOOR}) when that is "
                                               f"above {SECOND_FLOOR}",
                                               f"embedder={backend.identity_key()}"])
            out.append(_Candidate(doc_id, score, chunk_id, explain))
        return out

    def _hybrid(self, request: SearchRequest, filters: KeywordFilters | None, limit: int,
                copies: Copies | None = None) -> tuple[list[_Candidate], _Prepared | None, int]:
        """The fused list (scaled fusion: without results under ``min_score``), the keyword half's
        prepared rows, and how many results were left out as too weak."""
        retrieval = self.config.retrieval
        k = max(retrieval.candidate_k, limit)
        # BM25 ranks on a helper thread while this one waits for the query embedding (see helper_thread.py).
        # It starts only once the embedder blocks: started earlier, its Python parts would hold up the
        # embedding's own; with a cached vector it runs here, in turn.
        keyword = HelperThreadJob(lambda spare: self._keyword_half(request, filters, k, spare))
        try:
            backend, semantic_hits = self._semantic_hits(request, filters, k, keyword.start)
        except Exception:
            keyword.result()  # never left running; its own error, if any, comes first (as it ran first before)
            raise
        keyword_hits, prepared = keyword.result()
        embedded = backend.embedded_documents()
        weights = self.index.term_weights(request.query)
        words = query_words(request.query.replace('"', " "), self.index.languages())
        reference = keyword_reference(weights, words) if retrieval.fusion == "scaled" else 1.0
        alpha = DEFAULT_ALPHA.get(retrieval.fusion, 0.0) if retrieval.hybrid_alpha is None else retrieval.hybrid_alpha
        fused = fuse(retrieval.fusion, [(h.doc_id, h.score) for h in keyword_hits],
                     [(doc_id, score) for doc_id, _, score in semantic_hits],
                     alpha=alpha, rrf_k=retrieval.rrf_k, keyword_ref=reference, k=k,
                     keyword_only={h.doc_id for h in keyword_hits if h.doc_id not in embedded})
        titled: set[str] = set()
        if retrieval.title_match > 0 and fused and weights:  # titles holding the whole query rise (title_match.py)
            titles = {doc_id: row.title for doc_id, row in self.store.summaries([f.doc_id for f in fused]).items()}
            fused, titled = lift_titled(fused, words, titles, self.index.stem, retrieval.title_match)
        if copies is not None:
            fused = _distinct(copies, fused[:limit * copies.most], self.store)
        fused = fused[:limit]
        floor = min_score(retrieval.min_score, backend.identity_key()) if retrieval.fusion == "scaled" else 0.0
        strong = [item for item in fused if item.score >= floor] if floor > 0 else fused  # 0: every result
        by_semantic = {doc_id: chunk_id for doc_id, chunk_id, _ in semantic_hits}
        out = []
        for item in strong:
            explain = _fused_explain(item, alpha, reference, item.doc_id in embedded, retrieval.rrf_k) \
                if request.explain else None
            if explain is not None and item.doc_id in titled:
                explain.notes.append(f"its title holds every query word: +{retrieval.title_match} (title_match)")
            out.append(_Candidate(item.doc_id, item.score, by_semantic.get(item.doc_id), explain))
        return out, prepared, len(fused) - len(strong)

    def _keyword_half(self, request: SearchRequest, filters: KeywordFilters | None, k: int,
                      spare: bool) -> tuple[list[DocumentHit], _Prepared | None]:
        """The BM25 list; on a helper with a CPU to spare, also the rows of its best hits, read while the
        query still embeds (most of them make the fused results: ~8 of 10 on SciFact). Snippets are
        cut when rendering: most come from the semantic best chunk, known only then."""
        hits = self.index.search(request.query, filters, k)
        if not spare or not hits:
            return hits, None
        ids = [h.doc_id for h in hits[:SPECULATIVE_ROWS]]
        weights = salient(self.index.term_weights(request.query))
        return hits, _Prepared(weights, self.store.summaries(ids, with_body=True, with_places=True))

    # -- helpers -----------------------------------------------------------------------------

    def _backend(self, required: bool) -> SemanticBackend | None:
        if self._semantic_factory is None:
            if required:
                raise embeddings_disabled()
            return None
        return self._semantic_factory()

    def allowed_documents(self, filters: KeywordFilters) -> set[str]:
        """Document ids passing the filters, computed in SQLite (for the vector top-k); the symbol
        filter's by the keyword index."""
        allowed = self.store.document_ids_matching(filters.source, filters.tags, filters.since, filters.until)
        if filters.symbol:
            allowed &= self._symbol_index().documents_defining(filters.symbol)
        return allowed

    def _defining(self, names: list[str]) -> set[str] | None:
        """The documents defining any of ``names``, where the keyword index knows (else None: any may)."""
        if not names or not isinstance(self.index, SymbolLookup):
            return None
        return set().union(*(self.index.documents_defining(name) for name in names))

    def _symbol_index(self) -> SymbolLookup:
        if not isinstance(self.index, SymbolLookup):
            raise BadRequest("the symbol filter needs the keyword index of the embedded backend ([db] backend = "
                             '"embedded")')
        return self.index

    def _render(self, candidates: list[_Candidate], request: SearchRequest, mode: str,
                prepared: _Prepared | None = None) -> SearchResponse:
        known = prepared.rows if prepared else {}
        rows = self.store.summaries([c.doc_id for c in candidates if c.doc_id not in known], with_body=True,
                                    with_places=True)
        rows.update(known)
        present = [c for c in candidates if c.doc_id in rows]  # others were deleted since the index read
        weights = prepared.weights if prepared else salient(self.index.term_weights(request.query))
        stem, chars = self.index.stem, self.config.retrieval.snippet_chars
        # The passage shown: in semantic and hybrid mode the best chunk; else (and for documents the
        # semantic list did not find) the body's best passage, or the best chunk when it has no query word.
        shown: dict[str, tuple[Snippet, bool]] = {}  # doc id -> (snippet, from the chunk)
        if mode != "semantic":
            for c in present:
                if c.chunk_id and mode == "hybrid":
                    continue
                shown[c.doc_id] = (make_snippet(_body(rows[c.doc_id]), weights, stem, chars), False)
        # The semantic best chunks (their text, read only where needed), then the chunk each snippet lies in.
        wanted = [c.chunk_id for c in present
                  if c.chunk_id and (c.doc_id not in shown or not shown[c.doc_id][0].matched)]
        best_chunks = self.store.chunks_by_id(wanted)
        for c in present:
            best = best_chunks.get(c.chunk_id or "")
            if best is not None:
                shown[c.doc_id] = (make_snippet(best.text, weights, stem, chars), True)
            elif c.doc_id not in shown:  # semantic mode without its chunk: the body
                shown[c.doc_id] = (make_snippet(_body(rows[c.doc_id]), weights, stem, chars), False)
        located = self._locate({c.doc_id: (_body(rows[c.doc_id]), shown[c.doc_id][0].start) for c in present
                                if not shown[c.doc_id][1]}, rows)
        names = symbol_names(request)  # a symbol the request names: its definition is the chunk shown
        defining = self._defining(names)
        for c in present if names else []:
            if defining is not None and c.doc_id not in defining:
                continue  # no code here defines it: its chunks are not read
            if (defined := definition_chunk(self.store, c.doc_id, names)) is not None:
                shown[c.doc_id] = (make_snippet(defined.text, weights, stem, chars), False)
                located[c.doc_id] = ChunkPlace(defined.idx, defined.heading)
        results = []
        for c in present:
            row = rows[c.doc_id]
            snippet, from_chunk = shown[c.doc_id]
            best = best_chunks.get(c.chunk_id or "")
            chunk = (ChunkPlace(best.idx, best.heading) if best else None) if from_chunk else located.get(c.doc_id)
            if c.explain is not None:
                c.explain.chunk_index = chunk.idx if chunk else None
            results.append(SearchResult(id=c.doc_id, score=round(c.score, 6), title=row.title, source=row.source,
                                        source_id=row.source_id, updated_at=row.updated_at, snippet=snippet.text,
                                        source_url=row.source_url, version=row.version, explain=c.explain,
                                        date=row.dated,
                                        chunk=chunk.idx if chunk else None,
                                        heading=(chunk.heading or None) if chunk else None))
        return SearchResponse(results=results)

    def _locate(self, snippets: dict[str, tuple[str, int]], rows: dict[str, Summary]) -> dict[str, ChunkPlace | None]:
        """doc id -> the chunk whose span holds the offset of its snippet (``(body, offset)``), from the
        chunks' stored starts: those ``rows`` carry (``places``), else one query for all; chunks synced
        before starts were stored (until the next sync re-chunks them) are placed from their texts."""
        found: dict[str, ChunkPlace | None] = {}
        for doc_id, (_, offset) in snippets.items():
            places = rows[doc_id].places
            if places is not None and (place := chunk_place(places, offset)) is not None:
                found[doc_id] = place
        asked = [(doc_id, offset) for doc_id, (_, offset) in snippets.items() if rows[doc_id].places is None]
        found.update(self.store.chunks_at(asked))
        for doc_id, (body, offset) in snippets.items():
            if doc_id not in found:
                found[doc_id] = self._chunk_by_span(doc_id, body, offset)
        return found

    def _chunk_by_span(self, doc_id: str, body: str, offset: int) -> ChunkPlace | None:
        """The chunk whose span holds ``offset``, reading the document's chunks only up to it."""
        read: list[StoredChunk] = []

        def texts() -> Iterator[str]:
            for chunk in self.store.iter_chunks(doc_id):
                read.append(chunk)
                yield chunk.text

        at = chunk_at(body, texts(), offset, self.config.chunking.overlap_tokens)
        return ChunkPlace(read[at].idx, read[at].heading) if at is not None else None


def _dated(request: SearchRequest) -> bool:
    """Whether the request names a date itself (then the query's time words are only words)."""
    return request.filters is not None and bool(request.filters.since or request.filters.until)


def _distinct(copies: Copies | None, items: list[T], store: DocumentStorage) -> list[T]:
    """``items`` with a file that overlapping sources both reach listed once (``copies.py``)."""
    return copies.distinct(items, store) if copies is not None and items else items


def _body(row: Summary) -> str:
    """The body of a summary read ``with_body`` (every summary a search renders is)."""
    assert row.body is not None, "a search renders summaries read with their bodies"
    return row.body


def filters_of(request: SearchRequest) -> KeywordFilters | None:
    f = request.filters
    if f is None:
        return None
    try:
        since = timestamps.parse(f.since) if f.since else None
        until = timestamps.parse(f.until) if f.until else None
    except ValueError as exc:
        raise BadRequest(f"filters: {exc}") from None
    if since and until and since > until:
        raise BadRequest("filters: 'since' is after 'until'")
    if not (f.source or f.tags or since or until or f.symbol):
        return None
    return KeywordFilters(source=f.source, tags=f.tags or None, since=since, until=until, symbol=f.symbol)


@runtime_checkable
class SymbolLookup(Protocol):
    """A keyword index that knows the symbols code defines (``store/keyword.py``)."""

    def documents_defining(self, symbol: str) -> set[str]: ...


class SemanticBackend:
    """The embedder and the in-memory vector index, loaded on first use and refreshed after writes:
    this process's (``mark_stale``) and, checked at most every ``VECTOR_CHECK_SECONDS`` (or four times
    as long as the last refresh took) by one read of the store's ``version()``, another process's.

    Queries are embedded by the embedder of the vector set searched: the configured one, or during a
    model switch (``ingest/reembed.py``) the current set's own, which ``others`` builds (None when it
    cannot: that set is then left to keyword search)."""

    def __init__(self, vectors, embedder, others: Callable[[EmbedderIdentity], Embedder | None] | None = None) -> None:
        self.vectors = vectors
        self.embedder = embedder
        self.keeps_graph = isinstance(vectors, GraphKeeping)  # the embedded store's; asked once
        self._others = others
        self._other: tuple[EmbedderIdentity, Embedder | None] | None = None  # the last one built
        self._index = None
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()  # held by the one search that refreshes the index
        self._stale = True
        self._version = -1  # the store's version() when the index last loaded or refreshed
        self._next_check = 0.0

    def identity_key(self) -> str:
        """The key of the embedder whose vectors are searched (the configured one's before a load)."""
        identity = self._index.identity if self._index is not None else None
        return (identity or self.embedder.identity).key

    def embedder_for(self, identity: EmbedderIdentity | None) -> Embedder | None:
        """The embedder that embeds queries for the vector set made by ``identity``."""
        if identity is None or identity == self.embedder.identity:
            return self.embedder
        with self._lock:
            if self._other is None or self._other[0] != identity:
                self._other = (identity, self._others(identity) if self._others is not None else None)
            return self._other[1]

    def switch(self) -> str | None:
        """A model switch under way, in words (``ingest/embed.switch_status``), for ``explain``."""
        next_identity = self.vectors.next_identity()
        if next_identity is None or next_identity != self.embedder.identity:
            return None
        return switch_text(next_identity, *self.vectors.next_counts())

    def mark_stale(self) -> None:
        self._stale = True

    def index(self):
        """The loaded index, refreshed first when stale. While one search refreshes it, the others
        search the index as it was (a refresh of a large index can take seconds)."""
        with self._lock:
            if self._index is None:
                self._version = self.vectors.version()
                self._index = self.vectors.open_index()
                self._stale = False
                return self._index
            index = self._index
            if not (self._stale or self._written_elsewhere()) or not self._refreshing.acquire(blocking=False):
                return index
            self._version = self.vectors.version()  # read first: a write during the refresh shows next time
            self._stale = False
        try:
            started = time.monotonic()
            index.refresh()
            # A refresh reads every chunk id (~0.06 s per 20k chunks): while another process keeps
            # writing vectors, refresh for at most a fifth of the time.
            spent = time.monotonic() - started
            self._next_check = time.monotonic() + max(VECTOR_CHECK_SECONDS, REFRESH_BACKOFF * spent)
        except BaseException:
            self._stale = True
            raise
        finally:
            self._refreshing.release()
        return index

    def prepare_graph(self, progress: Callable[[dict], None] | None = None) -> None:
        """After embedding: when the vectors are many enough for the approximate graph, build or
        update it (and its saved copy) now, so the next search or server start does not wait on it.
        Progress events name the source ``vector graph``."""
        from context_harness.store import vector_index

        if not self.keeps_graph or self.vectors.count() < vector_index.ANN_FROM:
            return
        emit = progress or (lambda event: None)
        emit({"event": "start", "source": "vector graph", "total": 1})
        self.index()
        emit({"event": "done", "source": "vector graph"})

    def _written_elsewhere(self) -> bool:
        now = time.monotonic()
        if now < self._next_check:
            return False
        self._next_check = now + VECTOR_CHECK_SECONDS
        return self.vectors.version() != self._version

    def has_vectors(self) -> bool:
        """Whether there are vectors to search, with an embedder for their queries."""
        if not self.vectors.has_vectors():  # cached in the store until the vectors change
            return False
        return self.embedder_for(self.index().identity) is not None

    def embedded_documents(self) -> frozenset[str]:
        return self.index().doc_ids()

    def top_documents(self, query: str, k: int, allowed: set[str] | None,
                      meanwhile: Callable[[], object] | None = None) -> list[tuple[str, str, float]]:
        """Best ``k`` documents as (doc_id, best chunk id, cosine), best first. ``meanwhile``: see
        ``BaseEmbedder.embed_query`` (embedders outside that family never call it)."""
        for attempt in range(2):  # a second time when the vector set was swapped under the first
            index = self.index()
            identity = index.identity
            embedder = self.embedder_for(identity)
            if embedder is None:
                raise EmbedderMismatch(rebuild_hint(identity, self.embedder.identity))
            if isinstance(embedder, BaseEmbedder):
                vector = embedder.embed_query(query, meanwhile=meanwhile if not attempt else None)
            else:
                vector = embedder.embed_query(query)
            hits = index.top_documents(vector, k, allowed)
            if index.identity == identity and (hits or attempt or self.vectors.identity() == identity):
                return hits
            self.mark_stale()
        return hits


def _fused_explain(item: Fused, alpha: float, reference: float, embedded: bool, rrf_k: int) -> SearchExplain:
    """What ``--explain`` says of a hybrid result: each list's rank and score, the fused score, how."""
    d = item.details
    method = d.method
    setting = f"k={rrf_k}" if method == "rrf" else f"alpha={alpha}"
    notes = [f"mode=hybrid; fusion={method} v{FUSION_VERSION}, {setting}"]
    if method == "scaled":
        notes.append(f"keyword score / {reference:.3f} (the query's BM25 reference) = {d.keyword.normalized:.3f}"
                     if d.keyword else "not in the keyword list")
    if not embedded:
        notes.append("not embedded yet: ranked by keyword score only")
    return SearchExplain(keyword_score=d.keyword.score if d.keyword else None,
                         keyword_rank=d.keyword.rank if d.keyword else None,
                         semantic_score=d.semantic.score if d.semantic else None,
                         semantic_rank=d.semantic.rank if d.semantic else None,
                         fused_score=item.score, notes=notes)
