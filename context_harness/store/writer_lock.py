"""One writer at a time per workspace, across threads and processes: an OS file lock in the data folder.

Every process that writes a workspace (``ctx sync``, ``ctx embed``, a server's syncs) takes the lock
for the duration of one write and releases it after, so writers queue instead of colliding on
Tantivy's writer lock or racing a ``ctx embed rebuild``; readers never take it. The lock is
``fcntl.flock`` on a file beside the database (released by the OS if the holder dies), plus a
``threading.Lock`` for the threads of one process. It is not reentrant: take it once, outermost
(before any store's own lock), around a whole write.

The holder writes what it is doing into the lock file (pid, operation, command, start time), so a
waiting process can say once whom it waits for, and a ``StoreBusy`` after ``wait`` seconds names it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from context_harness.common.timestamps import now_iso
from context_harness.errors import StoreBusy

log = logging.getLogger(__name__)

WAIT_SECONDS = 1800.0  # how long a writer waits for another before giving up (a first embed can take minutes)
POLL_SECONDS = 0.05  # between attempts while waiting


class WriterLock:
    """An exclusive lock on ``path`` (created if missing); ``what`` names what it guards, for messages."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = Path(path)
        self.what = what
        self._thread_lock = threading.Lock()
        self._file: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        """True while this process holds the lock."""
        return self._file is not None

    def try_acquire(self, operation: str) -> bool:
        """Take the lock if no thread or process holds it; never waits."""
        if not self._thread_lock.acquire(blocking=False):
            return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Unbuffered: a note that could not be written (a full disk) is not retried at close.
            handle = open(self.path, "a+b", buffering=0)  # held until release()
        except BaseException:
            self._thread_lock.release()
            raise
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            self._thread_lock.release()
            return False
        self._file = handle
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"pid": os.getpid(), "operation": operation, "command": command_line(),
                                     "since": now_iso()}).encode())
        except OSError as exc:  # the lock holds without the note; waiters then say less
            log.debug("cannot note the writer in %s: %s", self.path, exc)
        return True

    def release(self) -> None:
        handle, self._file = self._file, None
        if handle is None:
            return
        try:
            handle.seek(0)
            handle.truncate()
        except OSError:
            pass
        finally:
            try:
                handle.close()  # closing the descriptor releases the flock
            except OSError as exc:
                log.debug("closing %s: %s", self.path, exc)
            self._thread_lock.release()

    def holder(self) -> str:
        """Who holds the lock, as its note says ("another process" when it left none)."""
        if self.held:
            return f"this process (pid {os.getpid()})"
        try:
            note = json.loads(self.path.read_text(encoding="utf-8"))
            return f"{note['operation']} (pid {note['pid']}: {note['command']}, since {note['since']})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another writer"

    def waiting(self, operation: str) -> str:
        """The one line a waiting writer logs."""
        return f"{operation}: waiting for {self.holder()} to finish writing {self.what}"

    def busy(self, operation: str, waited: float) -> StoreBusy:
        return StoreBusy(f"{operation}: gave up after {waited:.0f} s waiting for {self.holder()} to finish writing "
                         f"{self.what}; wait for it to finish (or stop it), then try again")

    def attempts(self, operation: str, wait: float = WAIT_SECONDS) -> Iterator[float]:
        """Try to take the lock until it is taken, yielding the pause before each next try (the caller
        sleeps it, blocking or async); logs once whom it waits for (a warning when another process
        holds it; taking turns within this one, e.g. a note tool and the live index, is routine: info);
        ``StoreBusy`` after ``wait`` s."""
        started = time.monotonic()
        said = False
        while not self.try_acquire(operation):
            if not said:
                log.log(logging.INFO if self.held else logging.WARNING, "%s", self.waiting(operation))
                said = True
            if time.monotonic() - started > wait:
                raise self.busy(operation, wait)
            yield POLL_SECONDS

    @contextmanager
    def hold(self, operation: str, wait: float = WAIT_SECONDS) -> Iterator[None]:
        """Hold the lock for the block, waiting up to ``wait`` seconds for it (blocking)."""
        for pause in self.attempts(operation, wait):
            time.sleep(pause)
        try:
            yield
        finally:
            self.release()


def command_line() -> str:
    """This process's command line, short: ``ctx sync``, ``context-harness --config ...``."""
    argv = [Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]]
    if argv[0] == "__main__.py":  # python -m context_harness
        argv[0] = "ctx"
    elif argv[0] == "-c":
        argv[0] = "python -c"
    text = " ".join(argv)
    return text if len(text) <= 120 else text[:117] + "..."


__all__ = ["POLL_SECONDS", "WAIT_SECONDS", "WriterLock", "command_line"]
