"""Tantivy BM25 index of documents, derived from the SQLite store.

One entry per document: its title, headings and whole body as the terms ``common/analysis.py`` makes
of them (words of alphabetic scripts lowercased and stemmed in the document's language, CJK as
character bigrams, Thai and its neighbours as words), fed pre-analysed to whitespace-tokenised fields,
plus raw fields for filters and the document's language. Documents are ranked as wholes (BM25 over the
full text beats best-chunk BM25 on SciFact); the snippet of a result is cut from its text afterwards
(``search/snippets.py``). A query is analysed in every language the index holds (``languages``).

User text never reaches Tantivy's query parser: queries are built from analysed terms, so no input
can raise a parser error or turn into a match-all.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import tantivy
from tantivy import Occur, Query

from context_harness.common.analysis import (
    AUTO,
    DEFAULT,
    DETECT_CHARS,
    LANGUAGES,
    index_terms,
    index_text,
    phrase_terms,
    query_terms,
    resolve_language,
)
from context_harness.common.memory import release_free_memory
from context_harness.common.symbols import file_symbols, identifier_words, language_of
from context_harness.errors import StoreBusy
from context_harness.store.faults import fault_of, is_panic
from context_harness.store.records import DocumentHit, IndexedDocument, KeywordFilters

log = logging.getLogger(__name__)

# 3: one entry per document (2 held chunks); 4: a headings field; 5: analysis by script; 6: code's symbols;
# 7: code's identifiers by their words in a field of their own (6 had them in the body); 8: ``updated`` holds a
# document's own date where it has one (``common/dates.py``)
INDEX_VERSION = 8
IDENTIFIER_BOOST = 0.2  # a query word that is a word of an identifier the code uses (openStores: open, stores)
MAX_DEFINING = 100_000  # documents one symbol filter holds
SYMBOL_BOOST = 3.0  # a query word or dotted name that a code document defines (its ``symbol`` terms)
MAX_QUERY_TERMS = 64
MAX_PHRASES = 8
RELOAD_CHECK_SECONDS = 0.05  # searches look for another process's commit at most this often
_PHRASE = re.compile(r'"([^"]*)"')
_HEADING = re.compile(r"^[ ]{0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_DELETE_FILE = re.compile(r"([0-9a-f]{32})\.(\d+)\.del")
_SPECIFIC = re.compile(r"[._#:]|[a-z0-9][A-Z]")  # a dotted name, snake_case or camelCase
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|#)[A-Za-z_][A-Za-z0-9_]*)*")


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    # Pre-analysed terms (common/analysis.py), one per space: Tantivy only counts and positions them.
    sb.add_text_field("title", stored=False, tokenizer_name="whitespace")
    sb.add_text_field("headings", stored=False, tokenizer_name="whitespace")
    sb.add_text_field("body", stored=False, tokenizer_name="whitespace")  # text lives in SQLite
    sb.add_text_field("language", stored=False, tokenizer_name="raw")  # the language it was analysed in
    sb.add_text_field("source", stored=False, tokenizer_name="raw")
    sb.add_text_field("source_type", stored=False, tokenizer_name="raw")
    sb.add_text_field("tags", stored=False, tokenizer_name="raw")
    # Code (common/symbols.py): every symbol path lowercased with each of its ends ("harness.open",
    # "open" of "harness.Harness.open"), for exact names and the symbol filter.
    sb.add_text_field("symbol", stored=False, tokenizer_name="raw")
    # Code: the words of each identifier it uses (once per identifier), pre-analysed like the body.
    sb.add_text_field("identifiers", stored=False, tokenizer_name="whitespace")
    sb.add_date_field("updated", stored=False, indexed=True, fast=True)
    return sb.build()


def headings(body: str, title: str = "") -> list[str]:
    """The Markdown (ATX) headings of ``body`` outside fenced code, in order; one equal to ``title`` is
    left out (a note often opens with its title as a heading, and the title field holds it already)."""
    out: list[str] = []
    fence: str | None = None
    skip = title.strip().casefold()
    for line in body.splitlines():
        fenced = _FENCE.match(line)
        if fence is not None:
            if fenced and fenced.group(1)[0] == fence[0] and len(fenced.group(1)) >= len(fence):
                fence = None
        elif fenced:
            fence = fenced.group(1)
        elif (heading := _HEADING.match(line)) and heading.group(1) and heading.group(1).casefold() != skip:
            out.append(heading.group(1))
    return out


def document_fields(d: IndexedDocument, source_languages: Mapping[str, str]) -> dict:
    """The fields of ``d``'s entry: its text analysed in its language (the one given, else its source's
    configured one, else detected from its text) and that language."""
    title = d.title or ""
    configured = d.language if d.language != AUTO else source_languages.get(d.source, AUTO)
    language = resolve_language(f"{title}\n{d.body[:DETECT_CHARS]}", configured)
    fields: dict = {
        "doc_id": d.doc_id, "title": " ".join(index_terms(title, language)),
        "body": index_text(d.body, language), "language": language, "source": d.source,
        "headings": " ".join(index_terms("\n".join(headings(d.body, title)), language)),
        "source_type": d.source.split(":", 1)[0], "tags": [t.lower() for t in d.tags],
    }
    if d.updated is not None:
        fields["updated"] = d.updated
    if (code := language_of(d.content_type)) is not None:
        paths = file_symbols(d.body, code, title)
        fields["symbol"] = sorted({end for path in paths for end in symbol_ends(path)})
        fields["headings"] = " ".join(index_terms("\n".join(p.replace(".", " ") for p in paths), language))
        # openStores is found by "open stores" too; a field of its own keeps the body's BM25 as it was
        fields["identifiers"] = " ".join(index_terms(" ".join(identifier_words(d.body)), language))
    return fields


def symbol_key(name: str) -> str:
    """A symbol name as the ``symbol`` field holds it: lowercased, ``::`` and ``#`` as dots."""
    return name.strip().replace("::", ".").replace("#", ".").lower()


