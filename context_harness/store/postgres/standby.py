"""Reads from a hot standby (``[db] read_url``): a streaming replica of the primary, read-only.

``Database.read`` hands a read here first. The standby answers it unless:

- it is down: a connection broke or could not be made. The read is answered by the primary, a
  warning is logged once, and the standby is tried again after ``RETRY_SECONDS`` (meanwhile every
  read goes to the primary; when it answers again, an info line says so);
- this process wrote since its last read there and the standby has not replayed that commit yet
  (``pg_last_wal_replay_lsn``): read-your-writes, so a note tool reading back what it just wrote,
  or a search right after this replica's sync, sees it. Other replicas' commits show within the
  standby's replay lag;
- the statement failed on the standby (a recovery conflict, say): the primary answers it again.

All its connections busy for ``pool_wait`` seconds is ``Busy``, as on the primary.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from context_harness.common.redaction import redact
from context_harness.errors import Busy

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY_SECONDS = 5.0  # how long reads stay on the primary after the standby failed
CONNECT_SECONDS = 3  # a standby that does not accept a connection by then is down
_CAUGHT_UP = "SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, true)"  # NULL: not in recovery


class Standby:
    """The standby's two pools (searches and point reads), opened lazily and again after a failure."""

    def __init__(self, url: str, where: str, sizes: tuple[int, int], pool_wait: float,
                 configure: Callable[[Any], None]) -> None:
        self.url, self.where, self.sizes, self.pool_wait = url, where, sizes, pool_wait
        self._configure = configure
        self._pools: tuple[Any, Any] | None = None
        self._retry_at = 0.0
        self._opening = False
        self._down = False
        self._written: str | None = None  # the WAL position of this process's latest commit, until replayed
        self._lock = threading.Lock()

    def wrote(self, lsn: str) -> None:
        """This process committed up to ``lsn`` on the primary: read from the primary until replayed."""
        self._written = lsn

    def run(self, work: Callable[[Any], T], point: bool) -> tuple[bool, T | None]:
        """``(True, work(conn))`` on the standby, or ``(False, None)`` when the primary must answer."""
        import psycopg
        from psycopg_pool import PoolTimeout

        pools = self._ready()
        if pools is None:
            return False, None
        pool = pools[1 if point else 0]
        conn = None
        try:
            with pool.connection(timeout=self.pool_wait) as conn:
                written = self._written
                if written is not None:
                    if not conn.execute(_CAUGHT_UP, (written,)).fetchone()[0]:
                        return False, None
                    if self._written == written:
                        self._written = None
                return True, work(conn)
        except PoolTimeout:
            if pool.get_stats().get("pool_size", 0) == 0:  # not one connection could be made
                self._lost("no connection could be made", pools)
                return False, None
            size = self.sizes[1 if point else 0]
            raise Busy(f"the hot standby at {self.where} ([db] read_url) is busy: all {size} connections of this "
                       f"replica stayed in use for {self.pool_wait:g} s; retry, or raise [db] pool_size / "
                       "pool_wait") from None
        except psycopg.Error as exc:
            if conn is None or conn.broken or conn.closed:
                self._lost(redact(str(exc)).strip() or type(exc).__name__, pools)
            return False, None

    def close(self) -> None:
        with self._lock:
            pools, self._pools = self._pools, None
        _close(pools)

    def _ready(self) -> tuple[Any, Any] | None:
        """The open pools; after the back-off, one thread tries to open them (the others read from
        the primary meanwhile)."""
        with self._lock:
            if self._pools is not None:
                return self._pools
            if self._opening or time.monotonic() < self._retry_at:
                return None
            self._opening = True
        try:
            pools = self._open()
        except Exception as exc:
            with self._lock:
                self._opening = False
            self._lost(redact(str(exc)).strip() or type(exc).__name__, None)
            return None
        with self._lock:
            self._opening, self._pools = False, pools
            came_back, self._down = self._down, False
        if came_back:
            log.info("the hot standby at %s ([db] read_url) answers again: reads go to it", self.where)
        return pools

    def _open(self) -> tuple[Any, Any]:
        from psycopg_pool import ConnectionPool

        opened = []
        try:
            for name, size in zip(("context-harness-standby", "context-harness-standby-point"), self.sizes,
                                  strict=True):
                pool = ConnectionPool(self.url, min_size=1, max_size=size, name=name, open=False,
                                      kwargs={"autocommit": True, "connect_timeout": CONNECT_SECONDS},
                                      configure=self._configure)
                opened.append(pool)
                pool.open(wait=True, timeout=CONNECT_SECONDS)
        except BaseException:
            _close(tuple(opened))
            raise
        return opened[0], opened[1]

    def _lost(self, reason: str, pools: tuple[Any, Any] | None) -> None:
        with self._lock:
            if pools is not None and self._pools is not pools:
                return  # another thread saw this failure first
            self._pools = None
            self._retry_at = time.monotonic() + RETRY_SECONDS
            first, self._down = not self._down, True
        if first:
            log.warning("the hot standby at %s ([db] read_url) cannot be read (%s): reads go to the primary, "
                        "and the standby is tried again every %g s", self.where, reason, RETRY_SECONDS)
        _close(pools)


def _close(pools: tuple[Any, ...] | None) -> None:
    for pool in pools or ():
        try:
            pool.close(timeout=1.0)
        except Exception:  # a pool whose server is gone may fail to close cleanly; it is dropped anyway
            pass
