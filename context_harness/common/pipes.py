"""Messages between a process and its helper processes (chunking, Lua): an 8-byte little-endian
length, then a pickle. Blocking reads; callers that need a deadline read the frames themselves."""

from __future__ import annotations

import pickle
from typing import IO, Any

HEADER = 8


def frame(obj: object) -> bytes:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return len(payload).to_bytes(HEADER, "little") + payload


def send(stream: IO[bytes], obj: object) -> None:
    stream.write(frame(obj))
    stream.flush()


def receive(stream: IO[bytes], peer: str) -> Any:
    """One message from ``stream``; ``EOFError`` naming ``peer`` when it closed the pipe."""
    header = stream.read(HEADER)
    if len(header) < HEADER:
        raise EOFError(f"{peer} closed the pipe")
    size = int.from_bytes(header, "little")
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError(f"{peer} closed the pipe mid-message")
    return pickle.loads(payload)


__all__ = ["HEADER", "frame", "receive", "send"]
