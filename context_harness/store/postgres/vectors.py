"""Vectors in pgvector: one unit vector per distinct chunk text (``embeddings``), the embedder
identity that made them (``embedding_meta``), and an HNSW index (cosine) per dimension, made when
the first embedder identity is recorded.

Searches run in the database, so every replica sees another's vectors as soon as they commit:
unfiltered ones walk the HNSW index (``hnsw.ef_search`` at least twice the rows wanted); filtered
ones (``allowed`` documents) rank the allowed documents' chunks exactly, so filters always apply
before the top-k cut.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from context_harness.embedding.base import EmbedderIdentity
from context_harness.store.chunk_scores import document_score
from context_harness.store.postgres.database import Database
from context_harness.store.records import PendingChunk
from context_harness.store.schema import POSTGRES_NEXT_VECTOR_INDEX, POSTGRES_NEXT_VECTOR_TABLE, POSTGRES_VECTOR_INDEX
from context_harness.store.vectors import NEXT, EmbedderMismatch, IdentityRules, VectorStats

#: The HNSW graph and hnsw.ef_search at least (benchmarks/postgres.py --vectors 1000000, 2 busy cores,
#: 2026-11-27): pgvector's default graph (m 16, ef_construction 64) reached recall@10 0.934 / 0.937 /
#: 0.938 / 0.949 at ef_search 400 / 600 / 800 / 1000 (its most), p50 4.7 / 6.3 / 7.3 / 12.1 ms: never
#: 0.95. With m 24 and ef_construction 128: 0.999 at 400 (p50 5.8 ms) and above; the build took 1.4x
#: as long (1,496 s against 1,068 s).
HNSW_M, HNSW_EF_CONSTRUCTION = 24, 128
MIN_EF_SEARCH = 400
MAX_FETCH = 20_000

_PENDING = """
SELECT content_hash, title, heading, text FROM (
    SELECT DISTINCT ON (c.content_hash) c.content_hash, c.seq, d.title, c.heading, c.text
    FROM chunks c JOIN documents d ON d.id = c.doc_id
    WHERE NOT EXISTS (SELECT 1 FROM {table} e WHERE e.content_hash = c.content_hash)
    ORDER BY c.content_hash, c.seq) p
