"""The pipe between the host and a Lua worker process: an 8-byte little-endian length, then a pickle.

The host reads what a worker sends with ``restricted_loads``: plain data only (no classes, no
functions), so a worker that a script somehow subverted still cannot make the host run code.
Reads on the host side take a deadline (``Reader.message(until)``) so a worker stuck in a long C
call never blocks the caller past it.
"""

from __future__ import annotations

import io
import os
import pickle
import select
import time
from typing import IO, Any

from context_harness.common import pipes
from context_harness.common.pipes import HEADER, frame, send

MAX_MESSAGE = 1 << 31


class Expired(Exception):
    """The deadline passed before a whole message arrived."""


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a Lua worker sent a reference to {module}.{name}; only data is accepted")


def restricted_loads(payload: bytes) -> Any:
    return RestrictedUnpickler(io.BytesIO(payload)).load()


def receive(stream: IO[bytes]) -> Any:
    """Blocking read of one message (the worker side: it trusts its host)."""
    return pipes.receive(stream, "the host")


class Reader:
    """Host side: reads whole messages from a worker's stdout file descriptor with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def _fill(self, size: int, until: float) -> None:
        while len(self.buffer) < size:
            left = until - time.monotonic()
            if left <= 0:
                raise Expired()
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise Expired()
            chunk = os.read(self.fd, max(65536, size - len(self.buffer)))
            if not chunk:
                raise EOFError("the Lua worker closed its pipe")
            self.buffer += chunk

    def message(self, until: float) -> Any:
        self._fill(HEADER, until)
        size = int.from_bytes(self.buffer[:HEADER], "little")
        if size > MAX_MESSAGE:
            raise EOFError("the Lua worker sent an oversized message")
        self._fill(HEADER + size, until)
        payload = bytes(self.buffer[HEADER:HEADER + size])
        del self.buffer[:HEADER + size]
        return restricted_loads(payload)


__all__ = ["HEADER", "Expired", "Reader", "frame", "receive", "restricted_loads", "send"]
