"""Documents, chunks and sync state in PostgreSQL (the ``DocumentStorage`` of ``store/backend.py``).

The keyword data shares every write's transaction: ``apply`` stores a document, its chunks, its
postings (the terms of each field by the shared analysis, ``postings.py``, with their frequencies)
and the corpus statistics BM25 needs, or deletes all of them, at once. So there is no keyword queue to
replay after a crash (``queued`` is always empty) and every replica sees a commit at once.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from context_harness.common.analysis import AUTO
from context_harness.common.dates import own_date
from context_harness.common.timestamps import now_iso, since_text, until_text
from context_harness.store.connections import LinkSql
from context_harness.store.postgres.database import Database
from context_harness.store.postgres.postings import Analysed, analyse, count_languages, store_postings
from context_harness.store.records import (
    ChunkPlace,
    DocumentRow,
    DocumentWrite,
    StoredChunk,
    Summary,
    SyncEntry,
    SyncOutcome,
    WindowRead,
    repeats,
)
from context_harness.store.runs import RunSql
from context_harness.store.schema import HISTORY_COLUMNS, HISTORY_FIELDS, HISTORY_KEPT

_DOC_COLUMNS = ("id, source, source_id, source_url, title, author, created_at, updated_at, content_type, "
                "body, metadata, tags, content_hash, fingerprint")
_CHUNK_COLUMNS = "id, idx, text, content_hash, heading, start"
_LINKS = LinkSql("%s")
_RUNS = RunSql("%s")
_CHUNK_ARRAYS = ", ".join(f"array_agg({c} ORDER BY idx) AS chunk_{c}" for c in _CHUNK_COLUMNS.split(", "))
# read_window: what one window of ``get`` needs, in one round trip (the rules: store/documents.py's
# read_window). Chunk starts grow with the position; a chunk out of range, or starts not stored, picks
# no chunks; the body is cut by substr (characters).
_PART_COLUMNS = ", ".join("substr(d.body, base.base + 1, greatest(coalesce(span.stop, 0) - base.base, 0))"
                          if c == "body" else f"d.{c}" for c in _DOC_COLUMNS.split(", "))
_WINDOW_SQL = f"""
WITH n AS (SELECT count(*) AS count FROM chunks WHERE doc_id = %(id)s),
own AS (SELECT (SELECT start FROM chunks WHERE doc_id = %(id)s AND idx = %(chunk)s) AS start),
edge AS (SELECT CASE WHEN %(around)s THEN own.start - %(reach)s - 1 ELSE %(offset)s - 1 END AS lo_at,
                CASE WHEN %(around)s THEN own.start + %(reach)s ELSE %(offset)s + %(reach)s END AS hi_at FROM own),
span AS (SELECT coalesce((SELECT max(idx) FROM chunks WHERE doc_id = %(id)s AND start <= edge.lo_at), 0) AS first,
                (SELECT max(idx) FROM chunks WHERE doc_id = %(id)s AND start <= edge.hi_at) AS last,
                edge.hi_at + 1 AS stop FROM edge),
picked AS (SELECT c.* FROM chunks c, span, n WHERE c.doc_id = %(id)s
           AND c.idx BETWEEN span.first AND least(span.last + 1, n.count - 1)),
base AS (SELECT CASE WHEN %(around)s THEN coalesce((SELECT start FROM picked ORDER BY idx LIMIT 1), 0)
                ELSE %(offset)s END AS base)
SELECT {_PART_COLUMNS}, char_length(d.body), n.count, base.base, p.*
FROM documents d CROSS JOIN n CROSS JOIN span CROSS JOIN base
LEFT JOIN LATERAL (SELECT {_CHUNK_ARRAYS} FROM picked) p ON true WHERE d.id = %(id)s"""
def _row(r: tuple) -> DocumentRow:
    return DocumentRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13])


def _strip_nul(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL characters (SQLite can): they are dropped."""
    return text.replace("\x00", "") if text and "\x00" in text else text