ORDER BY seq
"""
_SAME_SET = "EXISTS (SELECT 1 FROM embedding_meta m WHERE m.key = 'identity' AND m.value = %(identity)s)"
_UPSERT = ("INSERT INTO {table}(content_hash, vector) VALUES (%s, %s) "
           "ON CONFLICT(content_hash) DO UPDATE SET vector = excluded.vector")


class PgVectorStore(IdentityRules):
    def __init__(self, db: Database) -> None:
        self.db = db

    def close(self) -> None:
        pass  # the pool closes with the backend

    def _all(self, sql: str, params: Any = None) -> list[tuple]:
        """A writer-path read (identity, pending chunks, counts): on the primary."""
        with self.db.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _read(self, sql: str, params: Any = None) -> list[tuple]:
        """A read serving a search: on the hot standby when there is one."""
        return self.db.read(lambda conn: conn.execute(sql, params).fetchall())

    # -- identity ------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return dict(self._all("SELECT key, value FROM embedding_meta"))

    def _put_meta(self, rows: dict[str, str]) -> None:
        with self.db.transaction() as conn:
            _put_meta(conn, rows)

    def set_identity(self, identity: EmbedderIdentity) -> None:
        with self.db.transaction() as conn:
            _put_meta(conn, self.meta_of(identity))
            conn.execute(POSTGRES_VECTOR_INDEX.format(dims=int(identity.dims), m=HNSW_M,
                                                      ef_construction=HNSW_EF_CONSTRUCTION))

    # -- vectors -------------------------------------------------------------------------------

    def count(self) -> int:
        return int(self._all("SELECT count(*) FROM embeddings")[0][0])

    def has_vectors(self) -> bool:
        return bool(self._all("SELECT EXISTS (SELECT 1 FROM embeddings)")[0][0])

    def put_many(self, pairs: Iterable[tuple[str, np.ndarray]]) -> int:
        identity = self.identity()
        if identity is None:
            raise ValueError("record the embedder identity (set_identity) before storing vectors")
        rows = [(content_hash, _unit(vector, identity.dims)) for content_hash, vector in pairs]
        if rows:
            with self.db.transaction() as conn:
                with conn.cursor() as cur:
                    cur.executemany(_UPSERT.format(table="embeddings"), rows)
                _bump_version(conn)
        return len(rows)

    def orphans(self) -> int:
        return int(self._all("SELECT count(*) FROM embeddings e WHERE NOT EXISTS "
                             "(SELECT 1 FROM chunks c WHERE c.content_hash = e.content_hash)")[0][0])

    def delete_orphans(self) -> int:
        with self.db.transaction() as conn:
            deleted = conn.execute("DELETE FROM embeddings e WHERE NOT EXISTS "
                                   "(SELECT 1 FROM chunks c WHERE c.content_hash = e.content_hash)").rowcount
            if deleted:
                _bump_version(conn)
        return int(deleted)

    def clear(self) -> None:
        with self.db.transaction() as conn:
            generation = self.generation() + 1
            for (name,) in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'embeddings' "
                                        "AND indexname LIKE 'embeddings_hnsw_%%'").fetchall():
                conn.execute(f'DROP INDEX IF EXISTS "{name}"')
            conn.execute("TRUNCATE embeddings")
            conn.execute("DROP TABLE IF EXISTS embeddings_next")
            conn.execute("DELETE FROM embedding_meta WHERE key != 'version'")
            conn.execute("INSERT INTO embedding_meta(key, value) VALUES ('generation', %s)", (str(generation),))
            _bump_version(conn)

    def generation(self) -> int:
        rows = self._all("SELECT value FROM embedding_meta WHERE key = 'generation'")
        return int(rows[0][0]) if rows else 0

    def version(self) -> int:
        rows = self._all("SELECT value FROM embedding_meta WHERE key = 'version'")
        return int(rows[0][0]) if rows else 0

    # -- the next vector set (a model switch: ``ingest/reembed.py``) ----------------------------

    def begin_next(self, identity: EmbedderIdentity, config: str) -> None:
        """Make (or keep) the next set for ``identity``; a next set of another embedder is dropped."""
        with self.db.transaction() as conn:
            if self.next_identity() != identity:
                conn.execute("DROP TABLE IF EXISTS embeddings_next")
                conn.execute("DELETE FROM embedding_meta WHERE key LIKE 'next.%%'")
            conn.execute(POSTGRES_NEXT_VECTOR_TABLE)
            _put_meta(conn, {NEXT + key: value for key, value in self.meta_of(identity).items()}
                      | {NEXT + "config": config})

    def drop_next(self) -> None:
        with self.db.transaction() as conn:
            conn.execute("DROP TABLE IF EXISTS embeddings_next")
            conn.execute("DELETE FROM embedding_meta WHERE key LIKE 'next.%%'")

    def put_next(self, pairs: Iterable[tuple[str, np.ndarray]]) -> int:
        identity = self.next_identity()
        if identity is None:
            raise ValueError("begin the next set (begin_next) before storing its vectors")
        rows = [(content_hash, _unit(vector, identity.dims)) for content_hash, vector in pairs]
        if rows:
            with self.db.transaction() as conn:
                with conn.cursor() as cur:
                    cur.executemany(_UPSERT.format(table="embeddings_next"), rows)
        return len(rows)

    def pending_next(self, limit: int | None = None, after: int = 0) -> list[PendingChunk]:
        return self._pending("embeddings_next", limit)

    def next_counts(self) -> tuple[int, int]:
        from psycopg.errors import UndefinedTable

        if self.next_identity() is None:
            return 0, 0
        try:
            embedded, total = self._all("SELECT count(e.content_hash), count(*) FROM chunks c "
                                        "LEFT JOIN embeddings_next e ON e.content_hash = c.content_hash")[0]
        except UndefinedTable:  # swapped in (or dropped) since the identity was read: no switch now
            return 0, 0
        return int(embedded), int(total)

    def swap_next(self) -> bool:
        """Make the next set the current one in one transaction when it is complete (else False).
        Its HNSW index is built first, outside the transaction (searches go on meanwhile); the swap
        itself renames tables, holding their locks for milliseconds. The old set is dropped with it."""
        identity = self.next_identity()
        if identity is None or self._pending("embeddings_next", 1):
            return False
        with self.db.transaction() as conn:
            conn.execute(POSTGRES_NEXT_VECTOR_INDEX.format(dims=int(identity.dims), m=HNSW_M,
                                                           ef_construction=HNSW_EF_CONSTRUCTION))
        with self.db.transaction() as conn:
            conn.execute("LOCK TABLE embedding_meta IN EXCLUSIVE MODE")  # one swap at a time, across replicas
            rows = dict(conn.execute("SELECT key, value FROM embedding_meta").fetchall())
            if rows.get(NEXT + "identity") != identity.key:
                return False
            if conn.execute(_PENDING.format(table="embeddings_next") + " LIMIT 1").fetchall():
                return False  # a sync added chunks meanwhile
            conn.execute("DROP TABLE embeddings")
            conn.execute("ALTER TABLE embeddings_next RENAME TO embeddings")
            conn.execute("ALTER INDEX embeddings_next_pkey RENAME TO embeddings_pkey")
            conn.execute(f"ALTER INDEX embeddings_next_hnsw_{int(identity.dims)} "
                         f"RENAME TO embeddings_hnsw_{int(identity.dims)}")
            conn.execute("DELETE FROM embedding_meta WHERE key NOT IN ('version', 'generation')")
            fresh = self.meta_of(identity) | {"generation": str(int(rows.get("generation", "0")) + 1)}
            if NEXT + "config" in rows:
                fresh["config"] = rows[NEXT + "config"]
            _put_meta(conn, fresh)
            _bump_version(conn)
        return True

    # -- chunks awaiting vectors ---------------------------------------------------------------

    def pending(self, limit: int | None = None, after: int = 0) -> list[PendingChunk]:
        """Pending chunk texts; ``after`` (the embedded store's row paging) is not used here: every
        page is the first still without a vector."""
        return self._pending("embeddings", limit)

    def _pending(self, table: str, limit: int | None) -> list[PendingChunk]:
        sql, params = _PENDING.format(table=table), None
        if limit is not None:
            sql += " LIMIT %s"
            params = (max(0, limit),)
        return [PendingChunk(h, title, heading or "", text) for h, title, heading, text in self._all(sql, params)]

    def stats(self) -> VectorStats:
        embedded, total = self._all(
            "SELECT count(e.content_hash), count(*) FROM chunks c "
            "LEFT JOIN embeddings e ON e.content_hash = c.content_hash")[0]
        return VectorStats(int(embedded), int(total) - int(embedded), self.count(), self.identity())

    def embedding_by_source(self) -> dict[str, tuple[int, int]]:
        rows = self._all("SELECT d.source, count(e.content_hash), count(*) FROM chunks c "
                         "JOIN documents d ON d.id = c.doc_id "
                         "LEFT JOIN embeddings e ON e.content_hash = c.content_hash GROUP BY d.source")
        return {source: (int(embedded), int(total) - int(embedded)) for source, embedded, total in rows}

    def vectors_of(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """content hash -> stored vector, for the hashes that have one."""
        import numpy as np

        rows = self._read("SELECT content_hash, vector FROM embeddings WHERE content_hash = ANY(%s)", (list(hashes),))
        return {h: np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32) for h, v in rows}

    def open_index(self) -> PgVectorIndex:
        return PgVectorIndex(self)


class PgVectorIndex:
    """The semantic search of the seam (``VectorSearch``), answered by the database on every call.
    Only the set of embedded documents, the count and the vectors' dimensions (from the embedder
    identity) are kept, until ``refresh`` (when the vectors' version, read on the primary, changes):
    they are read on the primary too, as a standby that lags would leave them stale until the next
    change. A search itself reads only the nearest chunks (on the standby, with ``read_url``)."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store
        self._doc_ids: frozenset[str] | None = None
        self._len = -1
        self._identity: tuple[EmbedderIdentity | None] | None = None

    def __len__(self) -> int:
        if self._len < 0:
            self._len = int(self.store._all("SELECT count(*) FROM chunks c JOIN embeddings e "
                                            "ON e.content_hash = c.content_hash")[0][0])
        return self._len

    def doc_ids(self) -> frozenset[str]:
        if self._doc_ids is None:
            self._doc_ids = frozenset(r[0] for r in self.store._all(
                "SELECT DISTINCT c.doc_id FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"))
        return self._doc_ids

    def refresh(self) -> tuple[int, int]:
        self._doc_ids, self._len, self._identity = None, -1, None
        return 0, 0

    @property
    def identity(self) -> EmbedderIdentity | None:
        """The stored vectors' embedder, read once until ``refresh``. A search answers only while the
        database still holds vectors of this embedder (a model switch swaps them: ``swap_next``)."""
        if self._identity is None:
            self._identity = (self.store.identity(),)
        return self._identity[0]

    def top_documents(self, query: np.ndarray, k: int, allowed: Any = None) -> list[tuple[str, str, float]]:
        """Best ``k`` documents as (doc_id, best chunk id, score), best first; the score is
        ``chunk_scores.document_score`` of its two best chunks among those fetched."""
        identity = self.identity
        if identity is None or k < 1:
            return []
        dims = int(identity.dims)
        vector = _unit(query, dims)
        fetch = max(4 * k, 32)
        while True:
            rows = self._nearest(vector, identity, fetch, None if allowed is None else list(allowed))
            best: dict[str, tuple[str, float]] = {}
            second: dict[str, float] = {}
            for doc_id, chunk_id, distance in rows:
                if doc_id not in best:
                    best[doc_id] = (chunk_id, 1.0 - float(distance))
                elif doc_id not in second:
                    second[doc_id] = 1.0 - float(distance)
            if len(best) >= k or len(rows) < fetch or fetch >= MAX_FETCH:
                scored = [(doc_id, chunk_id, document_score(score, second.get(doc_id)))
                          for doc_id, (chunk_id, score) in best.items()]
                scored.sort(key=lambda hit: (-hit[2], hit[0]))
                return scored[:k]
            fetch *= 4

    def _nearest(self, vector: np.ndarray, identity: EmbedderIdentity, fetch: int,
                 allowed: list[str] | None) -> list[tuple]:
        dims = int(identity.dims)
        distance = f"e.vector::vector({dims}) <=> %(q)s"
        same_set = _SAME_SET  # nothing when the set was swapped since the identity was read
        if allowed is not None:  # exact, over the allowed documents only
            sql = (f"SELECT c.doc_id, c.id, {distance} AS dist FROM chunks c JOIN embeddings e "
                   f"ON e.content_hash = c.content_hash WHERE c.doc_id = ANY(%(allowed)s) "
                   f"AND vector_dims(e.vector) = {dims} AND {same_set} ORDER BY dist, c.doc_id, c.idx LIMIT %(n)s")
            return self.store._read(sql, {"q": vector, "allowed": allowed, "n": fetch, "identity": identity.key})
        sql = (f"SELECT c.doc_id, c.id, n.dist FROM (SELECT e.content_hash, {distance} AS dist FROM embeddings e "
               f"WHERE vector_dims(e.vector) = {dims} ORDER BY {distance} LIMIT %(n)s) n "
               f"JOIN chunks c ON c.content_hash = n.content_hash WHERE {same_set} ORDER BY n.dist, c.doc_id, c.idx")
        def walk(conn: Any) -> list[tuple]:
            with conn.transaction():
                conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(MIN_EF_SEARCH, 2 * fetch))}")
                conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")  # past ef_search when more are wanted
                return conn.execute(sql, {"q": vector, "n": fetch, "identity": identity.key}).fetchall()

        return self.store.db.read(walk)


def _put_meta(conn: Any, rows: dict[str, str]) -> None:
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO embedding_meta(key, value) VALUES (%s, %s) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value", list(rows.items()))


def _bump_version(conn: Any) -> None:
    conn.execute("INSERT INTO embedding_meta(key, value) VALUES ('version', '1') "
                 "ON CONFLICT(key) DO UPDATE SET value = (embedding_meta.value::bigint + 1)::text")


def _unit(vector: np.ndarray, dims: int) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.shape[0] != dims:
        raise EmbedderMismatch(f"a {v.shape[0]}-dim vector cannot be stored in an index of {dims}-dim vectors; "
                               "run `ctx embed rebuild` after changing [embedding]")
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm):
        raise ValueError("vector contains NaN or infinity")
    return v / norm if norm > 0 else v
