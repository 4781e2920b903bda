"""``ctx serve --http`` against clients that misbehave (issue 27, items 8 and 10): slowloris and idle
connections, too many connections, MCP sessions that pile up, JSON-RPC ids that are not ids or are
reused while in flight, ``Content-Length`` with ``Transfer-Encoding``, and a busy port.

Each runs the real server in a subprocess (the connection limits live in its uvicorn protocol)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from support.http import free_port, spawn_http, stop_process
from support.paths import BIN
from support.workspace import write_tools_workspace

LEGACY = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "hardening", "version": "1"}}}
LIMITS = "header_timeout = 1\nmax_connections = 6\nmax_sessions = 3\nsession_idle_timeout = 1.5"


@pytest.fixture
def serve(tmp_path: Path, child_env: dict[str, str]) -> Iterator[Callable[[str], str]]:
    """``serve(server_keys)`` -> the base URL of ``ctx serve --http`` over the tools workspace."""
    started: list[subprocess.Popen] = []

    def start(keys: str = LIMITS) -> str:
        cfg = write_tools_workspace(tmp_path)
        cfg.write_text(cfg.read_text(encoding="utf-8").replace("sync_on_start = false", f"sync_on_start = false\n{keys}"),
                       encoding="utf-8")
        port = free_port()
        started.append(spawn_http(["--config", str(cfg)], child_env, port, stderr=subprocess.DEVNULL))
        return f"http://127.0.0.1:{port}"

    yield start
    for proc in started:
        stop_process(proc)


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closed ``sock`` within ``seconds``, and what it sent before."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
        return True, received
    except TimeoutError:
        return False, received
    except ConnectionResetError:
        return True, received


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a ``content-length`` body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def initialize(client: httpx2.Client, url: str) -> str:
    response = client.post(f"{url}/mcp", json=INITIALIZE, headers=HEADERS)
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    done = client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY})
    assert done.status_code == 202
    return session


def trickle(sock: socket.socket, data: bytes, every: float) -> float | None:
    """Send ``data`` one byte every ``every`` seconds; when the server cut it off, after how long."""
    started = time.monotonic()
    try:
        for byte in data:
            sock.sendall(bytes([byte]))
            time.sleep(every)
    except (BrokenPipeError, ConnectionResetError):
        return time.monotonic() - started
    return time.monotonic() - started if closed_within(sock, 1)[0] else None


def test_idle_and_slowloris_connections_are_closed_after_header_timeout(serve: Callable[[str], str]) -> None:
    url = serve(LIMITS)
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with connect(url) as idle, connect(url) as slow:
        cut_after = trickle(slow, request[:-1], 0.25)  # one byte every 0.25 s: never a complete header block
        assert cut_after is not None and cut_after < 3, "a slowloris connection was kept open past header_timeout"
        assert closed_within(idle, 1)[0], "an idle connection was kept open past header_timeout"
    with connect(url) as quick:  # an ordinary request is unaffected, and so is a kept-alive connection's idle time
        quick.settimeout(5)
        quick.sendall(request)
        assert read_response(quick).startswith(b"HTTP/1.1 200")
        time.sleep(1.5)
        quick.sendall(request)
        assert read_response(quick).startswith(b"HTTP/1.1 200")


def test_connections_past_max_connections_get_503_and_are_closed(serve: Callable[[str], str]) -> None:
    url = serve(LIMITS.replace("header_timeout = 1", "header_timeout = 30"))
    held = [connect(url) for _ in range(6)]
    try:
        time.sleep(0.3)
        with connect(url) as extra:
            closed, said = closed_within(extra, 3)
        assert closed and said.startswith(b"HTTP/1.1 503"), said
        assert b"max_connections" in said
        held.pop().close()
        time.sleep(0.3)
        assert httpx2.get(f"{url}/health", timeout=5).status_code == 200  # room again
    finally:
        for sock in held:
            sock.close()


def test_content_length_with_transfer_encoding_is_refused_and_closed(serve: Callable[[str], str]) -> None:
    url = serve(LIMITS)
    with connect(url) as sock:
        sock.sendall(b"POST /tools/sources HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
        closed, said = closed_within(sock, 3)
    assert said.startswith(b"HTTP/1.1 400"), said
    assert b"Content-Length or Transfer-Encoding" in said
    assert closed, "the connection stayed open after a request with Content-Length and Transfer-Encoding"


@pytest.mark.parametrize("body", [
    '{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": [1], "method": "ping"}',
    '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": true, "method": "ping"}',
])
def test_an_id_that_is_not_a_string_or_integer_is_400(serve: Callable[[str], str], body: str) -> None:
    url = serve(LIMITS)
    with httpx2.Client(timeout=10) as client:
        session = initialize(client, url)
        response = client.post(f"{url}/mcp", content=body,
                               headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] in (-32700, -32600) and ("id" in error["message"] or "NaN" in error["message"])


@pytest.mark.anyio
async def test_a_duplicate_in_flight_id_is_refused_and_the_first_request_ends(serve: Callable[[str], str]) -> None:
    url = serve(LIMITS.replace("session_idle_timeout = 1.5", "session_idle_timeout = 60"))
    with httpx2.Client(timeout=10) as sync_client:
        session = initialize(sync_client, url)
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "modes", "arguments": {"mode": "sleep"}}}
    answers: dict[str, Any] = {}
    async with httpx2.AsyncClient(timeout=10) as client:

        async def first() -> None:
            response = await client.post(f"{url}/mcp", json=call, headers=headers)
            answers["first"] = response

        async def second() -> None:
            await anyio.sleep(0.2)  # while the first one sleeps (its timeout is 0.5 s)
            answers["second"] = await client.post(f"{url}/mcp", json=call, headers=headers)

        with anyio.fail_after(8):  # the first one's stream must end
            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                tg.start_soon(second)
    duplicate = answers["second"]
    assert duplicate.status_code == 400 and duplicate.json()["id"] == 7
    assert "already in flight" in duplicate.json()["error"]["message"]
    data = [line for line in answers["first"].text.splitlines() if line.startswith("data:")]
    result = json.loads(data[-1].removeprefix("data:"))
    assert result["id"] == 7 and result["result"]["isError"] is True
    assert "timed out" in result["result"]["content"][0]["text"]


def test_sessions_are_capped_and_idle_ones_expire(serve: Callable[[str], str]) -> None:
    url = serve(LIMITS)
    with httpx2.Client(timeout=10) as client:
        sessions = [initialize(client, url) for _ in range(3)]
        refused = client.post(f"{url}/mcp", json=INITIALIZE, headers=HEADERS)
        assert refused.status_code == 503
        assert "max_sessions" in refused.json()["error"]["message"]
        time.sleep(2.5)  # session_idle_timeout = 1.5
        stale = client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                            headers={**HEADERS, "mcp-session-id": sessions[0], "mcp-protocol-version": LEGACY})
        assert stale.status_code == 404
        assert initialize(client, url)  # room again


def test_a_busy_port_is_one_line_naming_the_address_and_bind(tmp_path: Path, child_env: dict[str, str]) -> None:
    cfg = write_tools_workspace(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([str(BIN / "ctx"), "--config", str(cfg), "serve", "--http", "--bind",
                               f"127.0.0.1:{port}"], env=child_env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"127.0.0.1:{port}" in lines[0] and "--bind" in lines[0] and "in use" in lines[0]
    assert "listening" not in done.stderr and "Traceback" not in done.stderr
