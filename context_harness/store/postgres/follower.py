"""A replica's own keyword index on the PostgreSQL backend (``[db] keyword_index = "replica"``).

BM25 in SQL costs the database several milliseconds of CPU per search, so every replica added makes
the shared database slower. Instead each replica keeps a Tantivy index (the embedded backend's, same
analysis and scores) in its data folder, fed from PostgreSQL, which stays the single source of truth:

- every ``apply`` logs one ``changes`` row per document written or deleted (a sequence number,
  ``seq``, in commit order: writes hold the writer lock) and ``NOTIFY ctx_changes`` on commit;
- a follower thread ``LISTEN``s (and polls every ``POLL_SECONDS`` in case a notification is lost),
  reads the rows after the last ``seq`` it applied, re-reads those documents and replaces them in
  Tantivy (idempotent), then records that ``seq`` beside the index (``FOLLOW_FILE``);
- a gap (rows trimmed before this replica read them), another database, or no record at all makes
  it rebuild the index from every document; until an index is complete, searches run in SQL
  (``PgKeywordIndex``), so results are never partial;
- this replica's own writes are searchable when its sync ends (the session catches up on exit);
  another replica's within the notification's delay. A document deleted meanwhile never shows:
  search results are read back from PostgreSQL, and one that is gone is dropped.
- an index updated in place keeps replaced entries until Tantivy merges them away, and its BM25
  statistics count them, so its scores drift from a fresh replica's and near-ties may swap. Once no
  change has come for ``COMPACT_IDLE_SECONDS``, a replica whose index holds replaced entries
  re-indexes every document in one commit (``compact``; searches use the old commit meanwhile; a
  change arriving meanwhile rolls it back), at most ``COMPACT_SHARE`` of the time: then every replica
  ranks exactly as a fresh one does.

Several processes sharing one data folder share the index (Tantivy's writer lock serialises them;
applying a change twice is harmless).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from context_harness.common.analysis import AUTO
from context_harness.store.backend import indexed_document
from context_harness.store.keyword import KeywordIndex, replaced_entries
from context_harness.store.postgres.database import Database
from context_harness.store.postgres.documents import PgDocumentStore
from context_harness.store.postgres.keyword import PgKeywordIndex
from context_harness.store.records import DocumentHit, IndexedDocument, KeywordFilters

log = logging.getLogger(__name__)

CHANNEL = "ctx_changes"
FOLLOW_FILE = "ctx-follow.json"
POLL_SECONDS = 1.0  # the longest a replica waits when a notification is lost
BATCH = 2000  # changes (and, in a rebuild, documents) read per round
SYNC_CATCH_UP = 2000  # a search catches up inline when at most this many changes wait; else SQL answers
COMPACT_IDLE_SECONDS = 3.0  # no change for this long, and replaced entries in the index: compact it
COMPACT_SHARE = 0.1  # the largest share of the time compacting may take, finished or given up (4 s: once a 40 s)


class ReplicaKeywordIndex:
    """``KeywordRanking`` from a local Tantivy index that follows PostgreSQL's change log."""

    rebuilt = False

    def __init__(self, db: Database, store: PgDocumentStore, path: Path, title_boost: float,
                 sql: PgKeywordIndex, heading_boost: float = 0.0, source_languages: Mapping[str, str] | None = None,
                 ) -> None:
        self.db = db
        self.store = store
        self.sql = sql
        self.local = KeywordIndex(path, title_boost, heading_boost, source_languages)
        self.record = Path(path) / FOLLOW_FILE
        self.ready = False
        self._lock = threading.Lock()  # one catch-up at a time in this process
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._store_id = _store_id(db)
        self._last_change = time.monotonic()
        self._next_compact = 0.0

    # -- KeywordRanking ------------------------------------------------------------------------

    @contextmanager
    def session(self) -> Iterator[ReplicaKeywordIndex]:
        """The sync writes to PostgreSQL only; on its end, catch up so this replica finds its own writes."""
        yield self
        self.catch_up()

    def replace(self, doc_ids: Iterable[str], documents: Iterable[IndexedDocument]) -> None:
        pass  # the change log carries every write

    def recreate(self) -> None:
        """Rebuild from every document (``ctx check --repair``)."""
        self.record.unlink(missing_ok=True)
        self.catch_up()

    def doc_id_counts(self) -> dict[str, int]:
        self._fresh()
        return dict(self.local.doc_id_counts()) if self.ready else self.sql.doc_id_counts()

    def search(self, text: str, filters: KeywordFilters | None, limit: int) -> list[DocumentHit]:
        self._fresh()
        return self.local.search(text, filters, limit) if self.ready else self.sql.search(text, filters, limit)

    def term_weights(self, text: str) -> dict[str, float]:
        return self.local.term_weights(text) if self.ready else self.sql.term_weights(text)

    def languages(self) -> list[str]:
        return self.local.languages() if self.ready else self.sql.languages()

    def stem(self, word: str) -> str | None:
        return self.local.stem(word)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    # -- following -----------------------------------------------------------------------------

    def _fresh(self) -> None:
        """Before a read: start following, and apply what waits when it is little (else SQL answers
        while the follower works through it)."""
        if self._thread is None:
            self._start()
            if self._pending() <= SYNC_CATCH_UP:
                self.catch_up()

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._follow, name="ctx-keyword-follower", daemon=True)
        self._thread.start()

    def _pending(self) -> int:
        last = self._recorded()
        if last is None:
            return SYNC_CATCH_UP + 1
        with self.db.connection() as conn:
            row = conn.execute("SELECT count(*) FROM changes WHERE seq > %s", (last,)).fetchone()
        return int(row[0])

    def _follow(self) -> None:
        """The follower thread: catch up, then wait for a notification (or ``POLL_SECONDS``)."""
        while not self._stop.is_set():
            try:
                with self._listening() as wait:
                    while not self._stop.is_set():
                        if not self.catch_up() and self._compact_due():
                            self.compact()
                        wait()
            except Exception:
                log.warning("keyword follower lost its connection to %s; retrying", self.db.where, exc_info=True)
                self._stop.wait(POLL_SECONDS)

    @contextmanager
    def _listening(self) -> Iterator[Any]:
        import psycopg

        with psycopg.connect(self.db.url, autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")

            def wait() -> None:
                for _ in conn.notifies(timeout=POLL_SECONDS, stop_after=1):
                    break

            yield wait

    def catch_up(self) -> int:
        """Apply the changes after the recorded ``seq``; rebuild first when there is no usable record.
        Returns how many changes were applied."""
        applied = 0
        with self._lock:
            last = self._recorded()
            with self.db.connection() as conn:
                low, high = conn.execute("SELECT min(seq), max(seq) FROM changes").fetchone()
            if last is None or (high is not None and high < last) or (low is not None and last + 1 < low):
                last = self._rebuild()
            while True:
                with self.db.connection() as conn:
                    rows = conn.execute("SELECT seq, doc_id FROM changes WHERE seq > %s ORDER BY seq LIMIT %s",
                                        (last, BATCH)).fetchall()
                if not rows:
                    break
                self._apply(list(dict.fromkeys(r[1] for r in rows)))
                last, applied = int(rows[-1][0]), applied + len(rows)
                self._write_record(last)
            self.ready = True
            if applied:
                self._last_change = time.monotonic()
        return applied

    def _compact_due(self) -> bool:
        now = time.monotonic()
        return (self.ready and now - self._last_change >= COMPACT_IDLE_SECONDS and now >= self._next_compact
                and replaced_entries(self.local.path) > 0)

    def compact(self) -> bool:
        """Re-index every document in one commit, so the index holds no replaced entries and ranks as a
        fresh replica's does. Skipped (False) when changes wait or there is nothing to drop; given up,
        rolled back (False), when a change arrives before the last batch, so a compaction never holds
        up catching up by more than a batch. A change committed after that is applied by the next
        catch-up (which replaces an entry again: the next idle moment compacts again)."""
        with self._lock:
            if not self.ready or replaced_entries(self.local.path) == 0:
                return False
            seq = self._newest_seq()
            if seq != self._recorded():
                return False
            started = time.monotonic()
            total = 0
            try:
                with self.local.session() as session:
                    session.clear()
                    for ids in self._all_ids():
                        if self._newest_seq() != seq:
                            raise _ChangeArrived
                        session.replace([], self._indexed(ids))
                        total += len(ids)
            except _ChangeArrived:  # rolled back: catch up first, compact at a later quiet moment
                took = time.monotonic() - started
                self._last_change, self._next_compact = time.monotonic(), time.monotonic() + took / COMPACT_SHARE
                log.info("keyword index at %s: compaction left for later, a change arrived", self.local.path)
                return False
            took = time.monotonic() - started
            self._next_compact = time.monotonic() + took / COMPACT_SHARE
            log.info("keyword index at %s compacted: %d documents in %.1f s", self.local.path, total, took)
            return True

    def _newest_seq(self) -> int:
        with self.db.connection() as conn:
            return int(conn.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])

    def _all_ids(self) -> Iterator[list[str]]:
        """Every document id, ``BATCH`` at a time in id order."""
        after = ""
        while True:
            with self.db.connection() as conn:
                ids = [r[0] for r in conn.execute("SELECT id FROM documents WHERE id > %s ORDER BY id LIMIT %s",
                                                  (after, BATCH)).fetchall()]
            if not ids:
                return
            yield ids
            after = ids[-1]

    def _apply(self, doc_ids: list[str]) -> None:
        self.local.replace(doc_ids, self._indexed(doc_ids))

    def _indexed(self, doc_ids: list[str]) -> list[IndexedDocument]:
        """The stored documents of ``doc_ids`` as the index takes them, each with the language it was
        analysed in when written (so that this replica analyses it alike, without detecting again)."""
        rows = self.store.documents(doc_ids)
        languages = self.store.languages_of(list(rows))
        return [replace(indexed_document(row), language=languages.get(row.id, AUTO)) for row in rows.values()]

    def _rebuild(self) -> int:
        """Index every document anew; returns the ``seq`` to follow from (changes after it are applied
        next; one applied twice is harmless)."""
        log.info("keyword index at %s follows %s: indexing every document", self.local.path, self.db.where)
        self.ready = False
        started = time.monotonic()
        seq = self._newest_seq()
        self.local.recreate()
        total = 0
        for ids in self._all_ids():
            self._apply(ids)
            total += len(ids)
        self._write_record(seq)
        log.info("keyword index at %s: %d documents in %.1f s", self.local.path, total, time.monotonic() - started)
        return seq

    def _recorded(self) -> int | None:
        """The last applied ``seq``, if the record is this database's."""
        try:
            data = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("store") != self._store_id or not isinstance(data.get("seq"), int):
            return None
        return int(data["seq"])

    def _write_record(self, seq: int) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".ctx-follow-", dir=self.record.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"store": self._store_id, "seq": seq}, out)
        os.replace(tmp, self.record)


class _ChangeArrived(Exception):
    """A change was logged while a compaction ran (it rolls back)."""


def _store_id(db: Database) -> str:
    """The database's identity (``ctx_meta.store_id``, made once): a record from another is ignored."""
    with db.connection() as conn:
        conn.execute("INSERT INTO ctx_meta(key, value) VALUES('store_id', %s) ON CONFLICT(key) DO NOTHING",
                     (uuid.uuid4().hex,))
        return str(conn.execute("SELECT value FROM ctx_meta WHERE key = 'store_id'").fetchone()[0])


__all__ = ["ReplicaKeywordIndex"]
