"""Hostile input over HTTP (issue 16, battery 3): hypothesis drives every REST route and the
Streamable HTTP endpoint of the real app under uvicorn on 127.0.0.1, 10,000 cases per surface.

Requests carry wrong methods, hostile path segments (``../``, percent-escapes, NUL, lone surrogates),
odd query strings and content types, and bodies that are hostile JSON (built by the route's schema),
invalid UTF-8, invalid or truncated JSON, ``NaN``, deep nesting, or bodies over the size limit.
Every answer must be a client error (4xx with ``{"error": {"code"}}`` from the table, or a JSON-RPC
error other than internal) or a success; 5xx only for a Lua script's own ``tool_error``/``agent_error``;
never traceback text, nothing logged at ERROR; and the server still answers a plain search after.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_harness import config as config_mod
from support.hostile import (
    BATTERY,
    CLIENT_CODES,
    SCRIPT_CODES,
    Counter,
    ErrorLog,
    anything,
    arguments_for,
    integers,
    json_values,
    mostly,
    no_traceback,
    texts,
)
from support.http import AppServer
from support.workspace import write_hostile_workspace

pytestmark = pytest.mark.slow

MAX_BODY = 65_536
GUARD_CODES = {"unauthorized", "forbidden"}
SCRIPT_ROUTES = ("/tools/echo", "/agents/responder/prompt")


@dataclass
class Served:
    server: AppServer
    http: httpx2.Client
    errors: ErrorLog
    tools: dict[str, dict[str, Any]]
    ids: list[str]
    session: str  # an initialized MCP session id, for hostile JSON-RPC over /mcp

    def search_works(self) -> None:
        response = self.http.post("/tools/search", json={"query": "tantivy rust"})
        assert response.status_code == 200, response.text
        assert response.json()["results"][0]["title"] == "Tantivy notes"


MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": "2025-11-25"}


def open_mcp_session(http: httpx2.Client) -> str:
    response = http.post("/mcp", headers=MCP_HEADERS, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}})
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    http.post("/mcp", headers={**MCP_HEADERS, "mcp-session-id": session},
              json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    cfg = write_hostile_workspace(tmp_path_factory.mktemp("hostile-rest"), server=f"max_body_bytes = {MAX_BODY}")
    uvicorn_log = logging.getLogger("uvicorn.error")
    with ErrorLog() as errors:
        uvicorn_log.addHandler(errors)
        server = AppServer(config_mod.load_file(cfg)).start()
        try:
            with httpx2.Client(base_url=server.url, timeout=60) as http:
                tools = {tool["name"]: tool["parameters"] for tool in http.get("/tools/list").json()["tools"]}
                hits = http.post("/tools/search", json={"query": "tantivy lua claude notes", "limit": 20}).json()
                yield Served(server, http, errors, tools, [h["id"] for h in hits["results"]], open_mcp_session(http))
        finally:
            server.stop()
            uvicorn_log.removeHandler(errors)


def check_response(served: Served, response: httpx2.Response, where: str, counter: Counter) -> None:
    text = response.text
    no_traceback(text, where)
    status = response.status_code
    code = None
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("application/json") and text:
        body = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and "code" in error:
            code = error["code"]
            if isinstance(code, int):  # a JSON-RPC error from /mcp
                assert code != -32603, f"{where}: internal JSON-RPC error {text[:500]}"
            else:
                assert code in CLIENT_CODES | GUARD_CODES | SCRIPT_CODES, f"{where}: {status} {text[:500]}"
    elif content_type.startswith("text/event-stream"):
        assert '"code":-32603' not in text.replace(" ", ""), f"{where}: internal JSON-RPC error {text[:500]}"
    if status >= 500:
        scripted = any(where.split(" ", 2)[1].startswith(route) for route in SCRIPT_ROUTES)
        assert scripted and code in SCRIPT_CODES, f"{where}: {status} {text[:500]}"
    assert code != "internal", f"{where}: {text[:500]}"
    counter.count(f"{status} {code}" if code else str(status))
    served.errors.check()


# -- strategies ---------------------------------------------------------------------------------------

def segment(text: str) -> str:
    """``text`` as one percent-escaped path segment (lone surrogates as their UTF-8-ish bytes)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


