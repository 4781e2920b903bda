"""The connection pools to the PostgreSQL of ``[db] url`` (psycopg 3 + psycopg_pool) and its schema.

Two pools: ``pool_size`` connections for searches and writes, and ``POINT_POOL`` more for point reads
(``get`` of one document and its chunks), so reading a document never queues behind searches. A read
that finds no free connection within ``pool_wait`` seconds answers ``busy`` (retry) instead of
letting latency grow without bound; writes wait longer (``WRITE_WAIT``).
Connections run in autocommit; ``transaction()`` makes one transaction of a block. pgvector's types
are registered on every connection.

With ``[db] read_url`` (a hot standby, ``standby.py``) reads are of two kinds:

- ``read(work)``: what serves a request and may lag a little: searches (the SQL keyword ranking, the
  vector index), ``get`` (a document and its chunks), listings, links and ``changes``. They go to
  the standby, and to the primary while it is down or behind this process's own latest commit;
- ``connection()``, ``transaction()``: the primary, always. Writes, the writer locks (``lock.py``),
  and the writer-path reads, which must see the latest commit: the change log and the documents
  the keyword follower indexes (``follower.py``), the fingerprints a sync compares, the embedder
  identity, the chunks awaiting vectors and the embedded set hybrid search caches, counts and
  checks. A note tool's read-back is a ``get`` right after its own sync's commit, so
  read-your-writes sends it to the primary too.

The URL is a secret (it may hold a password): messages name the server without its credentials,
and the config's redaction hides the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from context_harness.common.redaction import redact
from context_harness.errors import Busy, ConfigError, StorageFault
from context_harness.store.postgres.standby import Standby
from context_harness.store.schema import (
    POSTGRES_FILLS,
    POSTGRES_META,
    POSTGRES_MIGRATIONS,
    POSTGRES_SCHEMA_VERSION,
    StoreVersionError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

MIGRATION_LOCK = 0x6374780001  # advisory lock key: one process migrates at a time
CONNECT_SECONDS = 15.0
POINT_POOL = 2  # connections for point reads
WRITE_WAIT = 60.0  # seconds a write waits for a connection (a sync must not give up under read load)


def describe_url(url: str) -> str:
    """The server and database of ``url``, without user or password (for messages and ``stats``)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(url)
    except Exception:
        return "postgresql (unreadable [db] url)"
    host = params.get("host") or "localhost"
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{host}{port}/{params.get('dbname') or ''}"


class Database:
    def __init__(self, url: str, pool_size: int = 8, pool_wait: float = 2.0, read_url: str | None = None) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            from context_harness.config.install import install_hint

            raise ConfigError('[db] backend = "postgres" needs the postgres extra: '
                              f"{install_hint('postgres')}") from None
        self.where = describe_url(url)
        try:  # the schema first, on a connection of its own: the pool's connections need the vector type
            with psycopg.connect(url, autocommit=True, connect_timeout=int(CONNECT_SECONDS)) as conn:
                self._migrate(conn)
        except psycopg.OperationalError as exc:
            raise self._unreachable(exc) from None
        self.url, self.pool_size, self.pool_wait = url, pool_size, pool_wait
        self.pool = ConnectionPool(url, min_size=1, max_size=pool_size, kwargs={"autocommit": True},
                                   configure=_register_vector, open=False, name="context-harness")
        self.point_pool = ConnectionPool(url, min_size=1, max_size=POINT_POOL, kwargs={"autocommit": True},
                                         configure=_register_vector, open=False, name="context-harness-point")
        self.standby: Standby | None = None
        try:
            self.pool.open(wait=True, timeout=CONNECT_SECONDS)
            self.point_pool.open(wait=True, timeout=CONNECT_SECONDS)
        except Exception as exc:
            self.close()
            raise self._unreachable(exc) from None
        if read_url:  # opened at the first read; a standby down then is read around, not an error
            self.standby = Standby(read_url, describe_url(read_url), (pool_size, POINT_POOL), pool_wait,
                                   _register_vector)

    def _unreachable(self, exc: Exception) -> ConfigError:
        reason = redact(str(exc)).strip() or type(exc).__name__
        return ConfigError(f"cannot connect to PostgreSQL at {self.where} ([db] url): {reason}; check the URL, "
                           "that the server runs, and its credentials")

    def close(self) -> None:
        if self.standby is not None:
            self.standby.close()
        self.pool.close()
        self.point_pool.close()

    def read(self, work: Callable[[Any], T], point: bool = False) -> T:
        """``work(connection)`` for a read that serves a request: on the hot standby when there is
        one and it can answer, else on the primary (``point``: the point-read pools)."""
        if self.standby is not None:
            done, value = self.standby.run(work, point)
            if done:
                return value  # type: ignore[return-value]
        with self.connection(point) as conn:
            return work(conn)

    @contextmanager
    def connection(self, point: bool = False) -> Iterator[Any]:
        """A connection for reads (``point``: from the point-read pool); ``Busy`` when none is free
        within ``pool_wait`` seconds."""
        from psycopg_pool import PoolTimeout

        pool = self.point_pool if point else self.pool
        try:
            with pool.connection(timeout=self.pool_wait) as conn:
                yield conn
        except PoolTimeout:
            size = POINT_POOL if point else self.pool_size
            raise Busy(f"PostgreSQL at {self.where} is busy: all {size} connections of this replica stayed in use "
                       f"for {self.pool_wait:g} s; retry, or raise [db] pool_size / pool_wait") from None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One transaction on the primary (after it, with a standby, reads wait for its replay)."""
        with self.pool.connection(timeout=WRITE_WAIT) as conn:
            with conn.transaction():
                yield conn
            if self.standby is not None:
                self.standby.wrote(str(conn.execute("SELECT pg_current_wal_flush_lsn()").fetchone()[0]))

    def _migrate(self, conn: Any) -> None:
        """Bring the schema up to ``POSTGRES_SCHEMA_VERSION`` (one process at a time, all or nothing)."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute(POSTGRES_META)
            row = conn.execute("SELECT value FROM ctx_meta WHERE key='schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > POSTGRES_SCHEMA_VERSION:
                raise StoreVersionError(
                    f"the database at {self.where} was written by a newer context-harness (schema {version}; "
                    f"this version understands up to {POSTGRES_SCHEMA_VERSION}); upgrade context-harness")
            for target in range(version + 1, POSTGRES_SCHEMA_VERSION + 1):
                try:
                    for statement in POSTGRES_MIGRATIONS[target].split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    if target in POSTGRES_FILLS:
                        POSTGRES_FILLS[target](conn)
                except Exception as exc:
                    raise StorageFault(f"cannot set up the tables in {self.where}: {redact(str(exc)).strip()}; "
                                       "the [db] url's user needs CREATE on the database (and the vector "
                                       "extension installed)") from None
                conn.execute("INSERT INTO ctx_meta(key, value) VALUES('schema_version', %s) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(target),))

    def follow_languages(self, languages: Mapping[str, str]) -> None:
        """Recompute the keyword data of the sources whose configured language changed
        (``postings.follow_languages``), one process at a time (the schema's lock); when none did (a
        read), no transaction is made (so reads are not sent to the primary after it)."""
        from context_harness.store.postgres.postings import follow_languages, recorded_languages

        with self.connection() as conn:
            if recorded_languages(conn) == dict(languages):
                return
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            follow_languages(conn, languages, self.where)

    @property
    def schema_version(self) -> int:
        with self.connection() as conn:
            row = conn.execute("SELECT value FROM ctx_meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0


def _register_vector(conn: Any) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)
