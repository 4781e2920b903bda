"""Opening the storage backend a config selects (``[db] backend``), behind the seam of
``store/backend.py``: the embedded stores in the data folder, or PostgreSQL at ``[db] url``; and
copying an embedded workspace into PostgreSQL (``ctx db migrate``).

Opening the embedded backend also finishes a keyword-index write that an earlier process left
queued (see ``store/documents.py``), unless another writer holds the workspace's lock.
"""

from __future__ import annotations

import logging
import time

from context_harness.config import Config
from context_harness.errors import BadRequest
from context_harness.models import MigrationReport
from context_harness.store.backend import Backend, flush_index
from context_harness.store.writer_lock import WriterLock

log = logging.getLogger(__name__)


def open_backend(config: Config, index_lock: WriterLock) -> Backend:
    with_vectors = config.embedding.provider != "disabled"
    if config.db.backend == "postgres":
        from context_harness.store.postgres import open_postgres

        assert config.db.url is not None  # the config requires it
        local = config.db.path.parent / "replica-keyword" if config.db.keyword_index == "replica" else None
        return open_postgres(config.db.url, config.retrieval.title_boost, with_vectors, config.db.pool_size,
                             config.db.pool_wait, local, config.db.read_url,
                             heading_boost=config.retrieval.heading_boost,
                             source_languages=config.connectors.languages())
    from context_harness.store.embedded import open_embedded

    backend = open_embedded(config.db.path, config.retrieval.title_boost, with_vectors,
                            config.retrieval.heading_boost, config.connectors.languages())
    store, index = backend.documents, backend.keyword
    if store.queued(1):
        # Queued documents are a write in progress elsewhere (that writer flushes them when it
        # commits) or one interrupted here: flush only when no other writer is at work.
        if index_lock.try_acquire("flush the keyword index"):
            try:
                log.info("bringing the keyword index up to date after an interrupted write")
                flush_index(store, index)
            finally:
                index_lock.release()
        else:
            log.info("the keyword index is being written by %s", index_lock.holder())
    return backend


def migrate_to_postgres(source: Backend, url: str, config: Config) -> MigrationReport:
    """Copy an embedded workspace (documents, chunks, vectors, the embedder identity) into the empty
    PostgreSQL database at ``url`` (``store/postgres/copy.py``); nothing is embedded again."""
    if source.kind != "embedded":
        raise BadRequest(f"this workspace is on {source.kind} already; `ctx db migrate --to postgres` copies an "
                         "embedded workspace")
    from context_harness.store.postgres import open_postgres
    from context_harness.store.postgres.copy import copy_embedded

    started = time.perf_counter()
    target = open_postgres(url, config.retrieval.title_boost, source.vectors is not None, config.db.pool_size,
                           config.db.pool_wait, source_languages=config.connectors.languages())
    try:
        counts = copy_embedded(source, target)
        identity = target.vectors.identity() if target.vectors is not None else None
    finally:
        target.close()
    return MigrationReport(target=target.location, documents=counts.documents, chunks=counts.chunks,
                           vectors=counts.vectors, embedder=identity.key if identity else None,
                           seconds=round(time.perf_counter() - started, 2))
