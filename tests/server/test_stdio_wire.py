"""The stdio wire (issue 39): lines over the limit are dropped as they stream and answered, malformed
lines are answered, and at the end of stdin the requests already read finish (within the grace).

The framing is driven chunk by chunk; the wire runs under the SDK's real serving loop with a
low-level server whose tool sleeps as long as it is asked. The process-level checks (a 100 MB line
into ``ctx serve``, a request followed at once by EOF) are in ``tests/e2e/test_stdio_limits.py``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import anyio
import mcp.types as t
import pytest
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCRequest

from context_harness.server.stdio import LineFramer, Oversized, Refusal, StdioWire, leading_id, parse_line

pytestmark = pytest.mark.anyio

LIMIT = 1024


class Chunks:
    """A byte stream given in fixed-size chunks; records the framer's largest buffer."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0
        self.framer: LineFramer | None = None
        self.largest = 0

    async def read(self) -> bytes:
        if self.framer is not None:
            self.largest = max(self.largest, len(self.framer.buffer))
        self.at += self.size
        return self.data[self.at - self.size:self.at]


class Lines:
    """What the wire writes, one JSON message per line."""

    def __init__(self) -> None:
        self.text = ""

    async def write(self, text: str) -> None:
        self.text += text

    def messages(self) -> list[dict[str, Any]]:
        assert self.text.endswith("\n")
        return [json.loads(line) for line in self.text.splitlines()]


async def frame(data: bytes, chunk: int) -> tuple[list[bytes | Oversized], int]:
    source = Chunks(data, chunk)
    framer = LineFramer(source.read, LIMIT)
    source.framer = framer
    out: list[bytes | Oversized] = []
    while (line := await framer.next_line()) is not None:
        out.append(line)
    return out, source.largest


@pytest.mark.parametrize("chunk", [1, 7, 100, 4096, 1 << 20])
async def test_an_oversized_line_is_dropped_as_it_streams(chunk: int) -> None:
    big = b'{"jsonrpc": "2.0", "id": 7, "params": {"text": "' + b"a" * 30_000 + b'"}}'
    data = b"first\n" + big + b"\n" + b"x" * LIMIT + b"\n\nlast without newline"
    lines, largest = await frame(data, chunk)
    assert lines[0] == b"first" and lines[2:] == [b"x" * LIMIT, b"", b"last without newline"]
    oversized = lines[1]
    assert isinstance(oversized, Oversized) and oversized.size == len(big)
    assert big.startswith(oversized.head) and LIMIT < len(oversized.head) <= 4096  # kept to find the id
    assert largest <= LIMIT + chunk  # never the whole line
    oversized_at_end, _ = await frame(b"ok\n" + b"y" * (LIMIT + 1), chunk)
    assert oversized_at_end == [b"ok", Oversized(LIMIT + 1, b"y" * (LIMIT + 1))]


