"""The SQLite schema: every table and index of the database file, and its migrations.

One file holds everything (WAL mode):

- ``meta(key, value)``: ``schema_version`` and per-source chunking signatures;
- ``documents``, ``chunks``: the source of truth (``DocumentStore``);
- ``sources``: the last sync of each source;
- ``index_queue``: documents whose keyword-index entry is not committed yet (crash replay);
- ``embeddings(content_hash, vector)``: one little-endian float32 unit vector per distinct chunk
  text (``VectorStore``);
- ``embedding_meta(key, value)``: the embedder identity (``provider``, ``model``, ``dims``,
  ``identity``) that made every stored vector, the ``generation`` bumped by a clear, and the
  ``version`` bumped by every write of vectors (how other processes notice them).

The versioned tables migrate in order; the vector tables are created on demand (``IF NOT EXISTS``)
and so need no version of their own. ``migrate`` joins the connection's open transaction, if any.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from context_harness.errors import ConfigError

SCHEMA_VERSION = 2

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS documents(
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        source_id TEXT NOT NULL,
        source_url TEXT,
        title TEXT,
        author TEXT,
        created_at TEXT,
        updated_at TEXT,
        content_type TEXT NOT NULL,
        body TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        tags TEXT NOT NULL DEFAULT '[]',
        content_hash TEXT NOT NULL,
        fingerprint TEXT,
        synced_at TEXT NOT NULL,
        UNIQUE(source, source_id)
    );
    CREATE TABLE IF NOT EXISTS chunks(
        id TEXT PRIMARY KEY,
        doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        text TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        heading TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, idx);
    CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
    CREATE TABLE IF NOT EXISTS sources(
        name TEXT PRIMARY KEY,
        last_sync TEXT,
        notes TEXT
    );
    CREATE TABLE IF NOT EXISTS index_queue(doc_id TEXT PRIMARY KEY);
    """,
    # 2: where each chunk's span begins in its document's body (``passages.chunk_starts``), so search
    # and ``get`` place chunks without re-reading them. NULL until the next sync re-chunks the source
    # (the chunker version changed with it).
    2: """
    ALTER TABLE chunks ADD COLUMN start INTEGER
    """,
}

_VECTOR_TABLES = """
CREATE TABLE IF NOT EXISTS embeddings(
    content_hash TEXT PRIMARY KEY,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS embedding_meta(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


class StoreVersionError(ConfigError):
    """The database was written by a newer version."""


def migrate(conn: sqlite3.Connection, name: str = "the database") -> None:
    """Bring the schema of ``conn``'s database up to ``SCHEMA_VERSION`` (all or nothing). A current
    file is only read: opening a store never waits for another process's write transaction."""
    if not conn.in_transaction and _is_current(conn):
        return
    with _transaction(conn):
        _execute(conn, "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{name} was written by a newer context-harness (schema {version}; this version "
                f"understands up to {SCHEMA_VERSION}); upgrade context-harness"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            _execute(conn, _MIGRATIONS[target])
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", (str(target),))
        _execute(conn, _VECTOR_TABLES)


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


def _is_current(conn: sqlite3.Connection) -> bool:
    try:
        version, vector_tables = conn.execute(
            "SELECT (SELECT value FROM meta WHERE key='schema_version'), (SELECT COUNT(*) FROM sqlite_master "
            "WHERE type='table' AND name IN ('embeddings', 'embedding_meta'))"
        ).fetchone()
    except sqlite3.OperationalError:  # no meta table yet: a new file
        return False
    return version == str(SCHEMA_VERSION) and vector_tables == 2


def _execute(conn: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
