"""The PostgreSQL backend (``[db] backend = "postgres"``): documents, chunks, sync state, BM25
keyword data and pgvector vectors in one database, for any number of replicas. Needs the
``postgres`` extra (psycopg 3, psycopg_pool, pgvector)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from context_harness.store.backend import Backend, KeywordRanking


def open_postgres(url: str, title_boost: float, with_vectors: bool, pool_size: int = 8,
                  pool_wait: float = 2.0, keyword_path: Path | None = None, read_url: str | None = None,
                  heading_boost: float = 0.0, source_languages: Mapping[str, str] | None = None) -> Backend:
    """The backend over the database at ``url``; ``keyword_path``: this replica's own keyword index
    there (``follower.py``), else BM25 runs in SQL (over titles and bodies: ``heading_boost`` applies
    to the replica's own index only); ``read_url``: a hot standby for the reads that serve requests
    (``database.py``); ``source_languages``: the configured language of the sources that set one
    (their documents' keyword data is recomputed when it changes: ``postings.follow_languages``)."""
    from context_harness.store.postgres.database import Database
    from context_harness.store.postgres.documents import PgDocumentStore
    from context_harness.store.postgres.keyword import PgKeywordIndex
    from context_harness.store.postgres.lock import advisory_locks
    from context_harness.store.postgres.vectors import PgVectorStore

    db = Database(url, pool_size, pool_wait, read_url)
    try:
        db.follow_languages(source_languages or {})
    except BaseException:
        db.close()
        raise
    documents = PgDocumentStore(db, source_languages)
    sql = PgKeywordIndex(db, title_boost)
    keyword: KeywordRanking = sql
    closers: tuple[Any, ...] = (db.close,)
    if keyword_path is not None:
        from context_harness.store.postgres.follower import ReplicaKeywordIndex

        follower = ReplicaKeywordIndex(db, documents, keyword_path, title_boost, sql, heading_boost, source_languages)
        keyword, closers = follower, (follower.close, db.close)

    def sizes() -> tuple[int, int]:
        with db.connection() as conn:
            total, keyword = conn.execute(
                "SELECT pg_database_size(current_database()), pg_total_relation_size('postings')").fetchone()
        return int(total), int(keyword)

    return Backend(kind="postgres", location=db.where, documents=documents, keyword=keyword,
                   vectors=PgVectorStore(db) if with_vectors else None, sizes=sizes, closers=closers,
                   locks=advisory_locks(db))