@pytest.mark.parametrize("head, expected", [
    (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"x": "aaaa', 7),
    (b'{"jsonrpc":"2.0","method":"x","id":"abc","params":{"x":"aa', "abc"),
    (b'{"params": {"id": 1, "nested": [1, {"id": 2}]}, "id": 3, "x": "aaaa', 3),  # nested ids are skipped
    (b'{"method": "x", "params": {"text": "aaaa', None),  # the id would come after the cut
    (b'{"id": true, "method": "x"', None),
    (b'{"id": 1.5, "method": "x"', None),
    (b'  \n{ "id" :  12 ,', 12),
    (b'[{"id": 1}', None),
    (b"\xff\xfe garbage", None),
    (b'{"id": "caf\xc3', None),  # a string cut inside a character
])
def test_leading_id_reads_only_a_top_level_id_before_the_cut(head: bytes, expected: Any) -> None:
    assert leading_id(head) == expected


@pytest.mark.parametrize("line, answer", [
    (b"not json", (-32700, None)),
    (b"[1, 2]", (-32600, None)),
    (b'{"jsonrpc": "2.0", "id": "x", "method": 5}', (-32600, "x")),
    (b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}', (-32600, 4)),
    (b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": 3}', (-32600, 4)),
    (b"   ", None),
    (b'{"jsonrpc": "2.0", "method": "x", "params": 3}', None),  # a malformed notification: never answered
    (b'{"id": 3, "result": {}}', None),  # a malformed response: never answered
])
def test_malformed_lines_are_answered_by_the_table(line: bytes, answer: tuple[int, Any] | None) -> None:
    parsed = parse_line(line)
    if answer is None:
        assert parsed is None
        return
    assert isinstance(parsed, Refusal)
    error = parsed.answer.message
    assert isinstance(error, JSONRPCError) and (error.error.code, error.id) == answer
    request = parse_line(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    assert isinstance(request, SessionMessage) and isinstance(request.message, JSONRPCRequest)


def sleeper() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=[t.Tool(name="sleep", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        await anyio.sleep(float((params.arguments or {})["seconds"]))
        return t.CallToolResult(content=[t.TextContent(type="text", text="slept")])

    return Server("sleeper", on_list_tools=list_tools, on_call_tool=call_tool)


def jsonl(messages: Iterable[dict[str, Any] | bytes]) -> bytes:
    return b"".join((m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n" for m in messages)


HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def sleep_call(request_id: int, seconds: float) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"seconds": seconds}}}


async def serve(data: bytes, eof_grace: float) -> tuple[dict[Any, dict[str, Any]], float]:
    """Serve ``data`` as a client's whole stdin; (the answers by id, seconds until the loop ended)."""
    server, sink = sleeper(), Lines()
    wire = StdioWire(Chunks(data, 4096), sink, LIMIT, eof_grace=eof_grace)
    started = time.monotonic()
    with anyio.fail_after(30):
        async with wire.streams() as (read_stream, write_stream):
            await serve_dual_era_loop(server, read_stream, write_stream, lifespan_state={})
    took = time.monotonic() - started
    return {m.get("id"): m for m in sink.messages()}, took


async def test_requests_read_before_eof_are_answered() -> None:
    messages = [*HANDSHAKE, sleep_call(1, 0.3), {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "' + b"a" * 2 * LIMIT + b'"}}',
                b"{oops", {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}]
    answers, _ = await serve(jsonl(messages), eof_grace=20)
    assert answers[1]["result"]["content"][0]["text"] == "slept"  # finished after stdin had ended
    assert answers[2]["result"] == {}
    assert answers[3]["error"]["code"] == -32600 and f"limit of {LIMIT} bytes" in answers[3]["error"]["message"]
    assert answers[None]["error"]["code"] == -32700
    assert answers[4]["result"]["tools"][0]["name"] == "sleep"


async def test_after_eof_a_request_runs_at_most_the_grace() -> None:
    answers, took = await serve(jsonl([*HANDSHAKE, sleep_call(1, 0.2), sleep_call(2, 3600)]), eof_grace=0.5)
    assert answers[1]["result"]["content"][0]["text"] == "slept"
    assert answers[2]["error"]["message"] == "Connection closed"
    assert took < 10  # the grace (0.5 s) plus the SDK's shutdown write (at most 1 s), with headroom


async def test_a_cancelled_request_does_not_hold_the_end() -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    answers, took = await serve(jsonl([*HANDSHAKE, sleep_call(1, 3600), cancel]), eof_grace=20)
    assert 1 not in answers  # a request the client cancelled is never answered
    assert took < 10


class Endless(Chunks):
    """A stdin that never ends after its data, as when another process holds the client's pipe."""

    async def read(self) -> bytes:
        if self.at < len(self.data):
            return await super().read()
        await anyio.sleep_forever()
        return b""


async def test_a_request_read_as_the_client_goes_is_still_delivered() -> None:
    """The client going while the serving loop has not yet taken a line read must not lose that line: it
    is noted pending, and one never delivered would never run and would hold the exit (a race CI hit)."""
    wire = StdioWire(Endless(jsonl([sleep_call(7, 0.1)]), 4096), Lines(), LIMIT, eof_grace=20)
    with anyio.fail_after(10):
        async with wire.streams() as (read_stream, _write_stream):
            while not wire.pending:  # read and noted; its delivery waits for the loop to take it
                await anyio.sleep(0.01)
            wire.client_gone()
            await anyio.sleep(0.05)  # the cancel reaches the reader while it is delivering
            with anyio.move_on_after(3):  # lost, the line never comes: the reader waits eof_grace instead
                delivered = await read_stream.receive()
            read_stream.close()  # as the serving loop does when it ends
    assert isinstance(delivered, SessionMessage) and getattr(delivered.message, "id", None) == 7


async def test_when_the_client_is_gone_the_wire_ends_as_at_eof_and_writes_nothing_more() -> None:
    finished: list[float] = []

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        await anyio.sleep(float((params.arguments or {})["seconds"]))
        finished.append(float((params.arguments or {})["seconds"]))
        return t.CallToolResult(content=[t.TextContent(type="text", text="slept")])

    server: Server[Any] = Server("sleeper", on_call_tool=call_tool)
    sink = Lines()
    wire = StdioWire(Endless(jsonl([*HANDSHAKE, sleep_call(1, 0.5)]), 4096), sink, LIMIT, eof_grace=20)
    started = time.monotonic()
    with anyio.fail_after(30):
        async with wire.streams() as (read_stream, write_stream):
            gone = wire.on_client_gone()  # what a ParentWatch calls, from its thread

            async def watch() -> None:
                while 1 not in wire.pending or 0 in wire.pending:  # the sleep read, the handshake answered
                    await anyio.sleep(0.01)
                await anyio.to_thread.run_sync(gone, "the client is gone")

            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                await serve_dual_era_loop(server, read_stream, write_stream, lifespan_state={})
    took = time.monotonic() - started
    assert finished == [0.5]  # the request already read ran to its end
    assert [m.get("id") for m in sink.messages()] == [0]  # its answer was not written: nobody reads it
    assert took < 10