hostile_segments = st.one_of(texts.map(segment), st.sampled_from(
    ["..", "%2e%2e", "..%2f..%2fetc%2fpasswd", "%00", "%ff%fe", "%c0%af", "%ed%a0%80", "a%2fb", "%", "%zz", "x" * 5000]))
invalid_utf8 = st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe2\x82"])


def json_bytes(value: Any) -> bytes:
    """``value`` as JSON text; lone surrogates become ``\\ud800`` escapes (valid JSON, hostile content)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode()


raw_bodies = st.one_of(
    st.binary(max_size=64),
    st.builds(lambda a, b, c: a + b + c, st.sampled_from([b'{"query": "', b'{"id": "', b"", b'["']), invalid_utf8,
              st.sampled_from([b'"}', b"", b'"]'])),
    st.sampled_from([b"{", b'{"query": ', b"nul", b"NaN", b"Infinity", b'{"query": NaN}', b'{"limit": Infinity}',
                     b"\xef\xbb\xbf{}", b'{"a": 1} trailing', b"[]", b"null", b"0", b'"text"', b"{}" * 3,
                     b'{"query": "x", "query": 5}', b'{"id": "\\ud800"}', b'{"query": "\\udfff\\u0000"}']),
    st.integers(10, 200_000).map(lambda n: b"[" * n),
    st.integers(10, 50_000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.integers(MAX_BODY - 64, MAX_BODY * 3).map(lambda n: b'{"query": "' + b"a" * n + b'"}'),
)


def bodies_for(schema: dict[str, Any], plausible: dict[str, list[Any]]) -> st.SearchStrategy[bytes]:
    return mostly(arguments_for(schema, plausible).map(json_bytes), raw_bodies, one_in=4)


PLAUSIBLE: dict[str, list[Any]] = {
    "query": ["tantivy", "lua sandbox", '"full-text search"'], "name": ["reviewer", "responder", "nobody"],
    "text": ["hello"], "repeat": [1, 2, 100, 101], "language": ["python", "go"], "service": ["search"],
    "mode": ["ok", "error", "bad", "keyword", "hybrid"],
}
AGENT_ARGUMENTS = {"properties": {k: {"type": "string"} for k in ("language", "service", "mode", "arguments")}}
CONTENT_TYPES = ["application/json", "application/json", "text/plain", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/json; charset=latin-1", "", "\x7f"]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        return f"{self.method} {self.path[:200]} [{len(self.body)} bytes: {self.body[:120]!r}]"


def rest_calls(served: Served) -> st.SearchStrategy[Call]:
    plausible = {**PLAUSIBLE, "id": served.ids}
    tool = st.sampled_from(sorted(served.tools)).flatmap(lambda name: st.builds(
        Call, st.just("POST"), st.just(f"/tools/{name}"), bodies_for(served.tools[name], plausible),
        st.sampled_from(CONTENT_TYPES)))
    agent = st.builds(lambda n, b, ct: Call("POST", f"/agents/{n}/prompt", b, ct),
                      mostly(st.sampled_from(["reviewer", "responder", "debugger"]), hostile_segments),
                      bodies_for(AGENT_ARGUMENTS, plausible), st.sampled_from(CONTENT_TYPES))
    listing = st.builds(lambda p, q: Call("GET", p + q), st.sampled_from(
        ["/tools/list", "/agents/list", "/health", "/tools/sources"]), st.one_of(
        st.just(""), st.builds(lambda v: f"?agent={v}", hostile_segments), st.builds(lambda v: f"?{v}", hostile_segments)))
    odd = st.builds(Call, st.sampled_from(["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "POST", "TRACE"]),
                    st.one_of(st.sampled_from(["/tools/search", "/tools/list", "/agents/list", "/health",
                                               "/agents/reviewer/prompt", "/tools/get", "/", "/tools", "/agents"]),
                              st.builds(lambda a, b: f"/{a}/{b}", hostile_segments, hostile_segments),
                              st.builds(lambda s: f"/tools/{s}", hostile_segments),
                              st.builds(lambda s: f"/agents/{s}/prompt", hostile_segments)),
                    mostly(st.just(b""), raw_bodies, one_in=3))
    return st.one_of(tool, tool, tool, agent, listing, odd)


def mcp_calls(served: Served) -> st.SearchStrategy[Call]:
    """JSON-RPC over ``/mcp``: hostile params for every method, in the initialized session or none,
    and bodies that are not JSON-RPC at all."""
    methods = st.sampled_from(["tools/call", "tools/call", "prompts/get", "resources/read", "completion/complete",
                               "resources/list", "resources/subscribe", "initialize", "ping", "no/such"])
    params = st.one_of(
        st.builds(lambda n, a: {"name": n, "arguments": a}, st.sampled_from(sorted(served.tools) + ["reviewer"]),
                  json_values),
        st.builds(lambda u: {"uri": u}, st.one_of(texts, st.builds(lambda s: f"ctx://documents/{s}", texts))),
        st.dictionaries(texts, json_values, max_size=3), anything)
    envelope = st.builds(lambda m, p, i: {"jsonrpc": "2.0", "id": i, "method": m, "params": p}, methods, params,
                         st.one_of(integers, texts, st.none(), st.booleans()))
    batch = st.lists(envelope, min_size=1, max_size=3)
    body = mostly(st.one_of(envelope, batch).map(json_bytes), st.one_of(raw_bodies, anything.map(json_bytes)), one_in=4)
    session = mostly(st.just(served.session), st.one_of(st.just(""), texts.map(segment)), one_in=5)
    accept = mostly(st.just(MCP_HEADERS["accept"]), st.sampled_from(["", "text/html", "*/*", "application/json"]))
    version = mostly(st.just("2025-11-25"), st.sampled_from(["", "1999-01-01", "2026-07-28", "x" * 300]))
    return st.builds(lambda b, s, a, v, ct, m: Call(
        m, "/mcp", b, ct, (("mcp-session-id", s), ("accept", a), ("mcp-protocol-version", v))),
        body, session, accept, version, mostly(st.just("application/json"), st.sampled_from(CONTENT_TYPES)),
        mostly(st.just("POST"), st.sampled_from(["GET", "DELETE", "PUT"]), one_in=8))


def send(served: Served, call: Call) -> httpx2.Response:
    headers = {"content-type": call.content_type} if call.content_type else {}
    headers.update({k: v for k, v in call.headers if v})
    if call.method == "GET" and call.path == "/mcp":
        headers["accept"] = "application/json"  # never open a long-lived event stream
    if call.method == "DELETE" and call.path == "/mcp":
        headers["mcp-session-id"] = "not-" + headers.get("mcp-session-id", "")  # keep the battery's session
    return served.http.request(call.method, call.path, content=call.body, headers=headers)


def run_surface(served: Served, figures: dict[str, str], name: str, calls: st.SearchStrategy[Call]) -> None:
    counter = Counter()
    started = time.monotonic()

    @BATTERY
    @given(call=calls)
    def case(call: Call) -> None:
        check_response(served, send(served, call), repr(call), counter)

    case()
    figures[name] = f"{counter.summary()} in {time.monotonic() - started:.1f} s"
    assert counter.cases >= BATTERY.max_examples
    served.search_works()


@pytest.fixture(scope="module")
def figures() -> Iterator[dict[str, str]]:
    found: dict[str, str] = {}
    yield found
    print("\nhostile HTTP battery:", json.dumps(found, indent=1))


def test_rest_routes(served: Served, figures: dict[str, str]) -> None:
    run_surface(served, figures, "rest", rest_calls(served))


def test_mcp_endpoint(served: Served, figures: dict[str, str]) -> None:
    run_surface(served, figures, "mcp-http", mcp_calls(served))
