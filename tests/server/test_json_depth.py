"""JSON nesting bounded on every wire (issue 55, item 5): a 2 kB stdio line nested 990 deep ended the
server with a RecursionError in its reader (the client saw a broken pipe). Now a message nested
deeper than ``jsonlimits.MAX_DEPTH`` (64) levels is answered with JSON-RPC ``-32600`` naming the
limit (with the request's id when it comes before the deep part), a REST body with ``bad_request``,
and the server serves the next request. Real subprocesses: ``ctx serve`` over pipes and
``ctx serve --http`` on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from context_harness.common.jsonlimits import MAX_DEPTH
from context_harness.server.stdio import leading_id, parse_line
from support.http import free_port, spawn_http, stop_process
from support.paths import BIN
from support.workspace import config_toml, write_files

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "depth", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def search_line(request_id: int, query: str, id_first: bool = True) -> bytes:
    """A tools/call of search whose ``query`` is the JSON text ``query``; the id first or last."""
    call = f'"method": "tools/call", "params": {{"name": "search", "arguments": {{"query": {query}}}}}'
    head = f'{{"jsonrpc": "2.0", "id": {request_id}, {call}}}' if id_first else \
        f'{{"jsonrpc": "2.0", {call}, "id": {request_id}}}'
    return head.encode() + b"\n"


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_files(tmp_path / "docs", {"pelicans.md": "# Pelicans\n\nPelicans skim the water for fish.\n"})
    (tmp_path / "ctx.toml").write_text(config_toml(server="watch = false"), encoding="utf-8")
    return tmp_path


def read_answer(proc: subprocess.Popen[bytes], request_id: Any) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        raw = proc.stdout.readline()
        if not raw:
            proc.kill()
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"stdout closed before the answer to {request_id!r}: {err.decode(errors='replace')[-3000:]}")
        message = json.loads(raw)
        if message.get("id") == request_id and "method" not in message:
            return message


def test_stdio_answers_deep_lines_and_serves_the_next(workspace: Path, child_env: dict[str, str]) -> None:
    proc = subprocess.Popen([str(BIN / "ctx"), "serve", "--config", "ctx.toml"], cwd=workspace, env=child_env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    try:
        proc.stdin.write(line(INITIALIZE) + line(INITIALIZED))
        proc.stdin.flush()
        read_answer(proc, 0)
        began = time.monotonic()
        cases = {  # id -> the line
            1: search_line(1, nested(100_000)),
            2: search_line(2, "[" * 990),  # the issue's: 2 kB, 990 deep (cut short, as it was sent)
            3: b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": ' + b"{" * 50_000 + b"\n",
            4: search_line(4, nested(100_000), id_first=False),  # the id after the deep part: not read
        }
        for request_id, deep in cases.items():
            proc.stdin.write(deep + line({"jsonrpc": "2.0", "id": 100 + request_id, "method": "ping"}))
            proc.stdin.flush()
            refused = read_answer(proc, request_id if request_id != 4 else None)
            assert refused["error"]["code"] == -32600, refused
            assert TOO_DEEP in refused["error"]["message"], refused
            assert read_answer(proc, 100 + request_id)["result"] == {}
        took = time.monotonic() - began
        for attempt in range(100):  # and a real request still works (once the sync on start is done)
            proc.stdin.write(search_line(1000 + attempt, json.dumps("pelicans")))
            proc.stdin.flush()
            found = read_answer(proc, 1000 + attempt)["result"]
            assert not found.get("isError"), found
            if "Pelicans" in json.dumps(found):
                break
            time.sleep(0.1)
        assert "Pelicans" in json.dumps(found)
        proc.stdin.write(search_line(10, nested(MAX_DEPTH - 3)))  # within the limit: the tool's own answer
        proc.stdin.flush()
        within = read_answer(proc, 10)["result"]
        assert within["isError"] is True and "query" in within["content"][0]["text"]
    finally:
        _, err = proc.communicate(timeout=60)  # closes stdin: the server ends
    stderr = err.decode(errors="replace")
    assert proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "RecursionError" not in stderr, stderr[-3000:]
    assert took < 10, f"{took:.1f} s for four deep lines"  # ~0.1 s
    print(f"\nstdio: four deep lines refused and each next ping answered in {took:.2f} s")


def test_the_id_is_sniffed_safely_from_a_deep_line() -> None:
    assert leading_id(b'{"params": ' + b"[" * 4000) is None  # raw_decode of the deep value recursed
    assert leading_id(b'{"id": 7, "params": ' + b"[" * 4000) == 7
    refused = parse_line(b'{"jsonrpc": "2.0", "params": {"a": ' + b"[" * 3000 + b"]" * 3000 + b'}, "id": "x"}')
    assert not isinstance(refused, type(None)) and hasattr(refused, "answer")


def test_http_answers_deep_bodies_and_serves_the_next(workspace: Path, child_env: dict[str, str]) -> None:
    port = free_port()
    proc = spawn_http(["--config", str(workspace / "ctx.toml")], child_env, port)
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": "2025-11-25"}
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            for depth in (100_000, 990, MAX_DEPTH + 1):
                body = search_line(5, nested(depth))
                rpc = http.post("/mcp", content=body, headers=headers)
                assert rpc.status_code == 400, rpc.text
                assert rpc.json()["error"]["code"] == -32600 and TOO_DEEP in rpc.json()["error"]["message"], rpc.text
                rest = http.post("/tools/search", content=f'{{"query": {nested(depth)}}}',
                                 headers={"content-type": "application/json"})
                assert rest.status_code == 400, rest.text
                assert rest.json()["error"]["code"] == "bad_request" and TOO_DEEP in rest.json()["error"]["message"]
            deadline = time.monotonic() + 60  # the sync on start may still run on a loaded machine
            while not (found := http.post("/tools/search", json={"query": "pelicans"})).json().get("results"):
                assert found.status_code == 200 and time.monotonic() < deadline, found.text
                time.sleep(0.1)
            assert found.status_code == 200 and found.json()["results"][0]["title"] == "Pelicans"
            opened = http.post("/mcp", json=INITIALIZE, headers=headers)
            assert opened.status_code == 200, opened.text
            session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"]}
            http.post("/mcp", json=INITIALIZED, headers=session)
            ping = http.post("/mcp", json={"jsonrpc": "2.0", "id": 6, "method": "ping"}, headers=session)
            assert ping.status_code == 200 and '"result":{}' in ping.text.replace(" ", ""), ping.text
    finally:
        stop_process(proc)
