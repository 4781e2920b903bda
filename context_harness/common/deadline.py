"""A total time limit on network exchanges (the S3 connector, the HTTP reranker, Lua's ``http.*``).

A socket timeout bounds each read, not the exchange: a server that drips a byte just inside it holds
the caller for as long as it likes. A ``Deadline`` shuts down the sockets handed to ``watch`` when its
time is up, so the blocked read returns at once and the caller sees ``expired``. Its timer is one
thread, started on entry and stopped and joined on exit: nothing outlives the ``with`` block.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType


class Deadline:
    """``with Deadline(seconds) as deadline:``; ``connect_timeout(cap)`` for a connection's timeout,
    ``watch(sock)`` once it is connected."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.until = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._fired = False
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Deadline:
        self._timer = threading.Timer(self.remaining(), self._expire)
        self._timer.name = "ctx-deadline"
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()
            self._timer = None
        with self._lock:
            self._sockets.clear()

    def remaining(self) -> float:
        return max(0.0, self.until - time.monotonic())

    @property
    def expired(self) -> bool:
        return self._fired or time.monotonic() >= self.until

    def connect_timeout(self, cap: float) -> float:
        """The timeout for connecting now: ``cap`` seconds at most, and never past the deadline."""
        return max(0.001, min(cap, self.remaining()))

    def watch(self, sock: socket.socket | None) -> None:
        """Shut ``sock`` down when the time is up (at once when it already is)."""
        if sock is None:
            return
        with self._lock:
            if not self._fired:
                self._sockets.append(sock)
                return
        _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self._fired = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed, or never connected
        pass
