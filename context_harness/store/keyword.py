"""Tantivy BM25 index of chunks, derived from the SQLite store.

One entry per chunk: the document's title and the chunk's text, both stemmed (``en_stem``), plus
raw fields for filters. User text never reaches Tantivy's query parser: queries are built from
analysed terms, so no input can raise a parser error or turn into a match-all.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tantivy
from tantivy import Filter, Occur, Query, SnippetGenerator, TextAnalyzerBuilder, Tokenizer

from context_harness.errors import StoreBusy

log = logging.getLogger(__name__)

INDEX_VERSION = 2
MAX_QUERY_TERMS = 64
MAX_PHRASES = 8
_PHRASE = re.compile(r'"([^"]*)"')


@dataclass
class IndexedChunk:
    chunk_id: str
    doc_id: str
    idx: int
    title: str
    text: str
    source: str
    tags: list[str]
    updated: dt.datetime | None


@dataclass
class KeywordFilters:
    source: str | None = None
    tags: list[str] | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    doc_ids: list[str] | None = None  # internal: restrict to these documents


@dataclass
class ChunkHit:
    chunk_id: str
    doc_id: str
    idx: int
    score: float
    snippet: str


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    sb.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    sb.add_integer_field("idx", stored=True)
    sb.add_text_field("title", stored=False, tokenizer_name="en_stem")
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")  # text lives in SQLite
    sb.add_text_field("source", stored=False, tokenizer_name="raw")
    sb.add_text_field("source_type", stored=False, tokenizer_name="raw")
    sb.add_text_field("tags", stored=False, tokenizer_name="raw")
    sb.add_date_field("updated", stored=False, indexed=True, fast=True)
    return sb.build()


def _analyzer() -> tantivy.TextAnalyzer:
    # The same chain as Tantivy's built-in "en_stem" tokenizer.
    return (TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.remove_long(40))
            .filter(Filter.lowercase()).filter(Filter.stemmer("english")).build())


class KeywordIndex:
    """The chunk index in ``<data>/tantivy``. Readers are cheap; writes take the index lock briefly."""

    def __init__(self, path: Path, title_boost: float = 2.0, snippet_chars: int = 240,
                 chunk_texts: Callable[[list[str]], dict[str, str]] | None = None, *,
                 documents: bool = False) -> None:
        """``chunk_texts`` maps chunk ids to their text (the SQLite store); snippets are cut from it."""
        self.path = Path(path)
        self.documents = documents
        self.chunk_texts = chunk_texts or (lambda ids: {})
        self.title_boost = title_boost
        self.snippet_chars = snippet_chars
        self.schema = _schema()
        self.analyzer = _analyzer()
        self._write_lock = threading.Lock()
        self.rebuilt = self._open()

    def _open(self) -> bool:
        """Open the index; return True when it had to be created anew (caller must re-feed it)."""
        marker = self.path / "ctx-index.json"
        fresh = False
        if self.path.exists():
            try:
                version = json.loads(marker.read_text())["version"]
            except (OSError, ValueError, KeyError):
                version = None
            if version != INDEX_VERSION:
                log.info("keyword index at %s is missing or from another version; rebuilding", self.path)
                shutil.rmtree(self.path)
        if not self.path.exists():
            self.path.mkdir(parents=True)
            fresh = True
        try:
            self.index = tantivy.Index(self.schema, path=str(self.path), reuse=not fresh)
        except ValueError:
            log.warning("keyword index at %s could not be opened; rebuilding", self.path)
            shutil.rmtree(self.path)
            self.path.mkdir(parents=True)
            self.index = tantivy.Index(self.schema, path=str(self.path), reuse=False)
            fresh = True
        if fresh:
            marker.write_text(json.dumps({"version": INDEX_VERSION}))
        return fresh

    # -- writes ------------------------------------------------------------------------------

    def _writer(self, wait_seconds: float = 30.0) -> tantivy.IndexWriter:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                return self.index.writer(heap_size=128_000_000, num_threads=0)
            except ValueError as exc:
                if "Lock" not in str(exc) or time.monotonic() > deadline:
                    raise StoreBusy(
                        f"the keyword index at {self.path} is locked by another process (a running "
                        "`ctx sync` or server); try again when it has finished"
                    ) from None
                time.sleep(0.1)

    def replace(self, doc_ids: Iterable[str], chunks: Iterable[IndexedChunk]) -> None:
        """Drop every entry of ``doc_ids`` and add ``chunks``, in one commit."""
        with self.session() as session:
            session.replace(doc_ids, chunks)

    @contextmanager
    def session(self) -> Iterator["IndexSession"]:
        """A writer that commits once on success and rolls back on failure (then releases the lock)."""
        with self._write_lock:
            writer = self._writer()
            try:
                yield IndexSession(writer)
                writer.commit()
                writer.wait_merging_threads()
            except BaseException:
                try:
                    writer.rollback()
                except ValueError:
                    pass
                raise
            finally:
                del writer
            self.index.reload()

    def clear(self) -> None:
        with self._write_lock:
            writer = self._writer()
            writer.delete_all_documents()
            writer.commit()
            writer.wait_merging_threads()
            self.index.reload()

    def num_chunks(self) -> int:
        self.index.reload()
        return self.index.searcher().num_docs

    def all_chunk_ids(self) -> set[str]:
        self.index.reload()
        searcher = self.index.searcher()
        n = searcher.num_docs
        if n == 0:
            return set()
        hits = searcher.search(Query.all_query(), n).hits
        return {searcher.doc(addr)["chunk_id"][0] for _, addr in hits}

    # -- queries -----------------------------------------------------------------------------

    def terms(self, text: str) -> list[str]:
        return list(dict.fromkeys(self.analyzer.analyze(text)))

    def _clauses(self, text: str) -> list[tuple[Occur, Query]]:
        """Quoted phrases as required clauses, every other analysed term as an optional one
        (title boosted, body plain)."""
        clauses: list[tuple[Occur, Query]] = []
        phrases = [p for p in _PHRASE.findall(text) if p.strip()][:MAX_PHRASES]
        rest = _PHRASE.sub(" ", text).replace('"', " ")
        for phrase in phrases:
            words = list(self.analyzer.analyze(phrase))
            if not words:
                continue
            per_field = []
            for field, boost in (("title", self.title_boost), ("body", 1.0)):
                q = (Query.term_query(self.schema, field, words[0]) if len(words) == 1
                     else Query.phrase_query(self.schema, field, words))
                per_field.append((Occur.Should, Query.boost_query(q, boost) if boost != 1.0 else q))
            clauses.append((Occur.Must, Query.boolean_query(per_field)))
        for term in self.terms(rest)[:MAX_QUERY_TERMS]:
            clauses.append((Occur.Should, Query.boost_query(Query.term_query(self.schema, "title", term),
                                                              self.title_boost)))
            clauses.append((Occur.Should, Query.term_query(self.schema, "body", term)))
        return clauses

    def build_query(self, text: str) -> Query | None:
        """OR of analysed terms over title (boosted) and body; quoted phrases are required."""
        clauses = self._clauses(text)
        return Query.boolean_query(clauses) if clauses else None

    def _filter_clauses(self, filters: KeywordFilters | None) -> list[tuple[Occur, Query]]:
        if filters is None:
            return []
        out: list[tuple[Occur, Query]] = []

        def flat(q: Query) -> tuple[Occur, Query]:
            return (Occur.Must, Query.const_score_query(q, 0.0))

        if filters.source:
            out.append(flat(Query.boolean_query([
                (Occur.Should, Query.term_query(self.schema, "source", filters.source)),
                (Occur.Should, Query.term_query(self.schema, "source_type", filters.source)),
            ])))
        if filters.tags:
            out.append(flat(Query.term_set_query(self.schema, "tags", [t.lower() for t in filters.tags])))
        if filters.doc_ids is not None:
            out.append(flat(Query.term_set_query(self.schema, "doc_id", filters.doc_ids)))
        if filters.since or filters.until:
            out.append(flat(Query.range_query(self.schema, "updated", tantivy.FieldType.Date,
                                              filters.since, filters.until)))
        return out

    def _run(self, text: str, filters: KeywordFilters | None, limit: int):
        query = self.build_query(text)
        if query is None:
            return None, None, []
        filter_clauses = self._filter_clauses(filters)
        if filter_clauses:
            query = Query.boolean_query([(Occur.Must, query), *filter_clauses])
        searcher = self.index.searcher()
        hits = []
        for score, addr in searcher.search(query, limit).hits:
            doc = searcher.doc(addr)
            hits.append((ChunkHit(doc["chunk_id"][0], doc["doc_id"][0], int(doc["idx"][0]), float(score), ""), doc))
        # Deterministic order: score, then document id, then chunk position.
        hits.sort(key=lambda h: (-h[0].score, h[0].doc_id, h[0].idx))
        return searcher, query, hits

    def _add_snippets(self, searcher, query, hits, texts: dict[str, str] | None = None) -> None:
        generator = SnippetGenerator.create(searcher, query, self.schema, "body")
        generator.set_max_num_chars(self.snippet_chars)
        if texts is None:
            texts = self.chunk_texts([hit.chunk_id for hit, _ in hits])
        for hit, _ in hits:
            text = texts.get(hit.chunk_id, "")
            snippet = generator.snippet_from_doc(tantivy.Document(body=text)).fragment().strip() if text else ""
            hit.snippet = " ".join(snippet.split()) if snippet else _lead(text, self.snippet_chars)

    def search_chunks(self, text: str, filters: KeywordFilters | None, limit: int,
                      snippets: bool = False) -> list[ChunkHit]:
        """Best chunks first; ties broken by doc id then chunk index, so results are deterministic."""
        searcher, query, hits = self._run(text, filters, limit)
        if snippets and hits:
            self._add_snippets(searcher, query, hits)
        return [h for h, _ in hits]

    def search_documents(self, text: str, filters: KeywordFilters | None, limit: int,
                         snippets: bool = True) -> list[ChunkHit]:
        """The best chunk of each of the top ``limit`` documents, with a snippet of it."""
        # A document-level index holds one entry per document: no grouping, so fetch just enough
        # to see past ties at the cut.
        fetch = limit + 8 if self.documents else max(limit * 3, 30)
        while True:
            searcher, query, hits = self._run(text, filters, fetch)
            best: dict[str, tuple] = {}
            for hit in hits:
                best.setdefault(hit[0].doc_id, hit)
            exhausted = len(hits) < fetch or fetch >= 20_000
            # Ties that reach past the fetched hits would make the cut depend on segment layout:
            # fetch more until the limit-th document's score is clear of the last hit's.
            tied = len(best) >= limit and hits[-1][0].score >= list(best.values())[limit - 1][0].score
            if exhausted or (len(best) >= limit and not tied):
                chosen = list(best.values())[:limit]
                if snippets and chosen:
                    self._add_snippets(searcher, query, chosen)
                return [h for h, _ in chosen]
            fetch *= 4

    def best_chunks(self, text: str, doc_ids: list[str]) -> dict[str, ChunkHit]:
        """The best-matching chunk of each of ``doc_ids`` (that has one), with its snippet."""
        if not doc_ids:
            return {}
        query = self.build_query(text)
        if query is None:
            return {}
        # The documents as the required clause and the words as optional ones, in one flat query:
        # the few candidate chunks drive the search (nesting the words as a required union is slower).
        restricted = Query.boolean_query([
            (Occur.Must, Query.const_score_query(Query.term_set_query(self.schema, "doc_id", list(doc_ids)), 0.0)),
            *self._clauses(text),
        ])
        searcher = self.index.searcher()
        best: dict[str, tuple] = {}
        for score, addr in searcher.search(restricted, len(doc_ids) * 4).hits:
            if score <= 0.0:
                continue  # no word of the query in this chunk
            doc = searcher.doc(addr)
            hit = ChunkHit(doc["chunk_id"][0], doc["doc_id"][0], int(doc["idx"][0]), float(score), "")
            current = best.get(hit.doc_id)
            if current is None or (hit.score, -hit.idx) > (current[0].score, -current[0].idx):
                best[hit.doc_id] = (hit, doc)
        if best:
            self._add_snippets(searcher, query, list(best.values()))
        return {doc_id: hit for doc_id, (hit, _) in best.items()}

    def snippets_for(self, text: str, chunk_ids: list[str]) -> dict[str, str]:
        """Query-aware snippets of chunks another retriever found (one generator for all)."""
        texts = self.chunk_texts(chunk_ids)
        query = self.build_query(text)
        if query is None:
            return {cid: _lead(body, self.snippet_chars) for cid, body in texts.items()}
        hits = [(ChunkHit(cid, "", 0, 0.0, ""), None) for cid in chunk_ids if cid in texts]
        self._add_snippets(self.index.searcher(), query, hits, texts)
        return {hit.chunk_id: hit.snippet for hit, _ in hits}

    def reload(self) -> None:
        self.index.reload()


class IndexSession:
    """Adds and deletes inside one uncommitted writer (Tantivy indexes in its own threads meanwhile)."""

    def __init__(self, writer: tantivy.IndexWriter) -> None:
        self.writer = writer

    def replace(self, doc_ids: Iterable[str], chunks: Iterable[IndexedChunk]) -> None:
        for doc_id in doc_ids:
            self.writer.delete_documents_by_term("doc_id", doc_id)
        for c in chunks:
            fields: dict = {
                "chunk_id": c.chunk_id, "doc_id": c.doc_id, "idx": c.idx, "title": c.title or "",
                "body": c.text, "source": c.source, "source_type": c.source.split(":", 1)[0],
                "tags": [t.lower() for t in c.tags],
            }
            if c.updated is not None:
                fields["updated"] = c.updated
            self.writer.add_document(tantivy.Document(**fields))


def _lead(text: str, chars: int) -> str:
    text = " ".join(text.split())
    if len(text) <= chars:
        return text
    cut = text.rfind(" ", 0, chars)
    return text[: cut if cut > chars // 2 else chars] + " …"
