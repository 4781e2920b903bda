"""The writer locks of a PostgreSQL knowledge base: session advisory locks, so exactly one replica
(of any number, on any host) syncs or embeds at a time. Same interface as the embedded backend's
file locks (``store/writer_lock.py``): waiters log once whom they wait for, give up with
``StoreBusy``. The holder's connection names it (``application_name``), which is how a waiting
replica tells whom it waits for; PostgreSQL frees the lock when that connection ends.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from context_harness.store.postgres.database import Database
from context_harness.store.writer_lock import WriterLock, command_line

INDEX_LOCK = 0x637478_0002  # syncs: documents and keyword data
EMBED_LOCK = 0x637478_0003  # embedding runs
NAME_BYTES = 63  # the longest application_name PostgreSQL keeps (NAMEDATALEN - 1)


class AdvisoryLock(WriterLock):
    def __init__(self, db: Database, key: int, what: str) -> None:
        self.db = db
        self.key = key
        self.what = what
        self._thread_lock = threading.Lock()
        self._conn: Any = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    def try_acquire(self, operation: str) -> bool:
        if not self._thread_lock.acquire(blocking=False):
            return False
        try:
            conn = self.db.pool.getconn()
        except BaseException:
            self._thread_lock.release()
            raise
        try:
            taken = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0]
            if taken:
                conn.execute("SELECT set_config('application_name', %s, false)", (holder_note(operation),))
        except BaseException:
            self.db.pool.putconn(conn)
            self._thread_lock.release()
            raise
        if not taken:
            self.db.pool.putconn(conn)
            self._thread_lock.release()
            return False
        self._conn = conn
        return True

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
            conn.execute("SELECT set_config('application_name', 'context-harness', false)")
        except Exception:  # a lost connection has lost its lock too: the pool drops it
            pass
        finally:
            self.db.pool.putconn(conn)
            self._thread_lock.release()

    def holder(self) -> str:
        if self.held:
            return f"this process (pid {os.getpid()})"
        try:
            with self.db.connection() as conn:
                row = conn.execute(
                    "SELECT a.application_name, a.client_addr FROM pg_locks l JOIN pg_stat_activity a "
                    "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s "
                    "AND l.objid = %s AND l.objsubid = 1", (self.key >> 32, self.key & 0xFFFFFFFF)).fetchone()
        except Exception:
            return "another replica"
        if row is None:
            return "another replica"
        where = f" on {row[1]}" if row[1] else ""
        return f"{row[0] or 'another replica'}{where}"


def holder_note(operation: str) -> str:
    """What the holder's connection is named: ``ctx sync all (pid 4242: ctx serve --http ...)``, cut
    to fit ``application_name`` (63 bytes of ASCII; PostgreSQL would cut a longer one mid-way, closing
    bracket and all): the command line is shortened first, then the operation, never the pid."""
    def ascii_(text: str) -> str:
        return text.encode("ascii", "replace").decode()

    pid, command = f"(pid {os.getpid()}", ascii_(command_line())
    operation = ascii_(operation)
    longest = NAME_BYTES - len(f"ctx  {pid}: ...)")  # the room for the operation with 3 characters of command
    if len(operation) > longest:
        operation = operation[: longest - 3] + "..."
    room = NAME_BYTES - len(f"ctx {operation} {pid}: )")
    if len(command) > room:
        command = command[: room - 3] + "..."
    return f"ctx {operation} {pid}: {command})"


def advisory_locks(db: Database) -> tuple[AdvisoryLock, AdvisoryLock]:
    return (AdvisoryLock(db, INDEX_LOCK, "the documents and keyword data"),
            AdvisoryLock(db, EMBED_LOCK, "the embeddings"))
