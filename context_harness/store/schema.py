"""The SQLite schema: every table and index of the database file, and its migrations.

One file holds everything (WAL mode):

- ``meta(key, value)``: ``schema_version`` and per-source chunking signatures;
- ``documents``, ``chunks``: the source of truth (``DocumentStore``);
- ``sources``: the last sync of each source; ``outcomes``: how the last whole sync of each ended
  (``ok`` or ``error`` with its message), whichever process ran it;
- ``skipped``: items a sync skipped for what they hold (binary, too large, encrypted ...), by the
  fingerprint they had: not read again while it is unchanged;
- ``agent_runs``: the record of each agent run without its steps; ``agent_run_steps``: its steps, one
  row each in their order (``store/runs.py``);
- ``sync_history``: each source's last whole syncs (at most ``HISTORY_KEPT``): how each ended, when
  it started and ended, and what it added, updated, deleted, left unchanged and skipped;
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

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from context_harness.common.dates import own_date
from context_harness.errors import ConfigError
from context_harness.store.connections import LinkSql
from context_harness.store.runs import RunSql

SCHEMA_VERSION = 8
HISTORY_KEPT = 50  # entries of ``sync_history`` kept per source (older ones go as new ones come)
HISTORY_COLUMNS = ("source, outcome, error, started_at, ended_at, seconds, added, updated, deleted, unchanged, "
                   "skipped, repeats")
HISTORY_FIELDS = tuple(HISTORY_COLUMNS.split(", "))

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
    # 3: links between documents and the change log (``store/connections.py``); the links of the
    # documents already stored are extracted from their bodies (``_FILLS``).
    3: """
    CREATE TABLE IF NOT EXISTS links(
        doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        key TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS links_doc ON links(doc_id);
    CREATE INDEX IF NOT EXISTS links_key ON links(key);
    CREATE TABLE IF NOT EXISTS link_names(
        name TEXT NOT NULL,
        doc_id TEXT NOT NULL,  -- no foreign key: apply deletes a document's names by name (no doc_id index)
        PRIMARY KEY(name, doc_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS changes(
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        doc_id TEXT NOT NULL,
        source TEXT NOT NULL,
        source_id TEXT NOT NULL,
        title TEXT,
        kind TEXT NOT NULL,
        at TEXT NOT NULL
    )
    """,
    # 4: how each source's last whole sync ended (``core/activity.py`` records it; ``sources`` reads
    # it), and the items a sync skipped for what they hold (``ingest/sync.py`` writes and reads them)
    4: """
    CREATE TABLE IF NOT EXISTS outcomes(
        source TEXT PRIMARY KEY,
        outcome TEXT NOT NULL,
        error TEXT,
        at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS skipped(
        source TEXT NOT NULL,
        source_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY(source, source_id)
    ) WITHOUT ROWID
    """,
    # 5: the records of agent runs (``store/runs.py``): the record without its steps, and the steps
    5: """
    CREATE TABLE IF NOT EXISTS agent_runs(
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        step_count INTEGER NOT NULL DEFAULT 0,
        record TEXT NOT NULL,
        steps TEXT
    );
    CREATE INDEX IF NOT EXISTS agent_runs_started ON agent_runs(started_at, id);
    CREATE INDEX IF NOT EXISTS agent_runs_agent ON agent_runs(agent, started_at, id)
    """,
    # 6: the sync history (``core/activity.py`` hands each whole sync that ends to ``record_history``);
    # the counts are NULL for a sync that failed before it had them
    6: """
    CREATE TABLE IF NOT EXISTS sync_history(
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        source TEXT NOT NULL,
        outcome TEXT NOT NULL,
        error TEXT,
        started_at TEXT NOT NULL,
        ended_at TEXT NOT NULL,
        seconds REAL NOT NULL,
        added INTEGER,
        updated INTEGER,
        deleted INTEGER,
        unchanged INTEGER,
        skipped INTEGER,
        repeats INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX IF NOT EXISTS sync_history_source ON sync_history(source, seq)
    """,
    # 7: a run's steps one row each (``store/runs.py``: a step is appended, not the record rewritten);
    # the steps stored as one JSON array in ``agent_runs.steps`` move into rows (``RunSql.move_steps``)
    7: """
    CREATE TABLE IF NOT EXISTS agent_run_steps(
        run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        step TEXT NOT NULL,
        PRIMARY KEY(run_id, seq)
    )
    """,
    # 8: a document's own date (``common/dates.py``: front matter, title or file name), which filters and
    # a query's time words use before ``updated_at`` (``DATED``): the column, its index and every stored
    # document's date are made by ``_add_dated`` (SQLite has no ADD COLUMN IF NOT EXISTS)
    8: "",
}
DATED = "COALESCE(dated, updated_at)"  # a document's date for filters: its own, else when it last changed


def fill_dated(conn: Any, mark: str = "?") -> None:
    """Every stored document's own date (schema 8 on SQLite, 10 on PostgreSQL), from its row."""
    rows = conn.execute("SELECT id, title, source_id, metadata FROM documents").fetchall()
    dates = [(own_date(m if isinstance(m, dict) else json.loads(m or "{}"), title, source_id), doc_id)
             for doc_id, title, source_id, m in rows]
    dated = [pair for pair in dates if pair[0] is not None]
    if dated:
        conn.cursor().executemany(f"UPDATE documents SET dated = {mark} WHERE id = {mark}", dated)


def _add_dated(conn: sqlite3.Connection) -> None:
    """Schema 8 on SQLite: the ``dated`` column (unless there: a migration run again), its index, the dates."""
    if "dated" not in {row[1] for row in conn.execute("PRAGMA table_info(documents)")}:
        conn.execute("ALTER TABLE documents ADD COLUMN dated TEXT")
    conn.execute(f"CREATE INDEX IF NOT EXISTS documents_dated ON documents({DATED})")
    fill_dated(conn)


_FILLS = {3: lambda conn: LinkSql().fill(conn), 7: lambda conn: RunSql().move_steps(conn), 8: _add_dated}

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

# The next vector set of a model switch (``VectorStore.begin_next``, ``ingest/reembed.py``): made when
# a switch starts, renamed to ``embeddings`` when it completes; on demand, so with no version either.
NEXT_VECTOR_TABLE = "CREATE TABLE IF NOT EXISTS embeddings_next(content_hash TEXT PRIMARY KEY, vector BLOB NOT NULL)"


class StoreVersionError(ConfigError):
    """The database was written by a newer version."""


def use_wal(conn: sqlite3.Connection, timeout: float = 30.0) -> None:
    """Put the database in WAL mode (it stays so). Processes that open a new file at once may each
    hold a read lock and want the write lock to switch the mode: SQLite answers one of them "database
    is locked" at once instead of waiting, since waiting could deadlock. So retry for ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


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
            if target in _FILLS:
                _FILLS[target](conn)
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


# -- PostgreSQL (``store/postgres``) ----------------------------------------------------------------
# The same tables, plus what SQLite keeps elsewhere: ``postings`` (term frequencies per field, from
# the shared analysis) and ``keyword_stats`` (documents and tokens per field) for BM25, the documents
# counted per ``language`` (``keyword_languages``), a ``tsv`` column for phrases, and pgvector's
# ``vector`` column (its HNSW index is made per dimension when the embedder is known:
# ``POSTGRES_VECTOR_INDEX``). ``ctx_meta`` holds ``schema_version``.

POSTGRES_SCHEMA_VERSION = 10

POSTGRES_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE EXTENSION IF NOT EXISTS vector;
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
        metadata JSONB NOT NULL DEFAULT '{}',
        tags JSONB NOT NULL DEFAULT '[]',
        tags_lower TEXT[] NOT NULL DEFAULT '{}',
        content_hash TEXT NOT NULL,
        fingerprint TEXT,
        synced_at TEXT NOT NULL,
        title_len INTEGER NOT NULL DEFAULT 0,
        body_len INTEGER NOT NULL DEFAULT 0,
        tsv TSVECTOR,
        UNIQUE(source, source_id)
    );
    CREATE INDEX IF NOT EXISTS documents_updated ON documents(updated_at);
    CREATE INDEX IF NOT EXISTS documents_tsv ON documents USING gin(tsv);
    CREATE TABLE IF NOT EXISTS chunks(
        id TEXT PRIMARY KEY,
        doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        text TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        heading TEXT NOT NULL DEFAULT '',
        start INTEGER,
        seq BIGSERIAL
    );
    CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, idx);
    CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
    CREATE TABLE IF NOT EXISTS sources(name TEXT PRIMARY KEY, last_sync TEXT, notes TEXT);
    CREATE TABLE IF NOT EXISTS postings(
        term TEXT NOT NULL,
        field "char" NOT NULL,
        doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        tf INTEGER NOT NULL,
        dl INTEGER NOT NULL,  -- the field's length in terms (BM25 without a join)
        PRIMARY KEY(term, field, doc_id)
    );
    CREATE INDEX IF NOT EXISTS postings_doc ON postings(doc_id);
    CREATE TABLE IF NOT EXISTS keyword_stats(
        id INTEGER PRIMARY KEY CHECK (id = 1),
        documents BIGINT NOT NULL,
        title_tokens BIGINT NOT NULL,
        body_tokens BIGINT NOT NULL
    );
    INSERT INTO keyword_stats VALUES (1, 0, 0, 0) ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS embeddings(content_hash TEXT PRIMARY KEY, vector vector NOT NULL);
    CREATE TABLE IF NOT EXISTS embedding_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)
    """,
    # 2: links and the change log, as in the SQLite schema's 3 (filled by ``POSTGRES_FILLS``)
    2: """
    CREATE TABLE IF NOT EXISTS links(
        doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        key TEXT NOT NULL,
        seq BIGSERIAL
    );
    CREATE INDEX IF NOT EXISTS links_doc ON links(doc_id);
    CREATE INDEX IF NOT EXISTS links_key ON links(key);
    CREATE TABLE IF NOT EXISTS link_names(
        name TEXT NOT NULL,
        doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        PRIMARY KEY(name, doc_id)
    );
    CREATE INDEX IF NOT EXISTS link_names_doc ON link_names(doc_id);
    CREATE TABLE IF NOT EXISTS changes(
        seq BIGSERIAL PRIMARY KEY,
        doc_id TEXT NOT NULL,
        source TEXT NOT NULL,
        source_id TEXT NOT NULL,
        title TEXT,
        kind TEXT NOT NULL,
        at TEXT NOT NULL
    )
    """,
    # 3: postings without a foreign key (its check per row was a third of a write's cost there; the
    # documents' deletion deletes them)
    3: "ALTER TABLE postings DROP CONSTRAINT IF EXISTS postings_doc_id_fkey",
    # 4: outcomes and skipped, as in the SQLite schema's 4
    4: """
    CREATE TABLE IF NOT EXISTS outcomes(source TEXT PRIMARY KEY, outcome TEXT NOT NULL, error TEXT, at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS skipped(
        source TEXT NOT NULL,
        source_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY(source, source_id)
    )
    """,
    # 5: agent_runs, as in the SQLite schema's 5
    5: """
    CREATE TABLE IF NOT EXISTS agent_runs(
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        step_count INTEGER NOT NULL DEFAULT 0,
        record TEXT NOT NULL,
        steps TEXT
    );
    CREATE INDEX IF NOT EXISTS agent_runs_started ON agent_runs(started_at, id);
    CREATE INDEX IF NOT EXISTS agent_runs_agent ON agent_runs(agent, started_at, id)
    """,
    # 6: sync_history, as in the SQLite schema's 6
    6: """
    CREATE TABLE IF NOT EXISTS sync_history(
        seq BIGSERIAL PRIMARY KEY,
        source TEXT NOT NULL,
        outcome TEXT NOT NULL,
        error TEXT,
        started_at TEXT NOT NULL,
        ended_at TEXT NOT NULL,
        seconds DOUBLE PRECISION NOT NULL,
        added INTEGER,
        updated INTEGER,
        deleted INTEGER,
        unchanged INTEGER,
        skipped INTEGER,
        repeats INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX IF NOT EXISTS sync_history_source ON sync_history(source, seq)
    """,
    # 7: agent_run_steps, as in the SQLite schema's 7 (filled by ``POSTGRES_FILLS``)
    7: """
    CREATE TABLE IF NOT EXISTS agent_run_steps(
        run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        step TEXT NOT NULL,
        PRIMARY KEY(run_id, seq)
    )
    """,
    # 8: the keyword data from the shared analysis (``common/analysis.py``; ``store/postgres/postings.py``):
    # each document's language, the languages present (what queries are analysed for), and every
    # document's postings, lengths and phrase tsvector recomputed (they were PostgreSQL's ``english``
    # lexemes; filled by ``POSTGRES_FILLS``)
    8: """
    ALTER TABLE documents ADD COLUMN IF NOT EXISTS language TEXT NOT NULL DEFAULT 'und';
    CREATE TABLE IF NOT EXISTS keyword_languages(language TEXT PRIMARY KEY, documents BIGINT NOT NULL)
    """,
    # 9: the postings' field lengths as Tantivy's field norms keep them (``postings.fieldnorm``; filled by
    # ``POSTGRES_FILLS``), so BM25 in SQL ranks as the embedded index does
    9: "",
    # 10: a document's own date, as in the SQLite schema's 8 (filled by ``fill_dated``)
    10: """
    ALTER TABLE documents ADD COLUMN IF NOT EXISTS dated TEXT;
    CREATE INDEX IF NOT EXISTS documents_dated ON documents((COALESCE(dated, updated_at)))
    """,
}


def _recompute_postings(conn: Any) -> None:
    """Schema 8's fill: every document's keyword data by the shared analysis (languages detected; a
    source's configured language is applied when the backend opens: ``postings.follow_languages``)."""
    from context_harness.store.postgres.postings import recompute

    recompute(conn, {}, "schema 8 (the keyword data by the shared analysis)")


def _store_fieldnorms(conn: Any) -> None:
    """Schema 9's fill (``postings.store_fieldnorms``)."""
    from context_harness.store.postgres.postings import store_fieldnorms

    store_fieldnorms(conn)


POSTGRES_FILLS = {2: lambda conn: LinkSql("%s").fill(conn), 7: lambda conn: RunSql("%s").move_steps(conn),
                  8: _recompute_postings, 9: _store_fieldnorms, 10: lambda conn: fill_dated(conn, "%s")}

POSTGRES_META = "CREATE TABLE IF NOT EXISTS ctx_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
# Cosine distance over vectors of one dimension (an expression index: the column takes any); the
# graph's m and ef_construction come from store/postgres/vectors.py.
POSTGRES_VECTOR_INDEX = ("CREATE INDEX IF NOT EXISTS embeddings_hnsw_{dims} ON embeddings "
                         "USING hnsw ((vector::vector({dims})) vector_cosine_ops) "
                         "WITH (m = {m}, ef_construction = {ef_construction}) WHERE vector_dims(vector) = {dims}")
# The next vector set of a model switch and its HNSW index (built before the swap renames both).
POSTGRES_NEXT_VECTOR_TABLE = ("CREATE TABLE IF NOT EXISTS embeddings_next(content_hash TEXT PRIMARY KEY, "
                              "vector vector NOT NULL)")
POSTGRES_NEXT_VECTOR_INDEX = ("CREATE INDEX IF NOT EXISTS embeddings_next_hnsw_{dims} ON embeddings_next "
                              "USING hnsw ((vector::vector({dims})) vector_cosine_ops) "
                              "WITH (m = {m}, ef_construction = {ef_construction}) WHERE vector_dims(vector) = {dims}")


# -- oauth.sqlite (``store/grants.py``): OAuth clients, codes, grants and tokens, every secret hashed --

OAUTH_SCHEMA = """
CREATE TABLE IF NOT EXISTS clients (
    client_id TEXT PRIMARY KEY, secret_hash TEXT, metadata TEXT NOT NULL,
    created REAL NOT NULL, approved INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS codes (
    code_hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, family TEXT NOT NULL, scopes TEXT NOT NULL,
    redirect_uri TEXT NOT NULL, explicit INTEGER NOT NULL, challenge TEXT NOT NULL, resource TEXT NOT NULL,
    expires REAL NOT NULL, used INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS grants (
    family TEXT PRIMARY KEY, client_id TEXT NOT NULL, scopes TEXT NOT NULL, resource TEXT NOT NULL,
    created REAL NOT NULL, last_used REAL NOT NULL, revoked REAL);
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY, kind TEXT NOT NULL, family TEXT NOT NULL, client_id TEXT NOT NULL,
    scopes TEXT NOT NULL, resource TEXT NOT NULL, expires REAL NOT NULL, used INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS tokens_family ON tokens(family);
CREATE INDEX IF NOT EXISTS grants_client ON grants(client_id);
"""
