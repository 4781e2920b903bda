"""Vector store: embeddings persisted in the documents' SQLite file (tables in ``schema.py``).

One little-endian float32 unit vector per distinct chunk text (by content hash), so unchanged text
is never embedded twice, and the embedder identity that made every stored vector.

Writes join the caller's open transaction when there is one (so chunk and vector writes can
commit together), else run in their own ``BEGIN IMMEDIATE`` transaction. Searching happens in
memory, in a ``VectorIndex`` (``open_index``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from context_harness.embedding.base import EmbedderIdentity, EmbedderMismatch
from context_harness.store import queries, schema
from context_harness.store.records import PendingChunk

if TYPE_CHECKING:  # numpy and the index load with the first search or embedding, not with the server
    import numpy as np

    from context_harness.store.vector_index import VectorIndex

__all__ = ["EmbedderMismatch", "IdentityRules", "PendingChunk", "VectorStats", "VectorStore", "rebuild_hint"]

_BATCH = 500  # SQL parameters per IN (...) query
_FETCH = 4096  # rows per fetchmany while loading the matrix


def rebuild_hint(stored: EmbedderIdentity | None, wanted: EmbedderIdentity) -> str:
    made_by = stored.key if stored else "an unrecorded embedder"
    return (
        f"the vector index was built with {made_by} but [embedding] now selects {wanted.key}; "
        "run `ctx embed rebuild` to re-embed every chunk with the configured model "
        "(or restore the previous [embedding] settings)"
    )


class IdentityRules:
    """The embedder-identity rules every vector store follows (embedded and PostgreSQL alike), over
    the store's own ``meta``, ``set_identity`` and ``count``, and how the identity is kept: the
    ``embedding_meta`` rows ``provider``, ``model``, ``dims`` and ``identity`` (its key), and
    ``config``: the ``[embedding]`` settings that made them (``remember_config``), so a process
    whose config names another model can still embed queries for these vectors.

    During a model switch the next set's rows are the same with the prefix ``next.``
    (``next_identity``)."""

    def meta(self) -> dict[str, str]:
        raise NotImplementedError

    def _put_meta(self, rows: dict[str, str]) -> None:
        raise NotImplementedError

    def identity(self) -> EmbedderIdentity | None:
        return self.identity_from_meta(self.meta())

    def next_identity(self) -> EmbedderIdentity | None:
        """The embedder of the next vector set while a model switch fills it (None: no switch)."""
        rows = self.meta()
        return self.identity_from_meta({k[len(NEXT):]: v for k, v in rows.items() if k.startswith(NEXT)})

    def set_identity(self, identity: EmbedderIdentity) -> None:
        self._put_meta(self.meta_of(identity))

    def count(self) -> int:
        raise NotImplementedError

    def embedder_config(self, identity: EmbedderIdentity) -> str | None:
        """The settings (JSON) recorded for the set made by ``identity``, current or next."""
        rows = self.meta()
        for prefix in ("", NEXT):
            if rows.get(prefix + "identity") == identity.key:
                return rows.get(prefix + "config")
        return None

    def remember_config(self, identity: EmbedderIdentity, config: str) -> None:
        """Record ``config`` (JSON, no secrets) as the settings of the current set when ``identity``
        made it, unless recorded already."""
        rows = self.meta()
        if rows.get("identity") == identity.key and rows.get("config") != config:
            self._put_meta({"config": config})

    @staticmethod
    def identity_from_meta(rows: dict[str, str]) -> EmbedderIdentity | None:
        if not {"provider", "model", "dims"} <= rows.keys():
            return None
        return EmbedderIdentity(rows["provider"], rows["model"], int(rows["dims"]))

    @staticmethod
    def meta_of(identity: EmbedderIdentity) -> dict[str, str]:
        return {"provider": identity.provider, "model": identity.model, "dims": str(identity.dims),
                "identity": identity.key}

    def check_identity(self, identity: EmbedderIdentity) -> None:
        """Raise ``EmbedderMismatch`` when stored vectors come from another embedder. Without stored
        vectors nothing can be mixed: an identity recorded by an embedder that never delivered a
        vector (a model that failed to download, say) does not bind the store."""
        stored = self.identity()
        if stored == identity or not self.count():
            return
        raise EmbedderMismatch(rebuild_hint(stored, identity))

    def ensure_identity(self, identity: EmbedderIdentity) -> None:
        """``check_identity``, then record ``identity`` unless the store holds it already."""
        self.check_identity(identity)
        if self.identity() != identity:
            self.set_identity(identity)

    def switch_due(self, identity: EmbedderIdentity) -> bool:
        """Whether embedding for ``identity`` means a model switch: the store holds vectors of another
        embedder (``ingest/reembed.py`` then fills a next set while searches use these)."""
        stored = self.identity()
        return stored is not None and stored != identity and self.count() > 0


NEXT = "next."  # the prefix of the next set's rows in embedding_meta


def switch_text(identity: EmbedderIdentity, done: int, total: int) -> str:
    """A model switch's progress in words: "re-embedding for MODEL: 1,234 of 5,183 chunks"."""
    return f"re-embedding for {identity.model}: {done:,} of {total:,} chunks"


