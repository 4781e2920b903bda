"""The real HTTP app under uvicorn on 127.0.0.1 (ephemeral port): /mcp, the REST shim and its guards."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from mcp import Client

from context_harness import __version__
from context_harness import config as config_mod
from context_harness.errors import BadRequest
from context_harness.server.http import parse_bind
from support.results import error_of


@pytest.fixture
def rest(app_server):
    with httpx2.Client(base_url=app_server.url, timeout=30) as client:
        yield client


def test_health_and_tools_list(rest):
    assert rest.get("/health").json() == {"status": "ok", "version": __version__}
    tools = rest.get("/tools/list").json()["tools"]
    assert [t["name"] for t in tools] == ["search", "get", "sources", "recent", "related"]
    assert all(t["builtin"] and t["description"] for t in tools)
    assert tools[0]["parameters"]["required"] == ["query"]
    unknown_agent = rest.get("/tools/list", params={"agent": "nobody"})
    assert unknown_agent.status_code == 404 and unknown_agent.json()["error"]["code"] == "not_found"


def test_search_get_sources(rest):
    search = rest.post("/tools/search", json={"query": "rust search engine", "limit": 3})
    assert search.status_code == 200
    [first, *_] = search.json()["results"]
    assert first["title"] == "Tantivy notes"
    doc = rest.post("/tools/get", json={"id": first["id"]})
    assert doc.status_code == 200 and doc.json()["id"] == first["id"]
    for response in (rest.get("/tools/sources"), rest.post("/tools/sources", json={})):
        assert response.status_code == 200
        assert response.json()["sources"][0]["document_count"] == 4
    shorthand = rest.post("/tools/search", json={"query": "tantivy", "source": "filesystem"})
    assert shorthand.json()["results"]


def test_recent_and_related_through_the_rest_shim(rest):
    first = rest.post("/tools/search", json={"query": "rust search engine", "limit": 1}).json()["results"][0]
    related = rest.post("/tools/related", json={"id": first["id"]})
    assert related.status_code == 200 and related.json()["id"] == first["id"]
    assert {"links_to", "linked_from", "similar", "unresolved"} <= set(related.json())
    recent = rest.post("/tools/recent", json={"limit": 2})
    assert recent.status_code == 200 and [c["change"] for c in recent.json()["changes"]] == ["added", "added"]
    bad = rest.post("/tools/recent", json={"since": "soon"})
    assert bad.status_code == 400 and "since" in bad.json()["error"]["message"]


def test_the_note_tools_through_the_rest_shim(config, start_server):
    """With a writable source the REST shim lists and runs the note tools; a stale version is a 409."""
    source = next(iter(config.connectors.filesystem.values()))
    source.writable = True
    server = start_server(config)
    with httpx2.Client(base_url=server.url, timeout=30) as rest:
        names = [t["name"] for t in rest.get("/tools/list").json()["tools"]]
        assert names[-5:] == ["note_write", "note_edit", "note_move", "note_delete", "note_restore"]
        written = rest.post("/tools/note_write", json={"source": "docs", "path": "inbox/rest.md",
                                                        "content": "Written over REST by a curl user."})
        assert written.status_code == 200 and written.json()["action"] == "written"
        assert (source.root / "inbox" / "rest.md").read_text() == "Written over REST by a curl user.\n"
        stale = rest.post("/tools/note_edit", json={"id": written.json()["id"], "op": "append", "text": "x",
                                                     "expected_version": "0" * 64})
        assert stale.status_code == 409 and stale.json()["error"]["code"] == "conflict"
        outside = rest.post("/tools/note_write", json={"source": "docs", "path": "/etc/passwd.md", "content": "x"})
        assert outside.status_code == 400 and "absolute" in outside.json()["error"]["message"]


@pytest.mark.parametrize("method, path, body, status, code", [
    ("POST", "/tools/search", {"query": ""}, 400, "bad_request"),
    ("POST", "/tools/search", {"query": "x", "limit": 101}, 400, "bad_request"),
    ("POST", "/tools/search", {"query": "x", "nope": 1}, 400, "bad_request"),
    ("POST", "/tools/search", [1, 2], 400, "bad_request"),
    ("POST", "/tools/search", {"query": "x", "mode": "semantic"}, 400, "embeddings_disabled"),
    ("POST", "/tools/get", {"id": "0000000000"}, 404, "not_found"),
    ("POST", "/tools/get", {}, 400, "bad_request"),
    ("POST", "/tools/nope", {}, 404, "not_found"),
    ("GET", "/tools/search", None, 400, "bad_request"),
    ("GET", "/nowhere", None, 404, "not_found"),
    ("DELETE", "/tools/list", None, 405, "bad_request"),
])
def test_rest_errors(rest, method, path, body, status, code):
    response = rest.request(method, path, json=body)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert "Traceback" not in response.text


def test_invalid_json_and_body_limit(rest):
    bad = rest.post("/tools/search", content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request"
    big = rest.post("/tools/search", content=b"x" * 1_100_000)
    assert big.status_code == 413


@pytest.mark.parametrize("headers, status", [
    ({"host": "evil.example.com"}, 421),
    ({"host": "evil.example.com:7331"}, 421),
    ({"origin": "http://evil.example.com"}, 403),
    ({"origin": "null"}, 403),
    ({"host": "localhost:9"}, 200),
    ({"origin": "http://127.0.0.1:3000"}, 200),
])
def test_dns_rebinding_guard(rest, headers, status):
    for path in ("/health", "/tools/list"):
        assert rest.get(path, headers=headers).status_code == status
    if status != 200:
        mcp = rest.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
        assert mcp.status_code == status


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_mcp_over_streamable_http(app_server, mode):
    async with Client(f"{app_server.url}/mcp", mode=mode) as client:
        assert "4 documents" in client.instructions
        assert [t.name for t in (await client.list_tools()).tools] == ["search", "get", "sources", "recent", "related"]
        result = await client.call_tool("search", {"query": "claude desktop"})
        assert result.structured_content["results"][0]["title"] == "Connecting Claude Desktop"
        error = await client.call_tool("get", {"id": "missing"})
        assert error_of(error)["code"] == "not_found"
        doc_id = result.structured_content["results"][0]["id"]
        resource = await client.read_resource(f"ctx://documents/{doc_id}")
        assert resource.contents[0].text.startswith("# Connecting Claude Desktop")


@pytest.fixture
def secured(tmp_path: Path, make_workspace, start_server):
    cfg = make_workspace(tmp_path, server='sync_on_start = false\nauth_token = "${CTX_TEST_TOKEN:-s3cret}"\n'
                          'cors_origins = ["https://app.example.com"]\nallowed_hosts = ["ctx.internal"]\n'
                          "max_body_bytes = 2048")
    server = start_server(config_mod.load(cfg))
    with httpx2.Client(base_url=server.url, timeout=30) as client:
        yield server, client


def test_token_cors_hosts_and_limit(secured):
    server, client = secured
    auth = {"authorization": "Bearer s3cret"}
    assert client.get("/health").status_code == 200  # open
    for method, path in (("GET", "/tools/list"), ("POST", "/tools/search"), ("GET", "/tools/sources"),
                         ("POST", "/mcp")):
        denied = client.request(method, path, json={"query": "x"})
        assert denied.status_code == 401
        assert denied.json()["error"]["code"] == "unauthorized"
        assert denied.headers["www-authenticate"].startswith("Bearer")
        wrong = client.request(method, path, json={"query": "x"}, headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401
    assert client.get("/tools/list", headers=auth).status_code == 200
    assert client.post("/tools/search", json={"query": "tantivy"}, headers=auth).json()["results"]
    # an allow-listed host, on any port
    assert client.get("/health", headers={"host": "ctx.internal:8080"}).status_code == 200
    # CORS: listed origin gets headers (preflight needs no token); others are refused
    preflight = client.options("/tools/search", headers={
        "origin": "https://app.example.com", "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example.com"
    simple = client.get("/tools/list", headers={**auth, "origin": "https://app.example.com"})
    assert simple.headers["access-control-allow-origin"] == "https://app.example.com"
    assert client.get("/tools/list", headers={**auth, "origin": "https://other.example.com"}).status_code == 403
    # body limit from [server] max_body_bytes
    assert client.post("/tools/search", content=b"x" * 4096, headers=auth).status_code == 413


@pytest.mark.anyio
async def test_mcp_client_with_token(secured):
    server, _ = secured
    async with httpx2.AsyncClient(headers={"authorization": "Bearer s3cret"}, timeout=30) as http:
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http), mode="legacy") as client:
            assert (await client.call_tool("sources", {})).structured_content["sources"]


def test_cors_off_by_default(rest):
    response = rest.get("/tools/list", headers={"origin": "http://localhost:5173"})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("value, expected", [
    ("127.0.0.1:7331", ("127.0.0.1", 7331)), ("[::1]:80", ("::1", 80)), (":9000", ("127.0.0.1", 9000)),
    ("8080", ("127.0.0.1", 8080)), ("0.0.0.0:0", ("0.0.0.0", 0)),
])
def test_parse_bind(value, expected):
    assert parse_bind(value) == expected


@pytest.mark.parametrize("value", ["²", "127.0.0.1:²", "127.0.0.1:70000", "host:port"])
def test_parse_bind_refuses_what_is_not_a_port(value):
    with pytest.raises(BadRequest, match="expected HOST:PORT"):
        parse_bind(value)
