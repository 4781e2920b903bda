"""The PostgreSQL backend (``[db] backend = "postgres"``): documents, chunks, sync state, BM25
keyword data and pgvector vectors in one database, for any number of replicas. Needs the
``postgres`` extra (psycopg 3, psycopg_pool, pgvector)."""

from __future__ import annotations

from context_harness.store.backend import Backend


def open_postgres(url: str, title_boost: float, with_vectors: bool, pool_size: int = 8,
                  pool_wait: float = 2.0) -> Backend:
    from context_harness.store.postgres.database import Database
    from context_harness.store.postgres.documents import PgDocumentStore
    from context_harness.store.postgres.keyword import PgKeywordIndex
    from context_harness.store.postgres.lock import advisory_locks
    from context_harness.store.postgres.vectors import PgVectorStore

    db = Database(url, pool_size, pool_wait)

    def sizes() -> tuple[int, int]:
        with db.connection() as conn:
            total, keyword = conn.execute(
                "SELECT pg_database_size(current_database()), pg_total_relation_size('postings')").fetchone()
        return int(total), int(keyword)

    return Backend(kind="postgres", location=db.where, documents=PgDocumentStore(db),
                   keyword=PgKeywordIndex(db, title_boost), vectors=PgVectorStore(db) if with_vectors else None,
                   sizes=sizes, closers=(db.close,), locks=advisory_locks(db))