class PgDocumentStore:
    def __init__(self, db: Database, source_languages: Mapping[str, str] | None = None) -> None:
        self.db = db
        self.languages = dict(source_languages or {})  # a source's configured language by its label (else "auto")

    def close(self) -> None:
        pass  # the pool closes with the backend

    @property
    def schema_version(self) -> int:
        return self.db.schema_version

    def _all(self, sql: str, params: Any = None, point: bool = False) -> list[tuple]:
        """A writer-path read: on the primary (``database.py`` says which reads are which)."""
        with self.db.connection(point) as conn:
            return conn.execute(sql, params).fetchall()

    def _read(self, sql: str, params: Any = None, point: bool = False) -> list[tuple]:
        """A read serving a request: on the hot standby when there is one."""
        return self.db.read(lambda conn: conn.execute(sql, params).fetchall(), point)

    # -- meta and sync state -------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self._all("SELECT value FROM ctx_meta WHERE key = %s", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO ctx_meta(key, value) VALUES(%s, %s) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def fingerprints(self, source: str, under: list[str] | None = None) -> dict[str, tuple[str, str | None, str]]:
        sql = "SELECT source_id, id, fingerprint, content_hash FROM documents WHERE source = %s"
        params: list[Any] = [source]
        if under is not None:
            sql += " AND (source_id = ANY(%s) OR EXISTS (SELECT 1 FROM unnest(%s::text[]) u(p) " \
                   "WHERE left(source_id, length(u.p) + 1) = u.p || '/'))"
            params += [under, under]
        return {r[0]: (r[1], r[2], r[3]) for r in self._all(sql, params)}

    def apply(self, source: str, writes: Iterable[DocumentWrite], deletes: Iterable[str],
              touches: Iterable[tuple[str, str | None]] = ()) -> None:
        """Store new/changed documents with their chunks and keyword data, delete removed ones, and
        refresh fingerprints: one transaction."""
        synced = now_iso()
        writes, deletes = list(writes), list(deletes)
        ids = [w.row.id for w in writes]
        analysed = self._analyse(writes)  # before the transaction: it stays as short as before
        with self.db.transaction() as conn:
            known = dict(conn.execute("SELECT id, created_at FROM documents WHERE id = ANY(%s)", (ids,)).fetchall())
            _LINKS.note_changes(conn, [w.row for w in writes], deletes, synced, _LINKS.known(conn, ids + deletes))
            if writes or deletes:
                conn.execute("NOTIFY ctx_changes")  # delivered on commit: replicas' keyword followers wake
            self._forget(conn, deletes + ids)
            for write in writes:
                r = write.row
                if r.created_at is None:  # no creation date from the source: its first sync stands for it
                    r.created_at = known.get(r.id) or synced
            if writes:
                self._insert(conn, writes, analysed, synced)
                _LINKS.write_links(conn, [w.row for w in writes])  # _forget's cascade took the old rows
            if touches:
                with conn.cursor() as cur:
                    cur.executemany("UPDATE documents SET fingerprint = %s WHERE id = %s",
                                    [(fp, doc_id) for doc_id, fp in touches])

    def _forget(self, conn: Any, doc_ids: list[str]) -> None:
        """Delete documents and their postings (their chunks cascade) and take them out of the statistics."""
        if not doc_ids:
            return
        conn.execute("DELETE FROM postings WHERE doc_id = ANY(%s)", (doc_ids,))
        conn.execute(
            "WITH gone AS (DELETE FROM documents WHERE id = ANY(%s) RETURNING title_len, body_len, language), "
            "stats AS (UPDATE keyword_stats SET documents = documents - (SELECT count(*) FROM gone), "
            "title_tokens = title_tokens - (SELECT coalesce(sum(title_len), 0) FROM gone), "
            "body_tokens = body_tokens - (SELECT coalesce(sum(body_len), 0) FROM gone)) "
            "UPDATE keyword_languages k SET documents = k.documents - g.n "
            "FROM (SELECT language, count(*) AS n FROM gone GROUP BY language) g WHERE k.language = g.language",
            (doc_ids,))

    def _analyse(self, writes: list[DocumentWrite]) -> list[Analysed]:
        """The keyword data of the documents of ``writes`` (as stored: without NUL characters)."""
        return [analyse(r.id, _strip_nul(r.title), _strip_nul(r.body) or "", self.language_of(r.source))
                for r in (w.row for w in writes)]

    def _insert(self, conn: Any, writes: list[DocumentWrite], analysed: list[Analysed], synced: str) -> None:
        """Insert documents with their keyword columns, their chunks, and their postings (one COPY)."""
        rows = [w.row for w in writes]
        bodies = [_strip_nul(r.body) or "" for r in rows]
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO documents({_DOC_COLUMNS}, tags_lower, synced_at, language, title_len, body_len, dated, "
                "tsv) VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector)",
                [(r.id, r.source, _strip_nul(r.source_id), r.source_url, _strip_nul(r.title), r.author, r.created_at,
                  r.updated_at, r.content_type, body, json.dumps(r.metadata, ensure_ascii=False),
                  json.dumps(r.tags, ensure_ascii=False), r.content_hash, r.fingerprint,
                  [t.lower() for t in r.tags], synced, a.language, len(a.title), len(a.body),
                  own_date(r.metadata, _strip_nul(r.title), _strip_nul(r.source_id) or ""), a.tsv)
                 for r, body, a in zip(rows, bodies, analysed, strict=True)])
            cur.executemany(
                f"INSERT INTO chunks({_CHUNK_COLUMNS}, doc_id) VALUES(%s,%s,%s,%s,%s,%s,%s)",
                [(c.id, c.idx, _strip_nul(c.text), c.content_hash, c.heading, c.start, w.row.id)
                 for w in writes for c in w.chunks])
        store_postings(conn, analysed)
        conn.execute("UPDATE keyword_stats SET documents = documents + %s, title_tokens = title_tokens + %s, "
                     "body_tokens = body_tokens + %s",
                     (len(analysed), sum(len(a.title) for a in analysed), sum(len(a.body) for a in analysed)))
        count_languages(conn, Counter(a.language for a in analysed))

    def language_of(self, source: str) -> str:
        """The language a source's documents are analysed in: its configured one, else "auto"."""
        return self.languages.get(source, AUTO)

    def record_sync(self, source: str, notes: str | None, keep_notes: bool = False) -> None:
        with self.db.transaction() as conn:
            if keep_notes:
                conn.execute("INSERT INTO sources(name, last_sync, notes) VALUES(%s, %s, NULL) "
                             "ON CONFLICT(name) DO UPDATE SET last_sync = excluded.last_sync", (source, now_iso()))
            else:
                conn.execute("INSERT INTO sources(name, last_sync, notes) VALUES(%s, %s, %s) ON CONFLICT(name) "
                             "DO UPDATE SET last_sync = excluded.last_sync, notes = excluded.notes",
                             (source, now_iso(), notes))

    def record_outcome(self, source: str, outcome: str, error: str | None, at: str | None = None) -> None:
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO outcomes(source, outcome, error, at) VALUES(%s, %s, %s, %s) ON CONFLICT(source) "
                         "DO UPDATE SET outcome = excluded.outcome, error = excluded.error, at = excluded.at",
                         (source, outcome, error, at or now_iso()))

    def outcomes(self) -> dict[str, SyncOutcome]:
        rows = self._all("SELECT source, outcome, error, at FROM outcomes")
        return {r[0]: SyncOutcome(r[1], r[2], r[3]) for r in rows}

    # -- the sync history: written and read on the primary, as outcomes are ------------------------

    def record_history(self, entry: SyncEntry) -> None:
        with self.db.transaction() as conn:
            source = _strip_nul(entry.source)
            last = conn.execute(f"SELECT seq, {HISTORY_COLUMNS} FROM sync_history WHERE source = %s ORDER BY seq DESC "
                                "LIMIT 1 FOR UPDATE", (source,)).fetchone()
            if last is not None and repeats(entry, SyncEntry(*last[1:])):
                conn.execute("UPDATE sync_history SET ended_at = %s, seconds = %s, unchanged = %s, "
                             "repeats = repeats + 1 WHERE seq = %s", (entry.ended_at, entry.seconds, entry.unchanged,
                                                                      last[0]))
                return
            values = ", ".join(["%s"] * len(HISTORY_FIELDS))
            conn.execute(f"INSERT INTO sync_history({HISTORY_COLUMNS}) VALUES({values})",
                         tuple(_strip_nul(v) if isinstance(v, str) else v
                               for v in (getattr(entry, c) for c in HISTORY_FIELDS)))
            conn.execute("DELETE FROM sync_history WHERE source = %s AND seq <= (SELECT seq FROM sync_history "
                         "WHERE source = %s ORDER BY seq DESC LIMIT 1 OFFSET %s)",
                         (_strip_nul(entry.source), _strip_nul(entry.source), HISTORY_KEPT))

    def sync_history(self, source: str | None = None, limit: int | None = 20) -> list[SyncEntry]:
        sql, params = f"SELECT {HISTORY_COLUMNS} FROM sync_history", list[Any]()
        if source is not None:
            sql, params = sql + " WHERE source = %s", [source]
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql, params = sql + " LIMIT %s", [*params, max(limit, 0)]
        return [SyncEntry(*row) for row in self._all(sql, params)]

    def remembered_skips(self, source: str) -> dict[str, tuple[str, str]]:
        rows = self._all("SELECT source_id, fingerprint, reason FROM skipped WHERE source = %s", (source,))
        return {r[0]: (r[1], r[2]) for r in rows}

    def remember_skips(self, source: str, skips: dict[str, tuple[str, str]]) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM skipped WHERE source = %s", (source,))
            if skips:
                with conn.cursor() as cursor:
                    cursor.executemany("INSERT INTO skipped(source, source_id, fingerprint, reason) "
                                       "VALUES(%s, %s, %s, %s)",
                                       [(source, _strip_nul(sid), fp, reason)
                                        for sid, (fp, reason) in skips.items()])

    # -- agent runs (``store/runs.py``): written and read on the primary, as outcomes are ----------

    def save_run(self, record: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            _RUNS.save(conn, record)

    def add_run_step(self, head: dict[str, Any], step: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            _RUNS.add_step(conn, head, step)

    def runs(self, limit: int | None = 50, agent: str | None = None) -> list[dict[str, Any]]:
        with self.db.connection() as conn:
            return _RUNS.runs(conn, limit, agent)

    def run(self, run_id: str) -> dict[str, Any] | None:
        with self.db.connection(point=True) as conn:
            return _RUNS.run(conn, run_id)

    # -- the keyword queue: none (the keyword data commits with the documents) ------------------

    def queued(self, limit: int = 5000) -> list[str]:
        return []

    def dequeue(self, doc_ids: list[str]) -> None:
        pass

    def enqueue(self, doc_ids: Iterable[str]) -> None:
        pass

    def enqueue_all(self) -> None:
        pass

    def queued_count(self) -> int:
        return 0

    # -- consistency ---------------------------------------------------------------------------

    def quick_check(self) -> str:
        return "ok" if self._all("SELECT 1") == [(1,)] else "the database did not answer"

    def all_ids(self) -> set[str]:
        return {r[0] for r in self._all("SELECT id FROM documents")}

    def stray_chunks(self, delete: bool = False) -> int:
        return 0  # a foreign key with ON DELETE CASCADE: chunks cannot outlive their document

    def unchunked(self) -> list[DocumentRow]:
        rows = self._all(f"SELECT {_DOC_COLUMNS} FROM documents d WHERE trim(body) != '' "
                         "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.doc_id = d.id) ORDER BY source, source_id")
        return [_row(r) for r in rows]

    # -- reads ---------------------------------------------------------------------------------

    def document_with_chunks(self, doc_id: str) -> tuple[DocumentRow, list[StoredChunk]] | None:
        """A document and its chunks in order: one round trip (the chunks as parallel arrays)."""
        rows = self._read(f"SELECT {_DOC_COLUMNS}, c.* FROM documents d LEFT JOIN LATERAL ("
                          f"SELECT {_CHUNK_ARRAYS} FROM chunks WHERE doc_id = d.id) c ON true WHERE d.id = %s",
                          (doc_id,), point=True)
        if not rows:
            return None
        r = rows[0]
        return _row(r), [StoredChunk(*c) for c in zip(*(a or [] for a in r[14:]), strict=True)]

    def read_window(self, doc_id: str, chunk: int | None, offset: int, reach: int) -> WindowRead | None:
        """What a window of ``get`` needs (see the embedded store's ``read_window``): one round trip."""
        rows = self._read(_WINDOW_SQL, {"id": doc_id, "chunk": chunk, "around": chunk is not None,
                                        "offset": offset, "reach": reach}, point=True)
        if not rows:
            return None
        r = rows[0]
        chunks = [StoredChunk(*c) for c in zip(*(a or [] for a in r[17:]), strict=True)]
        return WindowRead(_row(r), r[16], r[14], r[15], chunks)

    def chunk_headings(self, doc_id: str, first: int, last: int) -> tuple[list[str], int] | None:
        """The heading paths of the chunks at positions ``first`` to ``last``, and how many the document
        has (None: no such document): one round trip."""
        rows = self._read("SELECT (SELECT count(*) FROM chunks WHERE doc_id = d.id), (SELECT array_agg(heading "
                          "ORDER BY idx) FROM chunks WHERE doc_id = d.id AND idx BETWEEN %s AND %s) "
                          "FROM documents d WHERE d.id = %s", (first, last, doc_id), point=True)
        return (list(rows[0][1] or []), rows[0][0]) if rows else None

    def document(self, doc_id: str) -> DocumentRow | None:
        rows = self._read(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = %s", (doc_id,), point=True)
        return _row(rows[0]) if rows else None

    def languages_of(self, doc_ids: list[str]) -> dict[str, str]:
        """The language each of ``doc_ids`` was analysed in (a writer-path read: the replica index's)."""
        if not doc_ids:
            return {}
        return dict(self._all("SELECT id, language FROM documents WHERE id = ANY(%s)", (doc_ids,)))

    def documents(self, doc_ids: list[str]) -> dict[str, DocumentRow]:
        if not doc_ids:
            return {}
        return {r[0]: _row(r) for r in self._all(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ANY(%s)",
                                                 (doc_ids,))}

    def summaries(self, doc_ids: list[str], with_body: bool = False,
                  with_places: bool = False) -> dict[str, Summary]:
        """doc_id -> what a search result shows (``Summary``); ``with_places`` (with a body): the chunks'
        (starts, positions, headings) too, so that a search places its snippets without a second round
        trip (``chunk_place``)."""
        if not doc_ids:
            return {}
        if not (with_body and with_places):
            rows = self._read(f"SELECT id, title, source, source_id, updated_at, source_url, content_hash, dated"
                              f"{', body' if with_body else ''} FROM documents WHERE id = ANY(%s)", (doc_ids,))
            return {r[0]: Summary(r[1], r[2], r[3], r[4], r[5], r[6], r[8] if with_body else None, dated=r[7])
                    for r in rows}
        rows = self._read(
            "SELECT d.id, d.title, d.source, d.source_id, d.updated_at, d.source_url, d.content_hash, d.body, "
            "c.starts, c.idxs, c.headings, d.dated FROM documents d LEFT JOIN LATERAL (SELECT "
            "array_agg(start ORDER BY idx) starts, array_agg(idx ORDER BY idx) idxs, "
            "array_agg(heading ORDER BY idx) headings FROM chunks WHERE doc_id = d.id) c ON true "
            "WHERE d.id = ANY(%s)", (doc_ids,))
        return {r[0]: Summary(r[1], r[2], r[3], r[4], r[5], r[6], r[7], (r[8] or [], r[9] or [], r[10] or []),
                              r[11]) for r in rows}

    def listing(self, after: str | None, limit: int) -> list[tuple[str, str | None, str, str | None]]:
        return [tuple(r) for r in self._read(
            "SELECT id, title, source, updated_at FROM documents WHERE id > %s ORDER BY id LIMIT %s",
            (after or "", limit))]

    def chunks(self, doc_id: str) -> list[StoredChunk]:
        return [StoredChunk(*r) for r in self._read(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE doc_id = %s ORDER BY idx", (doc_id,), point=True)]

    def iter_chunks(self, doc_id: str) -> Iterator[StoredChunk]:
        yield from self.chunks(doc_id)

    def chunks_at(self, wanted: list[tuple[str, int]]) -> dict[str, ChunkPlace]:
        if not wanted:
            return {}
        rows = self._read(
            "SELECT w.doc_id, c.idx, c.heading FROM unnest(%s::text[], %s::int[]) w(doc_id, off) "
            "CROSS JOIN LATERAL (SELECT idx, heading FROM chunks WHERE doc_id = w.doc_id AND start <= w.off "
            "ORDER BY idx DESC LIMIT 1) c", ([d for d, _ in wanted], [o for _, o in wanted]))
        return {doc_id: ChunkPlace(idx, heading) for doc_id, idx, heading in rows}

    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, StoredChunk]:
        if not chunk_ids:
            return {}
        rows = self._read(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id = ANY(%s)", (chunk_ids,))
        return {r[0]: StoredChunk(*r) for r in rows}

    def source_counts(self) -> dict[str, tuple[int, int]]:
        rows = self._all("SELECT d.source, count(DISTINCT d.id), count(c.id) FROM documents d "
                         "LEFT JOIN chunks c ON c.doc_id = d.id GROUP BY d.source")
        return {s: (int(docs), int(chunks)) for s, docs, chunks in rows}

    def source_bytes(self) -> dict[str, int]:
        rows = self._all("SELECT source, sum(octet_length(body)) FROM documents GROUP BY source")
        return {s: int(n) for s, n in rows}

    def document_counts(self) -> dict[str, int]:
        return {s: int(n) for s, n in self._all("SELECT source, count(*) FROM documents GROUP BY source")}

    def source_rows(self) -> dict[str, tuple[str | None, str | None]]:
        return {r[0]: (r[1], r[2]) for r in self._all("SELECT name, last_sync, notes FROM sources")}

    def counts(self) -> tuple[int, int]:
        documents, chunks = self._all("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)")[0]
        return int(documents), int(chunks)

    def document_ids_matching(self, source: str | None = None, tags: Iterable[str] | None = None,
                              since: dt.datetime | None = None, until: dt.datetime | None = None) -> set[str]:
        where, params = filter_sql(source, tags, since, until)
        return {r[0] for r in self._read("SELECT id FROM documents d" + (" WHERE " + where if where else ""),
                                         params)}

    # -- links and changes (``store/connections.py``) ------------------------------------------

    def links_from(self, doc_id: str) -> list[tuple[str, str, str]]:
        return self.db.read(lambda conn: _LINKS.links_from(conn, doc_id))

    def links_to(self, keys: list[str]) -> list[tuple[str, str, str, str, str]]:
        return self.db.read(lambda conn: _LINKS.links_to(conn, keys))

    def named(self, names: list[str]) -> list[tuple[str, str, str, str]]:
        return self.db.read(lambda conn: _LINKS.named(conn, names))

    def at_paths(self, source: str, paths: list[str]) -> dict[str, str]:
        return self.db.read(lambda conn: _LINKS.at_paths(conn, source, paths))

    def changes(self, since: str | None, source: str | None, limit: int) -> list[tuple]:
        return self.db.read(lambda conn: _LINKS.changes(conn, since, source, limit))


def filter_sql(source: str | None, tags: Iterable[str] | None, since: dt.datetime | None,
               until: dt.datetime | None) -> tuple[str, list[Any]]:
    """The search filters as a condition on ``documents d`` (the same meaning as the embedded
    backend's): ``source`` a label or a connector type, any of ``tags`` (case-insensitive),
    the document's own date (else ``updated_at``) within [``since``, ``until``]."""
    clauses: list[str] = []
    params: list[Any] = []
    if source:
        clauses.append("(d.source = %s OR d.source LIKE %s)")
        params += [source, source.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ":%"]
    if tags:
        clauses.append("d.tags_lower && %s::text[]")
        params.append([t.lower() for t in tags])
    if since:
        clauses.append("COALESCE(d.dated, d.updated_at) >= %s")
        params.append(since_text(since))
    if until:
        clauses.append("COALESCE(d.dated, d.updated_at) <= %s")
        params.append(until_text(until))
    return " AND ".join(clauses), params
