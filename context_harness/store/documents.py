"""SQLite store for documents, chunks and sync state (WAL mode; the schema is in ``schema.py``).

SQLite is the source of truth. The keyword index is derived from it: every write that changes a
document also records the document in ``index_queue`` in the same transaction, and the queue is
cleared only after the keyword index has committed the change. A crash anywhere in between leaves
the queue behind, and the next open replays it, so the two stores never disagree for long and
never silently.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from context_harness.common.dates import own_date
from context_harness.common.timestamps import now_iso, since_text, until_text
from context_harness.store.connections import LinkSql
from context_harness.store.faults import check_db_path
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
from context_harness.store.schema import DATED, HISTORY_COLUMNS, HISTORY_FIELDS, HISTORY_KEPT, migrate, use_wal

log = logging.getLogger(__name__)
_LINKS = LinkSql()
_RUNS = RunSql()


_DOC_COLUMNS = ("id, source, source_id, source_url, title, author, created_at, updated_at, content_type, "
                "body, metadata, tags, content_hash, fingerprint")
KEPT_LENGTHS = 4096  # body lengths document_part keeps (then it forgets them all and starts again)
_PART_COLUMNS = _DOC_COLUMNS.replace("body,", "substr(body, ?, ?),")  # document_part: a slice of the body


def _row_to_document(r: sqlite3.Row | tuple) -> DocumentRow:
    return DocumentRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
                       json.loads(r[10]), json.loads(r[11]), r[12], r[13])


class DocumentStore:
    """Thread-safe access to the SQLite file. Writes are serialised; reads use per-thread connections."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        check_db_path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._lengths: dict[tuple[str, str], int] = {}  # (doc id, content hash) -> body length (document_part)
        self._migrate()

    # -- connections -------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0, isolation_level=None)
            use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()
        self._local = threading.local()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            conn = self.connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite has already rolled back after e.g. SQLITE_FULL
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        log.debug("rollback failed", exc_info=True)
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise

    def _migrate(self) -> None:
        with self._write_lock:
            migrate(self.connection(), str(self.path))

    # -- meta --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.connection().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    @property
    def schema_version(self) -> int:
        return int(self.get_meta("schema_version") or 0)

    # -- sync state --------------------------------------------------------------------------

    def fingerprints(self, source: str, under: list[str] | None = None) -> dict[str, tuple[str, str | None, str]]:
        """source_id -> (doc_id, fingerprint, content_hash) for every stored document of a source, or
        (``under``) only those whose source_id is one of these paths or lies inside one of them."""
        if under is None:
            rows = self.connection().execute(
                "SELECT source_id, id, fingerprint, content_hash FROM documents WHERE source=?", (source,))
            return {r[0]: (r[1], r[2], r[3]) for r in rows}
        out = {}
        for start in range(0, len(under), 200):
            part = under[start:start + 200]
            # a range per folder ("/" sorts just before "0"), so the (source, source_id) index
            # answers it: a prefix test scanned every document of the source (0.2-0.7 s at 100,000)
            terms = " OR ".join(["source_id = ? OR (source_id >= ? AND source_id < ?)"] * len(part))
            params: list[Any] = [source]
            for path in part:
                params += [path, path + "/", path + "0"]
            rows = self.connection().execute(
                f"SELECT source_id, id, fingerprint, content_hash FROM documents WHERE source=? AND ({terms})",
                params)
            out.update({r[0]: (r[1], r[2], r[3]) for r in rows})
        return out

    def apply(self, source: str, writes: Iterable[DocumentWrite], deletes: Iterable[str],
              touches: Iterable[tuple[str, str | None]] = ()) -> None:
        """Store new/changed documents, delete removed ones, and refresh fingerprints, atomically."""
        synced = now_iso()
        writes, deletes = list(writes), list(deletes)
        with self.transaction() as conn:
            known = _LINKS.known(conn, [w.row.id for w in writes] + deletes)
            _LINKS.note_changes(conn, [w.row for w in writes], deletes, synced, known)
            for doc_id in deletes:
                conn.execute("DELETE FROM documents WHERE id=?", (doc_id,))
                conn.execute("INSERT OR IGNORE INTO index_queue(doc_id) VALUES(?)", (doc_id,))
            for write in writes:
                r = write.row
                if r.created_at is None and r.id in known:  # no date from the source: its first sync stands for it
                    stored = conn.execute("SELECT created_at FROM documents WHERE id=?", (r.id,)).fetchone()
                    r.created_at = stored[0] if stored else None
                r.created_at = r.created_at or synced
                if r.id in known:
                    conn.execute("DELETE FROM chunks WHERE doc_id=?", (r.id,))
                conn.execute(
                    f"INSERT OR REPLACE INTO documents({_DOC_COLUMNS}, synced_at, dated) "
                    "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (r.id, r.source, r.source_id, r.source_url, r.title, r.author, r.created_at, r.updated_at,
                     r.content_type, r.body, json.dumps(r.metadata, ensure_ascii=False),
                     json.dumps(r.tags, ensure_ascii=False), r.content_hash, r.fingerprint, synced,
                     own_date(r.metadata, r.title, r.source_id)),
                )
                conn.executemany(
                    "INSERT INTO chunks(id, doc_id, idx, text, content_hash, heading, start) VALUES(?,?,?,?,?,?,?)",
                    [(c.id, r.id, c.idx, c.text, c.content_hash, c.heading, c.start) for c in write.chunks],
                )
                conn.execute("INSERT OR IGNORE INTO index_queue(doc_id) VALUES(?)", (r.id,))
            conn.executemany("UPDATE documents SET fingerprint=? WHERE id=?",
                             [(fp, doc_id) for doc_id, fp in touches])
            _LINKS.write_links(conn, [w.row for w in writes], deletes, known)

    def record_sync(self, source: str, notes: str | None, keep_notes: bool = False) -> None:
        """The time of a source's last sync, and its notes (``keep_notes``: the previous ones)."""
        with self.transaction() as conn:
            if keep_notes:
                conn.execute("INSERT INTO sources(name, last_sync, notes) VALUES(?,?,NULL) "
                             "ON CONFLICT(name) DO UPDATE SET last_sync=excluded.last_sync", (source, now_iso()))
            else:
                conn.execute("INSERT OR REPLACE INTO sources(name, last_sync, notes) VALUES(?,?,?)",
                             (source, now_iso(), notes))

    def record_outcome(self, source: str, outcome: str, error: str | None, at: str | None = None) -> None:
        """How the last whole sync of ``source`` ended ("ok", or "error" and what went wrong), and
        when (``at``; default now)."""
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO outcomes(source, outcome, error, at) VALUES(?,?,?,?)",
                         (source, outcome, error, at or now_iso()))

    def outcomes(self) -> dict[str, SyncOutcome]:
        rows = self.connection().execute("SELECT source, outcome, error, at FROM outcomes")
        return {r[0]: SyncOutcome(r[1], r[2], r[3]) for r in rows}

    def record_history(self, entry: SyncEntry) -> None:
        """Add ``entry`` to the sync history of its source, keeping that source's newest ``HISTORY_KEPT``;
        a quiet sync after a quiet one with the same skips extends that entry instead (``SyncEntry``)."""
        with self.transaction() as conn:
            last = conn.execute(f"SELECT seq, {HISTORY_COLUMNS} FROM sync_history WHERE source = ? ORDER BY seq DESC "
                                "LIMIT 1", (entry.source,)).fetchone()
            if last is not None and repeats(entry, SyncEntry(*last[1:])):
                conn.execute("UPDATE sync_history SET ended_at = ?, seconds = ?, unchanged = ?, repeats = repeats + 1 "
                             "WHERE seq = ?", (entry.ended_at, entry.seconds, entry.unchanged, last[0]))
                return
            conn.execute(f"INSERT INTO sync_history({HISTORY_COLUMNS}) VALUES({', '.join('?' * len(HISTORY_FIELDS))})",
                         tuple(getattr(entry, c) for c in HISTORY_FIELDS))
            conn.execute("DELETE FROM sync_history WHERE source = ? AND seq <= (SELECT seq FROM sync_history "
                         "WHERE source = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                         (entry.source, entry.source, HISTORY_KEPT))

    def sync_history(self, source: str | None = None, limit: int | None = 20) -> list[SyncEntry]:
        """The newest ``limit`` entries of the sync history (None: all), of ``source`` only when given;
        newest first."""
        sql, params = f"SELECT {HISTORY_COLUMNS} FROM sync_history", list[Any]()
        if source is not None:
            sql, params = sql + " WHERE source = ?", [source]
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql, params = sql + " LIMIT ?", [*params, max(limit, 0)]
        return [SyncEntry(*row) for row in self.connection().execute(sql, params)]

    def remembered_skips(self, source: str) -> dict[str, tuple[str, str]]:
        """``source_id -> (fingerprint, reason)`` of the items the last sync of ``source`` skipped for
        what they hold."""
        rows = self.connection().execute("SELECT source_id, fingerprint, reason FROM skipped WHERE source=?",
                                         (source,))
        return {r[0]: (r[1], r[2]) for r in rows}

    def remember_skips(self, source: str, skips: dict[str, tuple[str, str]]) -> None:
        """Replace the remembered skips of ``source`` with ``skips`` (as ``remembered_skips`` returns)."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM skipped WHERE source=?", (source,))
            conn.executemany("INSERT INTO skipped(source, source_id, fingerprint, reason) VALUES(?,?,?,?)",
                             [(source, sid, fp, reason) for sid, (fp, reason) in skips.items()])

    # -- agent runs (``store/runs.py``) ------------------------------------------------------

    def save_run(self, record: dict[str, Any]) -> None:
        """Store a run record, replacing the stored one of its ``id`` (steps and all)."""
        with self.transaction() as conn:
            _RUNS.save(conn, record)

    def add_run_step(self, head: dict[str, Any], step: dict[str, Any]) -> None:
        """Append ``step`` to run ``head['id']`` and store ``head`` (the record without its steps) in
        one transaction."""
        with self.transaction() as conn:
            _RUNS.add_step(conn, head, step)

    def runs(self, limit: int | None = 50, agent: str | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` run records (None: all; of ``agent`` only), without their steps."""
        return _RUNS.runs(self.connection(), limit, agent)

    def run(self, run_id: str) -> dict[str, Any] | None:
        return _RUNS.run(self.connection(), run_id)

    # -- index queue -------------------------------------------------------------------------

    def queued(self, limit: int = 5000) -> list[str]:
        rows = self.connection().execute("SELECT doc_id FROM index_queue ORDER BY doc_id LIMIT ?", (limit,))
        return [r[0] for r in rows]

    def dequeue(self, doc_ids: list[str]) -> None:
        with self.transaction() as conn:
            conn.executemany("DELETE FROM index_queue WHERE doc_id=?", [(d,) for d in doc_ids])

    def enqueue(self, doc_ids: Iterable[str]) -> None:
        with self.transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO index_queue(doc_id) VALUES(?)", [(d,) for d in doc_ids])

    def queued_count(self) -> int:
        return self.connection().execute("SELECT COUNT(*) FROM index_queue").fetchone()[0]

    # -- consistency (``ctx check``) ---------------------------------------------------------

    def quick_check(self) -> str:
        """SQLite's own verdict on the file: ``ok``, or the first problem it found."""
        return str(self.connection().execute("PRAGMA quick_check").fetchone()[0])

    def all_ids(self) -> set[str]:
        return {r[0] for r in self.connection().execute("SELECT id FROM documents")}

    def stray_chunks(self, delete: bool = False) -> int:
        """Chunks whose document is gone (counted, or deleted with ``delete``)."""
        where = "WHERE doc_id NOT IN (SELECT id FROM documents)"
        if not delete:
            return self.connection().execute(f"SELECT COUNT(*) FROM chunks {where}").fetchone()[0]
        with self.transaction() as conn:
            return conn.execute(f"DELETE FROM chunks {where}").rowcount

    def unchunked(self) -> list[DocumentRow]:
        """Documents with text but no chunks (a write cut short by hand or by a bug)."""
        rows = self.connection().execute(
            f"SELECT {_DOC_COLUMNS} FROM documents d WHERE trim(body) != '' "
            "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.doc_id = d.id) ORDER BY source, source_id")
        return [_row_to_document(r) for r in rows]

    def enqueue_all(self) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO index_queue(doc_id) SELECT id FROM documents")

    # -- reads -------------------------------------------------------------------------------

    def document(self, doc_id: str) -> DocumentRow | None:
        row = self.connection().execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id=?", (doc_id,)).fetchone()
        return _row_to_document(row) if row else None

    def documents(self, doc_ids: list[str]) -> dict[str, DocumentRow]:
        if not doc_ids:
            return {}
        marks = ",".join("?" * len(doc_ids))
        rows = self.connection().execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id IN ({marks})", doc_ids)
        return {r[0]: _row_to_document(r) for r in rows}

    def summaries(self, doc_ids: list[str], with_body: bool = False,
                  with_places: bool = False) -> dict[str, Summary]:
        """doc_id -> what a search result shows (``Summary``). ``with_places`` is for backends where a
        query is a round trip; here ``chunks_at`` reads the few places needed."""
        if not doc_ids:
            return {}
        marks = ",".join("?" * len(doc_ids))
        rows = self.connection().execute(
            f"SELECT id, title, source, source_id, updated_at, source_url, content_hash, dated"
            f"{', body' if with_body else ''} FROM documents WHERE id IN ({marks})", doc_ids)
        return {r[0]: Summary(r[1], r[2], r[3], r[4], r[5], r[6], r[8] if with_body else None, dated=r[7])
                    for r in rows}

    def listing(self, after: str | None, limit: int) -> list[tuple[str, str | None, str, str | None]]:
        """Up to ``limit`` documents by id after ``after``: (id, title, source, updated_at)."""
        return self.connection().execute(
            "SELECT id, title, source, updated_at FROM documents WHERE id > ? ORDER BY id LIMIT ?",
            (after or "", limit)).fetchall()

    def document_with_chunks(self, doc_id: str) -> tuple[DocumentRow, list[StoredChunk]] | None:
        """A document and its chunks in order (what ``get`` shows)."""
        row = self.document(doc_id)
        return (row, self.chunks(doc_id)) if row is not None else None

    # -- windowed reads: a window of a long document without reading the rest (``search/windows``) --

    def read_window(self, doc_id: str, chunk: int | None, offset: int, reach: int) -> WindowRead | None:
        """What a window of at most ``reach`` characters needs, at chunk ``chunk`` or from ``offset``, in
        one snapshot (None: no such document). Chunk starts grow with the position, so where the reach
        begins and ends is a binary search of point reads; SQLite cuts the body. Around a chunk starting
        at S: the chunks from the last one starting at or before S - reach - 1 (else the first) to the
        one after the last starting at or before S + reach, and the body from the first of them to
        S + reach + 1. From an offset O: the chunks from the last one starting before O to the one after
        the last starting at or before O + reach, and the body from O to O + reach + 1. No chunks when
        ``chunk`` is out of range or the starts are not stored."""
        with self._snapshot():
            count = self._chunk_count(doc_id)
            if chunk is not None:
                own = self._start_of(doc_id, chunk) if chunk < count else None
                if own is None:
                    found = self._document_part(doc_id, 0, 0)
                    return WindowRead(found[0], 0, found[1], count, []) if found else None
                first = self._chunk_at(doc_id, own - reach - 1, count) or 0
                last = self._chunk_at(doc_id, own + reach, count)
                stop = own + reach + 1
            else:
                first = self._chunk_at(doc_id, offset - 1, count) or 0
                last = self._chunk_at(doc_id, offset + reach, count)
                stop = offset + reach + 1
            chunks = self._chunk_range(doc_id, first, min(last + 1, count - 1)) if last is not None else []
            base = (chunks[0].start or 0) if chunk is not None and chunks else offset
            found = self._document_part(doc_id, base, stop)
        return WindowRead(found[0], base, found[1], count, chunks) if found else None

    def chunk_headings(self, doc_id: str, first: int, last: int) -> tuple[list[str], int] | None:
        """The heading paths of the chunks at positions ``first`` to ``last``, and how many chunks the
        document has (None: no such document)."""
        with self._snapshot():
            count = self._chunk_count(doc_id)
            if not count and self._document_part(doc_id, 0, 0) is None:
                return None
            return [c.heading for c in self._chunk_range(doc_id, first, last)], count

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """The reads inside see one state of the file (a read transaction), whatever a sync commits meanwhile."""
        conn = self.connection()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")

    def _document_part(self, doc_id: str, start: int, stop: int) -> tuple[DocumentRow, int] | None:
        """The document with ``body`` cut to ``body[start:stop]`` (characters, as Python counts them), and
        the length of its whole body in characters. SQLite cuts it: Python never holds the rest. Each
        of SQLite's ``substr`` and ``length`` reads the whole value (0.1-0.2 s for 50 MB), so the length
        is kept per document version (``_lengths``)."""
        start = max(start, 0)
        conn = self.connection()
        row = conn.execute(f"SELECT {_PART_COLUMNS} FROM documents WHERE id=?",
                           (start + 1, max(stop - start, 0), doc_id)).fetchone()
        if row is None:
            return None
        key = (doc_id, row[12])
        total = self._lengths.get(key)
        if total is None:
            found = conn.execute("SELECT length(body) FROM documents WHERE id=? AND content_hash=?", key).fetchone()
            if found is None:  # changed in between (outside a snapshot): read both at once
                row = conn.execute(f"SELECT {_PART_COLUMNS}, length(body) FROM documents WHERE id=?",
                                   (start + 1, max(stop - start, 0), doc_id)).fetchone()
                return (_row_to_document(row), row[14]) if row else None
            if len(self._lengths) >= KEPT_LENGTHS:
                self._lengths.clear()
            total = self._lengths[key] = found[0]
        return _row_to_document(row), total

    def _chunk_count(self, doc_id: str) -> int:
        return self.connection().execute("SELECT count(*) FROM chunks WHERE doc_id=?", (doc_id,)).fetchone()[0]

    def _chunk_range(self, doc_id: str, first: int, last: int) -> list[StoredChunk]:
        rows = self.connection().execute(
            "SELECT id, idx, text, content_hash, heading, start FROM chunks WHERE doc_id=? AND idx BETWEEN ? AND ? "
            "ORDER BY idx", (doc_id, first, last))
        return [StoredChunk(*r) for r in rows]

    def _start_of(self, doc_id: str, idx: int) -> int | None:
        row = self.connection().execute("SELECT start FROM chunks WHERE doc_id=? AND idx=?", (doc_id, idx)).fetchone()
        return row[0] if row else None

    def _chunk_at(self, doc_id: str, offset: int, count: int) -> int | None:
        """The position of the last of the document's ``count`` chunks whose stored start is at or before
        ``offset`` (a binary search: about 17 point reads for 100,000 chunks); None when none is or the
        starts are not stored."""
        first = self._start_of(doc_id, 0) if count else None
        if first is None or first > offset:
            return None
        lo, hi = 0, count - 1  # the start of chunk lo is at or before offset
        while lo < hi:
            mid = (lo + hi + 1) // 2
            start = self._start_of(doc_id, mid)
            if start is None:
                return None
            if start <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def chunks(self, doc_id: str) -> list[StoredChunk]:
        rows = self.connection().execute(
            "SELECT id, idx, text, content_hash, heading, start FROM chunks WHERE doc_id=? ORDER BY idx", (doc_id,))
        return [StoredChunk(*r) for r in rows]

    def iter_chunks(self, doc_id: str) -> Iterator[StoredChunk]:
        """A document's chunks in order, read from SQLite as they are consumed (stop early to read fewer)."""
        cursor = self.connection().execute(
            "SELECT id, idx, text, content_hash, heading, start FROM chunks WHERE doc_id=? ORDER BY idx", (doc_id,))
        try:
            for r in cursor:
                yield StoredChunk(*r)
        finally:
            cursor.close()

    def chunks_at(self, wanted: list[tuple[str, int]]) -> dict[str, ChunkPlace]:
        """For each ``(doc id, offset)``: the chunk whose span holds that offset of the body (the last one
        starting at or before it). Documents whose chunks have no stored start are left out."""
        out: dict[str, ChunkPlace] = {}
        for first in range(0, len(wanted), 200):
            part = wanted[first:first + 200]
            query = " UNION ALL ".join(
                ["SELECT * FROM (SELECT doc_id, idx, heading FROM chunks "
                 "WHERE doc_id=? AND start<=? ORDER BY idx DESC LIMIT 1)"] * len(part))
            for doc_id, idx, heading in self.connection().execute(query, [v for pair in part for v in pair]):
                out[doc_id] = ChunkPlace(idx, heading)
        return out

    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, StoredChunk]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.connection().execute(
            f"SELECT id, idx, text, content_hash, heading, start FROM chunks WHERE id IN ({marks})", chunk_ids)
        return {r[0]: StoredChunk(*r) for r in rows}

    def source_counts(self) -> dict[str, tuple[int, int]]:
        """source -> (documents, chunks)."""
        conn = self.connection()
        docs = dict(conn.execute("SELECT source, COUNT(*) FROM documents GROUP BY source").fetchall())
        chunks = dict(conn.execute(
            "SELECT d.source, COUNT(*) FROM chunks c JOIN documents d ON d.id = c.doc_id GROUP BY d.source").fetchall())
        return {s: (docs.get(s, 0), chunks.get(s, 0)) for s in set(docs) | set(chunks)}

    def source_bytes(self) -> dict[str, int]:
        """source -> the bytes of its documents' text (UTF-8). Reads every body: the sources dashboard
        asks once per page, never per second."""
        return dict(self.connection().execute(
            "SELECT source, SUM(length(CAST(body AS BLOB))) FROM documents GROUP BY source").fetchall())

    def document_counts(self) -> dict[str, int]:
        """source -> documents (read from the (source, source_id) index alone: cheap at any size)."""
        return dict(self.connection().execute("SELECT source, COUNT(*) FROM documents GROUP BY source").fetchall())

    def source_rows(self) -> dict[str, tuple[str | None, str | None]]:
        return {r[0]: (r[1], r[2]) for r in self.connection().execute("SELECT name, last_sync, notes FROM sources")}

    def counts(self) -> tuple[int, int]:
        conn = self.connection()
        return (conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def document_ids_matching(self, source: str | None = None, tags: Iterable[str] | None = None,
                              since: dt.datetime | None = None, until: dt.datetime | None = None) -> set[str]:
        """Ids of the documents passing the search filters: ``source`` is a full label or a connector
        type (``filesystem`` matches ``filesystem:docs``); any of ``tags`` (case-insensitive);
        the document's own date (else ``updated_at``) within [``since``, ``until``], compared as instants."""
        clauses, params = [], []
        if source:
            clauses.append(f"(source = ? OR substr(source, 1, {len(source) + 1}) = ?)")  # no LIKE: '%' is text
            params += [source, source + ":"]
        if since:
            clauses.append(f"{DATED} >= ?")
            params.append(since_text(since))
        if until:
            clauses.append(f"{DATED} <= ?")
            params.append(until_text(until))
        if tags:  # a superset in SQL (ASCII folded there; a tag beyond ASCII is kept for the exact check below)
            folded = sorted({t.lower() for t in tags})
            clauses.append("EXISTS (SELECT 1 FROM json_each(documents.tags) WHERE lower(json_each.value) IN "
                           f"({','.join('?' * len(folded))}) OR json_each.value GLOB '*[^ -~]*')")
            params += folded
        sql = "SELECT id, tags FROM documents" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        rows = self.connection().execute(sql, params)
        if not tags:
            return {r[0] for r in rows}
        wanted = {t.lower() for t in tags}
        return {r[0] for r in rows if wanted & {t.lower() for t in json.loads(r[1])}}

    def all_chunk_ids(self) -> set[str]:
        return {r[0] for r in self.connection().execute("SELECT id FROM chunks")}

    # -- links and changes (``store/connections.py``) ----------------------------------------

    def links_from(self, doc_id: str) -> list[tuple[str, str, str]]:
        return _LINKS.links_from(self.connection(), doc_id)

    def links_to(self, keys: list[str]) -> list[tuple[str, str, str, str, str]]:
        return _LINKS.links_to(self.connection(), keys)

    def named(self, names: list[str]) -> list[tuple[str, str, str, str]]:
        return _LINKS.named(self.connection(), names)

    def at_paths(self, source: str, paths: list[str]) -> dict[str, str]:
        return _LINKS.at_paths(self.connection(), source, paths)

    def changes(self, since: str | None, source: str | None, limit: int) -> list[tuple]:
        return _LINKS.changes(self.connection(), since, source, limit)
