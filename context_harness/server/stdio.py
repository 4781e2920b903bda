"""MCP over stdio: the wire on private copies of fds 0/1, everything else on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp.server.runner import serve_dual_era_loop
from mcp.server.stdio import stdio_server

from context_harness.harness import Harness
from context_harness.server.mcp import build_server


async def serve_stdio(harness: Harness, agent: str | None = None) -> None:
    """Serve ``harness`` over stdin/stdout until the client closes stdin, with the core's services
    running (sync on start, reloads, warm-up)."""
    async with harness.serving():
        server = build_server(harness, agent)
        with _claimed_stdio() as (stdin, stdout):
            async with server.lifespan(server) as state, stdio_server(stdin, stdout) as (read_stream, write_stream):
                # init_options=None: the runner asks the server at `initialize`, so the instructions are current.
                await serve_dual_era_loop(server, read_stream, write_stream, lifespan_state=state)


class _PipeLines:
    """Async lines from a pipe read on the event loop (no worker-thread hop per message)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader: Any = None

    def __aiter__(self) -> _PipeLines:
        return self

    async def __anext__(self) -> str:
        if self.reader is None:
            import asyncio

            loop = asyncio.get_running_loop()
            self.reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
            pipe = os.fdopen(self.fd, "rb", buffering=0, closefd=False)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.reader), pipe)
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _PipeWriter:
    """Writes whole messages to a private stdout descriptor (small, so a direct write is cheapest)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self.fd, data):]
            except BlockingIOError:
                await anyio.sleep(0.001)

    async def flush(self) -> None:
        return None


@contextmanager
def _claimed_stdio() -> Iterator[tuple[Any, Any]]:
    """Serve the wire from private duplicates of fds 0/1 and point 0 at /dev/null and 1 at stderr,
    so stray output (a library's print, a child process) can never corrupt the JSON-RPC stream.

    Falls back to the SDK's own (thread-based) stdio handling when stdin is not a pipe or socket.
    """
    import stat

    try:
        mode = os.fstat(0).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            raise OSError("stdin is not a pipe")
        sys.stdout.flush()
        wire_in, wire_out = os.dup(0), os.dup(1)
    except (OSError, ValueError):
        yield None, None
        return
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    try:
        yield _PipeLines(wire_in), _PipeWriter(wire_out)
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (saved_in, saved_out, wire_out):
            os.close(fd)
        # wire_in stays open: the event loop's pipe transport owns it until the loop closes.


__all__ = ["serve_stdio"]