def symbol_ends(path: str) -> list[str]:
    """A symbol path's ends: ``a.B.c`` -> ``a.b.c``, ``b.c``, ``c``."""
    parts = symbol_key(path).split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


def query_symbols(text: str) -> list[str]:
    """The names a query says in a form no prose word takes (``Harness.open``, ``ns::run``,
    ``open_stores``, ``openStores``), or its one word, as ``symbol_key`` writes them: a plain word of a
    question ("where") would lift every file that happens to define it."""
    names = _SYMBOL.findall(text)
    specific = names if len(text.split()) == 1 else [n for n in names if _SPECIFIC.search(n)]
    return list(dict.fromkeys(symbol_key(n) for n in specific))[:MAX_QUERY_TERMS]


class Stemmer:
    """The indexed form of single words, remembered: snippets ask for the same words again and again.
    Analysed in the first of ``languages()`` (the index's most common language; English without it)."""

    MAX_REMEMBERED = 100_000

    def __init__(self, languages: Callable[[], list[str]] | None = None) -> None:
        self.languages = languages
        self._stems: dict[tuple[str, str], str | None] = {}

    def stem(self, word: str) -> str | None:
        """The indexed form of one word, or None when the analysis splits it (or finds no word in it)."""
        languages = self.languages() if self.languages is not None else []
        key = (languages[0] if languages else DEFAULT, word)
        stem = self._stems.get(key, "")
        if stem == "":
            terms = index_terms(word, key[0])
            stem = terms[0] if len(terms) == 1 else None
            if len(self._stems) > self.MAX_REMEMBERED:
                self._stems.clear()
            self._stems[key] = stem
        return stem


