"""MCP over stdio: the wire on private copies of fds 0/1, everything else on stderr.

One JSON-RPC message per line (issue 39):

- a line longer than ``[server] max_body_bytes`` (1 MiB by default, the HTTP body limit) is discarded
  as it streams, so memory stays bounded by the limit, and answered with a JSON-RPC error ``-32600``
  that names the limit: with the request's ``id`` when the line's first bytes show it, else ``id``
  null. The server then reads the next line.
- a line that is not JSON is answered ``-32700`` (``id`` null); JSON that is not a JSON-RPC message,
  ``-32600`` (with its ``id`` when it has a usable one). Blank lines are skipped.
- a line nesting arrays and objects more than ``jsonlimits.MAX_DEPTH`` (64) levels deep is answered
  ``-32600`` naming the limit, before anything parses it (990 levels ended the server with a
  ``RecursionError``), with its ``id`` when that comes before the deep part.
- when stdin ends, the requests already read are finished and answered, for at most
  ``EOF_GRACE_SECONDS``; what is still running then is answered "Connection closed". Then the
  server exits.
- when the client dies and stdin does not end (another process holds the pipe: a helper the client
  started, a terminal multiplexer), ``common/lineage.py`` notices within a second or two, also through
  a launcher that stays alive such as ``uvx``: the server then ends as at the end of stdin (the
  requests already read are finished, their answers dropped, the services stopped, the workspace
  closed). ``[server] exit_with_parent = false`` turns this off.

A server that cannot serve (the config does not load, the workspace does not open) still completes
the handshake rather than exit before it, which a client shows only as "failed to connect":
``serve_problem`` answers ``initialize`` with instructions that say what is wrong and how to fix it,
lists the tools ``PROBLEM_TOOLS`` and answers every call to them with that error (an ``isError``
result the model reads out). The same line goes to stderr at once, and the process exits 1 when the
client closes it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from context_harness.common import jsonlimits
from context_harness.common.lineage import watching
from context_harness.core.face import Harness
from context_harness.errors import HarnessError, InvalidRequest, ParseError, outcome
from context_harness.server.mcp import build_server

log = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024  # read at a time; memory for a line is at most the limit plus one chunk
EOF_GRACE_SECONDS = 30.0  # after stdin ends: the longest the requests already read may still run
WRITE_GRACE_SECONDS = 5.0  # on the way out: the longest the last answers may take to reach stdout
DELIVER_SECONDS = 1.0  # the longest a line read may wait for the serving loop to take it
ID_SNIFF_BYTES = 4096  # of an oversized line, kept to find its id


async def serve_stdio(harness: Harness, agent: str | None = None, parent: int | None = None) -> None:
    """Serve ``harness`` over stdin/stdout until the client closes stdin or dies, with the core's
    services running (sync on start, reloads, warm-up). ``parent``: the process that started this one,
    as ``os.getppid()`` said at start (default: now)."""
    async with harness.serving():
        server = build_server(harness, agent)
        with _claimed_stdio() as (source, sink):
            wire = StdioWire(source, sink, harness.config.server.max_body_bytes)
            async with server.lifespan(server) as state, wire.streams() as (read_stream, write_stream):
                with watching(harness.config.server.exit_with_parent is not False, parent, wire.on_client_gone()):
                    # init_options=None: the runner asks the server at `initialize`, so the instructions are current.
                    await serve_dual_era_loop(server, read_stream, write_stream, lifespan_state=state)


PROBLEM_TOOLS = ("search", "get", "sources")  # what a server that cannot serve lists: each answers the error


async def serve_problem(error: HarnessError, parent: int | None = None) -> None:
    """Serve over stdin/stdout a server that only says ``error``: in its ``initialize`` instructions,
    and as the ``isError`` answer of every tool call (see the module docstring)."""
    import mcp.types as t
    from mcp.server.lowlevel import Server

    from context_harness import __version__
    from context_harness.server.mcp import SERVER_NAME, tool_error_result

    about = (f"context-harness cannot serve: {error.message}. Every tool answers this error until it is fixed and "
             "the server restarted; `ctx doctor` checks the setup.")

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=[t.Tool(name=name, description=about, input_schema={"type": "object"})
                                        for name in PROBLEM_TOOLS])

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        return tool_error_result(error)

    server: Server[dict[str, Any]] = Server(SERVER_NAME, version=__version__, title="Context Harness",
                                            instructions=about, on_list_tools=list_tools, on_call_tool=call_tool)
    with _claimed_stdio() as (source, sink):
        wire = StdioWire(source, sink, PROBLEM_BODY_BYTES)
        async with server.lifespan(server) as state, wire.streams() as (read_stream, write_stream):
            with watching(True, parent, wire.on_client_gone()):  # the config that could say otherwise did not load
                await serve_dual_era_loop(server, read_stream, write_stream, lifespan_state=state)


PROBLEM_BODY_BYTES = 1_048_576  # the default [server] max_body_bytes: the config that sets it did not load


# -- framing ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Oversized:
    """A line longer than the limit, already discarded: its size and its first bytes."""

    size: int
    head: bytes


class LineFramer:
    """Lines of a byte stream, each at most ``limit`` bytes; a longer one is dropped chunk by chunk as
    it arrives and reported as ``Oversized``. ``read`` returns the next chunk, ``b""`` at the end."""

    def __init__(self, read: Callable[[], Awaitable[bytes]], limit: int) -> None:
        self.read = read
        self.limit = limit
        self.buffer = bytearray()
        self.scanned = 0  # bytes of the buffer known to hold no newline
        self.skipped: int | None = None  # bytes of an oversized line dropped so far
        self.head = b""
        self.ended = False

    async def next_line(self) -> bytes | Oversized | None:
        """The next line without its newline, ``Oversized``, or None once the stream has ended."""
        while True:
            end = self.buffer.find(b"\n", self.scanned)
            if end >= 0:
                return self._take(end, end + 1)
            if self.skipped is not None:
                self.skipped += len(self.buffer)
                self.buffer.clear()
            elif len(self.buffer) > self.limit:
                self.head, self.skipped = bytes(self.buffer[:ID_SNIFF_BYTES]), len(self.buffer)
                self.buffer.clear()
            self.scanned = len(self.buffer)
            if self.ended:
                if self.skipped is None and not self.buffer:
                    return None
                return self._take(len(self.buffer), len(self.buffer))  # a last line without its newline
            chunk = await self.read()
            if chunk:
                self.buffer += chunk
            else:
                self.ended = True

    def _take(self, end: int, consumed: int) -> bytes | Oversized:
        line = bytes(self.buffer[:end])
        del self.buffer[:consumed]
        self.scanned = 0
        if self.skipped is not None:
            size, self.skipped = self.skipped + len(line), None
            return Oversized(size, self.head)
        if len(line) > self.limit:
            return Oversized(len(line), line[:ID_SNIFF_BYTES])
        return line


def leading_id(head: bytes) -> RequestId | None:
    """The top-level ``"id"`` of a JSON object that starts with ``head``, when it comes before the
    first value ``head`` cuts short; None otherwise (nested ``"id"`` keys are skipped, not read)."""
    text = head.decode("utf-8", errors="ignore")
    deep = jsonlimits.deeper_than(text, jsonlimits.MAX_DEPTH)
    if deep is not None:  # only the values before the deep part are read (raw_decode would recurse into it)
        text = text[:deep]
    decoder = json.JSONDecoder()
    pos = _blank(text, 0)
    if not text.startswith("{", pos):
        return None
    pos += 1
    try:
        while True:
            key, pos = decoder.raw_decode(text, _blank(text, pos))
            pos = _blank(text, pos)
            if not isinstance(key, str) or not text.startswith(":", pos):
                return None
            value, pos = decoder.raw_decode(text, _blank(text, pos + 1))
            if key == "id":
                return as_request_id(value)
            pos = _blank(text, pos)
            if not text.startswith(",", pos):
                return None
            pos += 1
    except ValueError:  # a value cut short (or not JSON): the id is not in these bytes
        return None


def _blank(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


@dataclass(frozen=True)
class Refusal:
    """The error that answers a line (it never reaches the serving loop)."""

    answer: SessionMessage


def refusal(error: HarnessError, request_id: RequestId | None = None) -> Refusal:
    """A JSON-RPC error message for ``error``, with the code of its row in the error table."""
    return Refusal(SessionMessage(JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=outcome(error).jsonrpc_code, message=error.message))))


def parse_line(line: bytes) -> SessionMessage | Refusal | None:
    """A line as a JSON-RPC message, or the error that answers it; None for a line to drop (blank, or
    a malformed notification or response, which JSON-RPC never answers)."""
    text = line.decode("utf-8", errors="replace")
    if not text.strip():
        return None
    if jsonlimits.deeper_than(line, jsonlimits.MAX_DEPTH) is not None:  # json.loads would recurse past it
        return refusal(InvalidRequest(jsonlimits.explain("the message")), leading_id(line[:ID_SNIFF_BYTES]))
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValidationError:
        pass
    try:
        value = json.loads(text)
    except ValueError:
        return refusal(ParseError("the message is not valid JSON: send one JSON-RPC message per line"))
    if isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value):
        log.warning("dropped a malformed JSON-RPC response from the client")
        return None
    if isinstance(value, dict) and "method" in value and "id" not in value:
        log.warning("dropped a malformed JSON-RPC notification from the client")
        return None
    request_id = as_request_id(value.get("id")) if isinstance(value, dict) else None
    return refusal(InvalidRequest("not a valid JSON-RPC 2.0 request: send an object with \"jsonrpc\": \"2.0\", a "
                                  "string or integer \"id\", a string \"method\" and, if any, object \"params\""),
                   request_id)


# -- the wire ---------------------------------------------------------------------------------------

class StdioWire:
    """The read and write streams the SDK's serving loop runs on, over a chunk ``source`` and a text
    ``sink``; see the module docstring for what it answers itself and how it ends."""

    def __init__(self, source: Any, sink: Any, limit: int, eof_grace: float = EOF_GRACE_SECONDS) -> None:
        self.framer = LineFramer(source.read, limit)
        self.sink = sink
        self.limit = limit
        self.eof_grace = eof_grace
        self.pending: set[RequestId] = set()  # requests read and not yet answered
        self.settled = anyio.Event()  # set while nothing is pending
        self.settled.set()
        self.sink_open = True
        self.reading = anyio.CancelScope()  # around reading stdin; cancelled when the client is gone

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                                                   MemoryObjectSendStream[SessionMessage]]]:
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
        reading, writing = anyio.CancelScope(), anyio.CancelScope()

        async def read() -> None:
            with reading:
                await self._read_all(read_send, write_send.clone())

        async def write() -> None:
            with writing:
                await self._write_all(write_receive)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(write)
            try:
                yield read_receive, write_send
            finally:
                reading.cancel()  # the serving loop is over: no more messages for it
                write_send.close()
                writing.deadline = anyio.current_time() + WRITE_GRACE_SECONDS

    async def _read_all(self, deliver: MemoryObjectSendStream[SessionMessage | Exception],
                        answer: MemoryObjectSendStream[SessionMessage]) -> None:
        async with deliver, answer:
            try:
                with self.reading:
                    await self._relay(deliver, answer)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the serving loop is over
                return
            if self.pending:
                log.info("stdin closed: finishing %d request(s) already read (at most %.0f s)", len(self.pending),
                         self.eof_grace)
                with anyio.move_on_after(self.eof_grace):
                    await self.settled.wait()
                if self.pending:
                    log.warning("stdin closed: %d request(s) still running after %.0f s are cut short",
                                len(self.pending), self.eof_grace)

    async def _relay(self, deliver: MemoryObjectSendStream[SessionMessage | Exception],
                     answer: MemoryObjectSendStream[SessionMessage]) -> None:
        """Every line until stdin ends: to the serving loop, or answered here."""
        while (line := await self.framer.next_line()) is not None:
            if isinstance(line, Oversized):
                log.warning("refused a stdio message of %d bytes ([server] max_body_bytes = %d)", line.size,
                            self.limit)
                await answer.send(refusal(InvalidRequest(
                    f"message of {line.size} bytes is larger than the limit of {self.limit} bytes ([server] "
                    "max_body_bytes): send a smaller one, or raise the limit"), leading_id(line.head)).answer)
                continue
            message = parse_line(line)
            if isinstance(message, Refusal):
                await answer.send(message.answer)
            elif message is not None:
                self._note_inbound(message.message)
                # A line read is delivered whole, even when the client goes while the loop takes it (the
                # cancel of ``reading``): a request noted pending but never delivered would hold the exit
                # for ``eof_grace`` and never run. The loop takes messages as they come: the bound is a guard.
                with anyio.CancelScope(shield=True), anyio.move_on_after(DELIVER_SECONDS):
                    await deliver.send(message)

    def client_gone(self) -> None:
        """The client died without closing stdin: end as at the end of stdin, writing nothing more."""
        self.sink_open = False
        self.reading.cancel()

    def on_client_gone(self) -> Callable[[str], None]:
        """``client_gone`` as another thread calls it (a ``ParentWatch``'s ``on_gone``)."""
        token = anyio.lowlevel.current_token()

        def gone(reason: str) -> None:
            try:
                anyio.from_thread.run_sync(self.client_gone, token=token)
            except RuntimeError:  # the event loop has ended meanwhile: so has serving
                pass

        return gone

    def _note_inbound(self, message: Any) -> None:
        if isinstance(message, JSONRPCRequest):
            if self.settled.is_set():
                self.settled = anyio.Event()
            self.pending.add(coerce_request_id(message.id))
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = as_request_id((message.params or {}).get("requestId"))
            if cancelled is not None:  # a cancelled request is never answered
                self._answered(cancelled)

    def _answered(self, request_id: RequestId) -> None:
        self.pending.discard(coerce_request_id(request_id))
        if not self.pending:
            self.settled.set()

    async def _write_all(self, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with messages:
            async for item in messages:
                message = item.message
                if self.sink_open:
                    try:
                        await self.sink.write(message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")
                    except OSError as exc:  # the client closed our stdout: keep draining, write nothing
                        log.info("stdout closed (%s): answers are dropped from now on", exc.strerror or exc)
                        self.sink_open = False
                if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
                    self._answered(message.id)


# -- the process's stdin and stdout -----------------------------------------------------------------

class _PipeSource:
    """Chunks from a pipe or socket, read on the event loop (no worker-thread hop per message)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader: Any = None

    async def read(self) -> bytes:
        if self.reader is None:
            import asyncio

            loop = asyncio.get_running_loop()
            self.reader = asyncio.StreamReader(limit=CHUNK_BYTES)
            pipe = os.fdopen(self.fd, "rb", buffering=0, closefd=False)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.reader), pipe)
        try:
            data: bytes = await self.reader.read(CHUNK_BYTES)
        except OSError as exc:
            log.warning("reading stdin failed (%s): treated as its end", exc.strerror or exc)
            return b""
        return data


class _FileSource:
    """Chunks from a file or terminal, read in a worker thread (they cannot be watched by the loop)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def read(self) -> bytes:
        try:
            return await anyio.to_thread.run_sync(os.read, self.fd, CHUNK_BYTES, abandon_on_cancel=True)
        except OSError as exc:
            log.warning("reading stdin failed (%s): treated as its end", exc.strerror or exc)
            return b""


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


@contextmanager
def _claimed_stdio() -> Iterator[tuple[Any, Any]]:
    """Serve the wire from private duplicates of fds 0/1 and point 0 at /dev/null and 1 at stderr,
    so stray output (a library's print, a child process) can never corrupt the JSON-RPC stream.

    A pipe or socket is read on the event loop; anything else (a file, a terminal) in a thread.
    """
    sys.stdout.flush()
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)
    except OSError:  # no stdin or stdout to claim: serve what there is (reads end at once)
        yield _FileSource(0), _PipeWriter(1)
        return
    try:
        mode = os.fstat(wire_in).st_mode
        piped = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
    except OSError:
        piped = False
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    try:
        yield (_PipeSource(wire_in) if piped else _FileSource(wire_in)), _PipeWriter(wire_out)
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (saved_in, saved_out, wire_out):
            os.close(fd)
        # wire_in stays open: the event loop's pipe transport owns it until the loop closes, and a
        # worker thread may still be blocked reading it (closed, its number could be reused under it).


__all__ = ["EOF_GRACE_SECONDS", "PROBLEM_TOOLS", "LineFramer", "Oversized", "Refusal", "StdioWire", "leading_id",
           "parse_line", "serve_problem", "serve_stdio"]
