"""Connection limits under uvicorn: a header-read timeout and a cap on open connections.

uvicorn (h11) closes an idle keep-alive connection only after a response, so a client that connects
and sends nothing, or trickles its headers one byte at a time (slowloris), holds a connection and a
file descriptor for ever. ``GuardedH11Protocol`` gives every request ``[server] header_timeout``
seconds to deliver its request line and headers, counted from the connection, or on a kept-alive
connection from the request's first byte (idle kept-alive connections are uvicorn's
``timeout_keep_alive``'s), and answers **503** and closes any connection past ``[server] max_connections``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

BUSY_BODY = (b'{"error": {"code": "busy", "message": "too many open connections ([server] max_connections); '
             b'retry in a moment"}}\n')
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
        b"content-length: %d\r\n\r\n" % len(BUSY_BODY)) + BUSY_BODY


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a connection cap (see the module docstring).
    ``header_timeout`` and ``max_connections`` are set on a subclass by ``protocol_class``."""

    header_timeout: float = 10.0
    max_connections: int = 1000

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            log.warning("refused a connection: %d open ([server] max_connections)", self.max_connections)
            transport.write(BUSY)
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
            self._disarm()
        elif self.header_deadline is None and not self.transport.is_closing():
            self._arm()  # the first bytes of a request on a kept-alive connection: its headers' deadline

    def _arm(self) -> None:
        self._disarm()
        self.header_deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
            self.header_deadline = None

    def _headers_too_slow(self) -> None:
        self.header_deadline = None
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            log.info("closed a connection that sent no complete request headers in %s s ([server] header_timeout)",
                     self.header_timeout)
            self.transport.close()


def protocol_class(header_timeout: float, max_connections: int) -> type[GuardedH11Protocol]:
    """A ``GuardedH11Protocol`` with these limits, for ``uvicorn.Config(http=...)``."""
    return type("ConfiguredH11Protocol", (GuardedH11Protocol,),
                {"header_timeout": header_timeout, "max_connections": max_connections})


__all__ = ["GuardedH11Protocol", "protocol_class"]