class KeywordIndex:
    """The document index in ``<data>/tantivy``. Readers are cheap; writes take the index lock briefly.

    Searches see this process's commits at once and another process's within ``RELOAD_CHECK_SECONDS``
    (plus the reload): ``searcher()`` compares ``meta.json``, which every commit replaces, with the
    one last seen (a ``stat``), instead of waiting for Tantivy's own watcher (~0.5 s).
    """

    def __init__(self, path: Path, title_boost: float = 0.25, heading_boost: float = 0.0,
                 source_languages: Mapping[str, str] | None = None) -> None:
        self.path = Path(path)
        self.title_boost = title_boost
        self.heading_boost = heading_boost
        self.source_languages = dict(source_languages or {})  # source label -> configured language code
        self.schema = _schema()
        self.stemmer = Stemmer(self.languages)
        self._languages: list[str] | None = None  # of the searcher last loaded
        self._write_lock = threading.Lock()
        self._meta_seen: tuple[int, int, int] | None = None
        self._next_check = 0.0
        self.rebuilt = self._open()

    def _open(self) -> bool:
        """Open the index; return True when it had to be created anew (caller must re-feed it)."""
        marker = self.path / "ctx-index.json"
        fresh = False
        if self.path.exists():
            try:
                kept = json.loads(marker.read_text())
                version = kept["version"], kept.get("languages", {})
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                version = None
            if version != self._marker_key():
                log.info("keyword index at %s is missing, from another version or made for other source "
                         "languages; rebuilding", self.path)
                self._discard()
        if not self.path.exists():
            self._create()
            fresh = True  # made here or by a process that raced us: re-feeding twice is harmless
        try:
            self.index = tantivy.Index(self.schema, path=str(self.path), reuse=True)
        except BaseException as exc:  # ValueError, or a Rust panic (a BaseException) on damaged files
            if not (isinstance(exc, ValueError) or is_panic(exc)):
                raise
            fault = fault_of(exc, self.path.parent)
            if fault is not None and fault.kind in {"read_only", "disk_full"}:
                raise fault from exc  # the files may be fine: rebuilding would only lose them
            log.warning("keyword index at %s could not be opened; rebuilding", self.path)
            self.recreate()
            return True
        return fresh

    def _create(self) -> None:
        """Make an empty index with its version marker in a folder of its own, then rename it into
        place: another process opening the same workspace at the same moment sees either no index
        or a whole one, never one half made (which it would take for damaged and delete)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}-new-", dir=self.path.parent))
        try:
            tantivy.Index(self.schema, path=str(staging), reuse=False)
            version, languages = self._marker_key()
            (staging / "ctx-index.json").write_text(json.dumps({"version": version, "languages": languages}))
            os.rename(staging, self.path)
        except OSError:
            if not (self.path / "ctx-index.json").exists():
                raise
            # another process put its index in place first; use that one
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _marker_key(self) -> tuple[int, dict[str, str]]:
        """What ``ctx-index.json`` records: the version of the index's layout and analysis, and the
        configured source languages its documents were analysed with (a change rebuilds it)."""
        return INDEX_VERSION, dict(sorted(self.source_languages.items()))

    def _discard(self) -> None:
        """Move the index folder aside, then delete it (a rename is atomic; a delete is not)."""
        trash = self.path.parent / f".{self.path.name}-old-{os.getpid()}-{time.monotonic_ns()}"
        try:
            os.rename(self.path, trash)
        except FileNotFoundError:
            return  # another process discarded it first
        shutil.rmtree(trash, ignore_errors=True)

    def recreate(self) -> None:
        """Replace the index files with an empty index (the caller re-feeds it from SQLite)."""
        with self._write_lock:
            self._discard()
            self._create()
            self.index = tantivy.Index(self.schema, path=str(self.path), reuse=True)
            self._meta_seen = None
            self._languages = None

    # -- writes ------------------------------------------------------------------------------

    def _writer(self, wait_seconds: float = 30.0) -> tantivy.IndexWriter:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                writer = self.index.writer(heap_size=128_000_000, num_threads=0)
            except ValueError as exc:
                if "IoError" in str(exc):  # not another writer: e.g. a read-only folder (a StorageFault upstream)
                    raise
                if "Lock" not in str(exc) or time.monotonic() > deadline:
                    raise StoreBusy(
                        f"the keyword index at {self.path} is locked by another process (a running "
                        "`ctx sync` or server); try again when it has finished"
                    ) from None
                time.sleep(0.1)
                continue
            try:
                self._sweep_stale_deletes()
            except BaseException:
                _release(writer)
                raise
            return writer

    def _sweep_stale_deletes(self) -> None:
        """Remove delete files that no commit references; called holding Tantivy's writer lock.

        A process killed inside a commit can leave ``<segment>.<opstamp>.del`` written but
        ``meta.json`` not yet pointing at it; the next commit that deletes from that segment at the
        same opstamp would then fail with ``FileAlreadyExists``.
        """
        try:
            segments = json.loads((self.path / "meta.json").read_text())["segments"]
        except (OSError, ValueError, KeyError):
            return
        live = {}
        for seg in segments:
            deletes = seg.get("deletes") or {}
            live[seg["segment_id"].replace("-", "")] = deletes.get("opstamp")
        for entry in os.scandir(self.path):
            match = _DELETE_FILE.fullmatch(entry.name)
            if match is None or match[1] not in live or live[match[1]] == int(match[2]):
                continue
            log.info("removing %s, left by a commit that did not finish", entry.name)
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass

    def replace(self, doc_ids: Iterable[str], documents: Iterable[IndexedDocument]) -> None:
        """Drop every entry of ``doc_ids`` and add ``documents``, in one commit."""
        with self.session() as session:
            session.replace(doc_ids, documents)

    @contextmanager
    def session(self) -> Iterator[IndexSession]:
        """A writer that commits once on success and rolls back on failure (then releases the lock)."""
        with self._write_lock:
            writer = self._writer()
            try:
                yield IndexSession(writer, self.source_languages)
                writer.commit()
                writer.wait_merging_threads()
            except BaseException:
                _release(writer)
                raise
            finally:
                del writer
            self.index.reload()
            self._languages = None
        release_free_memory()  # the writer's buffers, freed, would otherwise stay in RSS (memory.py)

    def clear(self) -> None:
        with self._write_lock:
            writer = self._writer()
            try:
                writer.delete_all_documents()
                writer.commit()
                writer.wait_merging_threads()
            except BaseException:
                _release(writer)
                raise
            self.index.reload()
            self._languages = None

    def all_doc_ids(self) -> set[str]:
        return set(self.doc_id_counts())

    def doc_id_counts(self) -> Counter[str]:
        """How many entries each document id has (one, unless a write was cut short)."""
        self.index.reload()
        searcher = self.index.searcher()
        n = searcher.num_docs
        if n == 0:
            return Counter()
        hits = searcher.search(Query.all_query(), n).hits
        return Counter(searcher.doc(addr)["doc_id"][0] for _, addr in hits)

    # -- queries -----------------------------------------------------------------------------

    def searcher(self) -> tantivy.Searcher:
        """A searcher over the latest commit, whichever process made it (see the class notes)."""
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + RELOAD_CHECK_SECONDS
            try:
                st = os.stat(self.path / "meta.json")
                meta = (st.st_ino, st.st_mtime_ns, st.st_size)
            except OSError:
                meta = None
            if meta != self._meta_seen:
                self._meta_seen = meta
                self.index.reload()
                self._languages = None
        return self.index.searcher()

    def languages(self) -> list[str]:
        """The languages the indexed documents were analysed in, the most common first (then by code)."""
        languages = self._languages
        if languages is not None and time.monotonic() < self._next_check:
            return languages  # no commit to look for yet: snippets ask for every word they stem
        searcher = self.searcher()
        languages = self._languages
        if languages is None:
            counts = {code: searcher.doc_freq("language", code) for code in LANGUAGES}
            languages = sorted((code for code, n in counts.items() if n), key=lambda code: (-counts[code], code))
            self._languages = languages
        return languages

    def terms(self, text: str) -> list[str]:
        """The terms a query looks for: its words as each language of the index analyses them."""
        return query_terms(text, self.languages())

    def stem(self, word: str) -> str | None:
        """The indexed form of one word (lowercased, stemmed), or None when the analysis splits it."""
        return self.stemmer.stem(word)

    def term_weights(self, text: str) -> dict[str, float]:
        """Every analysed word of a query (phrases included) with its BM25 IDF in the body field:
        what a snippet should show, rarest first in importance."""
        terms = self.terms(text.replace('"', " "))[:MAX_QUERY_TERMS]
        if not terms:
            return {}
        searcher = self.searcher()
        n = max(searcher.num_docs, 1)
        weights = {}
        for term in terms:
            df = searcher.doc_freq("body", term)
            weights[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return weights

    def _clauses(self, text: str) -> list[tuple[Occur, Query]]:
        """Quoted phrases as required clauses, every other analysed term as an optional one
        (title and headings boosted, body plain)."""
        clauses: list[tuple[Occur, Query]] = []
        phrases = [p for p in _PHRASE.findall(text) if p.strip()][:MAX_PHRASES]
        rest = _PHRASE.sub(" ", text).replace('"', " ")
        languages = self.languages() or [DEFAULT]
        for phrase in phrases:
            # The phrase as each language of the index analyses it (one form, mostly).
            forms = dict.fromkeys(tuple(phrase_terms(phrase, language)) for language in languages)
            per_field = []
            for form in filter(None, forms):
                words: list[str | tuple[int, str]] = list(form)
                for field, boost in self._fields():
                    q = (Query.term_query(self.schema, field, form[0]) if len(form) == 1
                         else Query.phrase_query(self.schema, field, words))
                    per_field.append((Occur.Should, Query.boost_query(q, boost) if boost != 1.0 else q))
            if per_field:
                clauses.append((Occur.Must, Query.boolean_query(per_field)))
        for term in self.terms(rest)[:MAX_QUERY_TERMS]:
            for field, boost in self._fields():
                q = Query.term_query(self.schema, field, term)
                clauses.append((Occur.Should, Query.boost_query(q, boost) if boost != 1.0 else q))
        if clauses:  # a name the query says that code defines: that code first
            clauses.extend((Occur.Should, Query.boost_query(Query.term_query(self.schema, "symbol", name),
                                                            SYMBOL_BOOST)) for name in query_symbols(rest))
        return clauses

    def _fields(self) -> list[tuple[str, float]]:
        """The searched fields with their boosts: title, headings (when boosted at all), body and code's
        identifiers."""
        fields = [("title", self.title_boost), ("body", 1.0), ("identifiers", IDENTIFIER_BOOST)]
        return fields if self.heading_boost <= 0 else [*fields[:1], ("headings", self.heading_boost), *fields[1:]]

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
        if filters.since or filters.until:
            out.append(flat(Query.range_query(self.schema, "updated", tantivy.FieldType.Date,
                                              filters.since, filters.until)))
        if filters.symbol:
            out.append(flat(Query.term_query(self.schema, "symbol", symbol_key(filters.symbol))))
        return out

    def documents_defining(self, symbol: str) -> set[str]:
        """The ids of the code documents that define ``symbol`` (a path or its end), for the symbol
        filter of a semantic search (at most ``MAX_DEFINING`` of them)."""
        searcher = self.searcher()
        query = Query.term_query(self.schema, "symbol", symbol_key(symbol))
        fetch = 64  # most names are defined once or a few times: no large collector for them
        while True:
            hits = searcher.search(query, fetch).hits
            if len(hits) < fetch or fetch >= MAX_DEFINING:
                return {searcher.doc(addr)["doc_id"][0] for _, addr in hits}
            fetch = min(fetch * 16, MAX_DEFINING)

    def search(self, text: str, filters: KeywordFilters | None, limit: int) -> list[DocumentHit]:
        """The top ``limit`` documents by BM25, ties broken by document id (deterministic)."""
        query = self.build_query(text)
        if query is None:
            return []
        filter_clauses = self._filter_clauses(filters)
        if filter_clauses:
            query = Query.boolean_query([(Occur.Must, query), *filter_clauses])
        searcher = self.searcher()
        # Fetch a little past the cut; when a tie reaches the last fetched hit, the cut would depend
        # on segment layout, so fetch more until the limit-th score is clear of the last one.
        fetch = limit + 8
        while True:
            raw = searcher.search(query, fetch).hits
            hits = sorted((DocumentHit(searcher.doc(addr)["doc_id"][0], float(score)) for score, addr in raw),
                          key=lambda h: (-h.score, h.doc_id))
            if len(raw) < fetch or fetch >= 20_000 or hits[-1].score < hits[limit - 1].score:
                return hits[:limit]
            fetch *= 4


def replaced_entries(path: Path) -> int:
    """How many deleted entries (replaced or removed documents) the index at ``path`` still holds, from
    its ``meta.json``. Tantivy's BM25 statistics count them until a merge drops them, so an index
    updated in place scores a little differently from one built afresh; 0 when there is no index."""
    try:
        segments = json.loads((Path(path) / "meta.json").read_text())["segments"]
    except (OSError, ValueError, KeyError):
        return 0
    return sum(int((seg.get("deletes") or {}).get("num_deleted_docs", 0)) for seg in segments)


def _release(writer: tantivy.IndexWriter) -> None:
    """Roll back ``writer`` and give up Tantivy's writer lock now. Dropping the Python object is not
    enough: a failed write's traceback (kept as an error's cause, or for a log line) holds the frames
    that hold the writer, and while it lives the lock stays taken; every later write then waited 30 s
    and failed as "locked by another process" (a live index wedged after one read-only moment).
    ``wait_merging_threads`` consumes the writer, which releases the lock."""
    for step in (writer.rollback, writer.wait_merging_threads):
        try:
            step()
        except (ValueError, RuntimeError):  # already rolled back or consumed
            pass


class IndexSession:
    """Adds and deletes inside one uncommitted writer (Tantivy indexes in its own threads meanwhile)."""

    def __init__(self, writer: tantivy.IndexWriter, source_languages: Mapping[str, str] | None = None) -> None:
        self.writer = writer
        self.source_languages = source_languages or {}

    def clear(self) -> None:
        """Drop every entry, in this session's commit (documents added after it stay)."""
        self.writer.delete_all_documents()

    def replace(self, doc_ids: Iterable[str], documents: Iterable[IndexedDocument]) -> None:
        for doc_id in doc_ids:
            self.writer.delete_documents_by_term("doc_id", doc_id)
        for d in documents:
            self.writer.add_document(tantivy.Document(**document_fields(d, self.source_languages)))