class VectorStore(IdentityRules):
    """Persistent content-hash -> vector map plus the embedder identity.

    ``db`` is an open ``sqlite3.Connection`` (shared with the core store; it must allow use from
    worker threads) or the path of the database file (opened here in WAL mode). Opening brings the
    file's schema up to date (``schema.migrate``).

    Every write of vectors bumps ``version()`` in the same transaction, so the in-memory index of any
    process can tell, with one cheap read, that another process embedded or deleted vectors.

    ``count()`` is cached: a search in ``auto`` mode asks whether there are vectors every time, and
    ``COUNT(*)`` scans them all. This store's own writes drop the cache; another connection's commit
    (another process syncing, say) changes ``PRAGMA data_version``, which is checked instead.
    """

    def __init__(self, db: sqlite3.Connection | str | os.PathLike[str]) -> None:
        if isinstance(db, sqlite3.Connection):
            self.conn, self._owns = db, False
            self.path: Path | None = None
        else:
            path = self.path = Path(db)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
            schema.use_wal(self.conn)
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self._owns = True
        self.lock = threading.RLock()
        self._count: tuple[int, int] | None = None  # (data_version, COUNT(*)) while no write intervened
        with self.lock:
            schema.migrate(self.conn, str(db) if self._owns else "the database")

    def close(self) -> None:
        if self._owns:
            self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Join the connection's open transaction, or run one (``BEGIN IMMEDIATE``) and commit it."""
        with self.lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.rollback()
                raise
            self.conn.commit()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Run several reads against one consistent state of the database."""
        with self.lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    # -- identity ---------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        with self.lock:
            return dict(self.conn.execute("SELECT key, value FROM embedding_meta").fetchall())

    def _put_meta(self, rows: dict[str, str]) -> None:
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO embedding_meta(key, value) VALUES (?, ?)", rows.items())

    # -- vectors ----------------------------------------------------------------------------

    def count(self) -> int:
        """Stored vectors (cached until a write; see the class notes)."""
        with self.lock:
            if self.conn.in_transaction:  # the caller's transaction may yet roll back: do not cache
                return self._count_now()
            version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
            if self._count is None or self._count[0] != version:
                self._count = (version, self._count_now())
            return self._count[1]

    def has_vectors(self) -> bool:
        return self.count() > 0

    def _count_now(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def _written(self) -> None:
        """Forget the cached count: this connection's own commits leave ``data_version`` as it is."""
        self._count = None

    def missing(self, content_hashes: Iterable[str]) -> list[str]:
        """The hashes (deduplicated, input order kept) that have no stored vector."""
        wanted = list(dict.fromkeys(content_hashes))
        present: set[str] = set()
        with self.lock:
            for start in range(0, len(wanted), _BATCH):
                batch = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                sql = f"SELECT content_hash FROM embeddings WHERE content_hash IN ({marks})"
                present.update(row[0] for row in self.conn.execute(sql, batch))
        return [h for h in wanted if h not in present]

    def put_many(self, pairs: Iterable[tuple[str, np.ndarray]]) -> int:
        """Store vectors by content hash (replacing existing ones) in one transaction."""
        identity = self.identity()
        if identity is None:
            raise ValueError("record the embedder identity (set_identity) before storing vectors")
        rows = [(content_hash, _to_blob(vector, identity.dims)) for content_hash, vector in pairs]
        if rows:
            with self.transaction() as conn:
                self._written()
                conn.executemany("INSERT OR REPLACE INTO embeddings(content_hash, vector) VALUES (?, ?)", rows)
                _bump_version(conn)
        return len(rows)

    def get(self, content_hash: str) -> np.ndarray | None:
        import numpy as np

        with self.lock:
            row = self.conn.execute("SELECT vector FROM embeddings WHERE content_hash = ?", (content_hash,)).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype="<f4").astype(np.float32)

    def orphans(self) -> int:
        """Vectors whose content hash no chunk references (``delete_orphans`` removes them)."""
        with self.snapshot() as conn:
            return queries.count_unreferenced_vectors(conn)

    def delete_orphans(self) -> int:
        """Delete vectors whose content hash no chunk references; returns how many."""
        with self.transaction() as conn:
            self._written()
            deleted = queries.delete_unreferenced_vectors(conn)
            if deleted:
                _bump_version(conn)
            return deleted

    def clear(self) -> None:
        """Forget every vector and the identity, and a next set (``ctx embed rebuild`` starts here)."""
        with self.transaction() as conn:
            self._written()
            generation = self.generation() + 1
            conn.execute("DELETE FROM embeddings")
            conn.execute("DROP TABLE IF EXISTS embeddings_next")
            conn.execute("DELETE FROM embedding_meta WHERE key != 'version'")
            conn.execute("INSERT INTO embedding_meta(key, value) VALUES ('generation', ?)", (str(generation),))
            _bump_version(conn)

    def generation(self) -> int:
        """Bumped by ``clear()``, so an open index knows to reload everything."""
        with self.lock:
            row = self.conn.execute("SELECT value FROM embedding_meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def version(self) -> int:
        """Changes with every committed write of vectors, by any process (0 before the first)."""
        with self.lock:
            row = self.conn.execute("SELECT value FROM embedding_meta WHERE key = 'version'").fetchone()
        return int(row[0]) if row else 0

    # -- the next vector set (a model switch: ``ingest/reembed.py``) ------------------------------

    def begin_next(self, identity: EmbedderIdentity, config: str) -> None:
        """Make (or keep) the next set for ``identity``; a next set of another embedder is dropped."""
        with self.transaction() as conn:
            if self.next_identity() != identity:
                conn.execute("DROP TABLE IF EXISTS embeddings_next")
                conn.execute("DELETE FROM embedding_meta WHERE substr(key, 1, 5) = ?", (NEXT,))
            conn.execute(schema.NEXT_VECTOR_TABLE)
            rows = {NEXT + key: value for key, value in self.meta_of(identity).items()} | {NEXT + "config": config}
            conn.executemany("INSERT OR REPLACE INTO embedding_meta(key, value) VALUES (?, ?)", rows.items())

    def drop_next(self) -> None:
        """Forget the next set (the config went back to the current set's embedder)."""
        with self.transaction() as conn:
            conn.execute("DROP TABLE IF EXISTS embeddings_next")
            conn.execute("DELETE FROM embedding_meta WHERE substr(key, 1, 5) = ?", (NEXT,))

    def put_next(self, pairs: Iterable[tuple[str, np.ndarray]]) -> int:
        """Store vectors of the next set (``begin_next`` first), in one transaction."""
        identity = self.next_identity()
        if identity is None:
            raise ValueError("begin the next set (begin_next) before storing its vectors")
        rows = [(content_hash, _to_blob(vector, identity.dims)) for content_hash, vector in pairs]
        if rows:
            with self.transaction() as conn:
                conn.executemany("INSERT OR REPLACE INTO embeddings_next(content_hash, vector) VALUES (?, ?)", rows)
        return len(rows)

    def pending_next(self, limit: int | None = None, after: int = 0) -> list[PendingChunk]:
        """``pending``, for the next set."""
        with self.lock:
            return queries.pending_chunks(self.conn, limit, after, "embeddings_next")

    def next_counts(self) -> tuple[int, int]:
        """(chunks with a vector in the next set, chunks in all); (0, 0) without a next set."""
        with self.snapshot() as conn:
            if self.next_identity() is None:
                return 0, 0
            return queries.embedded_chunk_counts(conn, "embeddings_next")

    def swap_next(self) -> bool:
        """Make the next set the current one in one transaction, when every chunk has its vector
        there (else False: a sync added chunks meanwhile); the old set is dropped with it. The
        generation and version move on, so every process's index reloads, with the new identity."""
        with self.transaction() as conn:
            rows = self.meta()
            identity = self.next_identity()
            if identity is None or queries.pending_chunks(conn, 1, 0, "embeddings_next"):
                return False
            self._written()
            conn.execute("DROP TABLE embeddings")
            conn.execute("ALTER TABLE embeddings_next RENAME TO embeddings")
            conn.execute("DELETE FROM embedding_meta WHERE key NOT IN ('version', 'generation')")
            fresh = self.meta_of(identity) | {"generation": str(self.generation() + 1)}
            if NEXT + "config" in rows:
                fresh["config"] = rows[NEXT + "config"]
            conn.executemany("INSERT OR REPLACE INTO embedding_meta(key, value) VALUES (?, ?)", fresh.items())
            _bump_version(conn)
        return True

    # -- chunks awaiting vectors --------------------------------------------------------------

    def pending(self, limit: int | None = None, after: int = 0) -> list[PendingChunk]:
        """Chunks whose text has no vector, one per distinct content hash, oldest first, from the chunk
        after row ``after`` (a previous page's last ``row``). The text to embed is
        ``embedding_text(title, heading, text)`` (what the content hash was computed from)."""
        with self.lock:
            return queries.pending_chunks(self.conn, limit, after)

    def stats(self) -> VectorStats:
        identity = self.identity()
        with self.lock:
            vectors = self.count()
            embedded, total = queries.embedded_chunk_counts(self.conn)
        return VectorStats(embedded, total - embedded, vectors, identity)

    def embedding_by_source(self) -> dict[str, tuple[int, int]]:
        """source -> (chunks with a vector, chunks without)."""
        with self.lock:
            return queries.embedded_chunk_counts_by_source(self.conn)

    # -- reads for the in-memory index ----------------------------------------------------------

    def chunk_batches(self) -> Iterator[list[tuple[str, str, str]]]:
        """Every chunk's ``(id, doc_id, content_hash)`` in batches; run inside ``snapshot()``."""
        with self.lock:
            yield from queries.chunk_batches(self.conn)

    def vector_batches(self) -> Iterator[list[tuple[str, bytes]]]:
        """Every stored ``(content_hash, float32 blob)`` in batches; run inside ``snapshot()``."""
        with self.lock:
            cursor = self.conn.execute("SELECT content_hash, vector FROM embeddings")
            while rows := cursor.fetchmany(_FETCH):
                yield rows

    def chunk_map(self) -> dict[str, tuple[str, str]]:
        """chunk id -> (doc_id, content_hash), for every chunk."""
        with self.lock:
            return queries.chunk_map(self.conn)

    def vectors_of(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """content hash -> stored vector (read-only view of the blob), for the hashes that have one."""
        import numpy as np

        out: dict[str, np.ndarray] = {}
        wanted = list(hashes)
        with self.lock:
            for start in range(0, len(wanted), _BATCH):
                batch = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                sql = f"SELECT content_hash, vector FROM embeddings WHERE content_hash IN ({marks})"
                for content_hash, blob in self.conn.execute(sql, batch):
                    out[content_hash] = np.frombuffer(blob, dtype="<f4")
        return out

    def marker(self) -> dict[str, Any]:
        """What a saved vector graph reflects: the vectors' ``version()`` and the chunks' count and
        highest row id (a sync that changes chunks changes one of the three)."""
        with self.lock:
            count, top = self.conn.execute("SELECT count(*), coalesce(max(rowid), 0) FROM chunks").fetchone()
        return {"version": self.version(), "chunks": [int(count), int(top)]}

    def graph_folder(self) -> Path | None:
        """Where a large index saves its graph: ``vectors/`` beside the database file (None for a
        store over a shared connection)."""
        return self.path.parent / "vectors" if self.path is not None else None

    def open_index(self) -> VectorIndex:
        """Load the search index for the current chunks (see ``VectorIndex``)."""
        from context_harness.store.vector_index import VectorIndex

        index = VectorIndex(self, self.graph_folder())
        index.load()
        return index


@dataclass(frozen=True)
class VectorStats:
    embedded_chunks: int
    pending_chunks: int
    vectors: int
    identity: EmbedderIdentity | None


def _bump_version(conn: sqlite3.Connection) -> None:
    """Advance ``version()`` inside the caller's write transaction."""
    conn.execute("INSERT INTO embedding_meta(key, value) VALUES ('version', '1') "
                 "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1")


def _to_blob(vector: np.ndarray, dims: int) -> bytes:
    import numpy as np

    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.shape[0] != dims:
        raise EmbedderMismatch(
            f"a {v.shape[0]}-dim vector cannot be stored in an index of {dims}-dim vectors; "
            "run `ctx embed rebuild` after changing [embedding]"
        )
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm):
        raise ValueError("vector contains NaN or infinity")
    if norm > 0:
        v = v / norm
    return v.astype("<f4").tobytes()
