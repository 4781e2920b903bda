"""Paged ``get`` over a ~262 kB manual through the MCP tool (real client in memory), the
``ctx://documents/{id}`` resource with a query and REST ``POST /tools/get`` (the real app);
``ctx get`` is in tests/cli/test_cli.py, all three side by side in tests/e2e/test_parity.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as t
import pytest
from mcp import Client, MCPError

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.http import build_app
from context_harness.server.mcp import build_server
from support.results import error_of
from support.workspace import long_markdown, marker, write_long_document

pytestmark = pytest.mark.anyio
BODY = long_markdown()
SEED_KEYS = {"id", "source", "source_id", "source_url", "title", "author", "created_at", "updated_at",
             "content_type", "body", "metadata", "chunks"}
NEW_KEYS = {"truncated", "range", "total_chars", "next_offset", "version"}


@pytest.fixture
def long_config(tmp_path: Path) -> Path:
    return write_long_document(tmp_path)


@pytest.fixture
async def kb(long_config: Path) -> AsyncIterator[Any]:
    async with Harness.open(config_mod.load(long_config)) as h:
        await h.sync()
        yield h


async def rest_post(harness: Any, path: str, body: Any) -> tuple[int, Any]:
    app = build_app(harness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as rest:
        response = await rest.post(path, json=body)
    return response.status_code, response.json()


async def test_mcp_search_then_get_the_hit_chunk_then_page_on(kb) -> None:
    async with Client(build_server(kb)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"chunk", "offset", "max_chars"} <= set(tools["get"].input_schema["properties"])
        assert "chunk" in tools["search"].description and "next_offset" in tools["get"].description
        found = await client.call_tool("search", {"query": marker(30), "limit": 1})
        [hit] = found.structured_content["results"]
        assert f"chunk: {hit['chunk']}" in found.content[0].text
        section = await client.call_tool("get", {"id": hit["id"], "chunk": hit["chunk"]})
        doc = section.structured_content
        assert not section.is_error and set(doc) == SEED_KEYS | NEW_KEYS
        assert marker(30) in doc["body"] and doc["truncated"] is True
        assert "to read on, call `get` with offset" in section.content[0].text
        first = await client.call_tool("get", {"id": hit["id"]})
        second = await client.call_tool("get", {"id": hit["id"], "offset": first.structured_content["next_offset"]})
        assert BODY.startswith(first.structured_content["body"] + second.structured_content["body"])
        bad = await client.call_tool("get", {"id": hit["id"], "offset": -1})
    assert error_of(bad) == {"code": "bad_request",
                                                                "message": "offset: offset must be 0 or more"}


async def test_document_resource_takes_a_window_query(kb) -> None:
    async with Client(build_server(kb)) as client:
        [hit] = (await client.call_tool("search", {"query": marker(12), "limit": 1})).structured_content["results"]
        uri = f"ctx://documents/{hit['id']}"
        default = (await client.read_resource(uri)).contents[0].text
        section = (await client.read_resource(f"{uri}?chunk={hit['chunk']}")).contents[0].text
        small = (await client.read_resource(f"{uri}?offset=100&max_chars=50")).contents[0].text
        whole = (await client.read_resource(f"{uri}?max_chars=0")).contents[0].text
        with pytest.raises(MCPError) as info:
            await client.read_resource(f"{uri}?chunk=100000")
    assert default.startswith("# File system manual") and len(default) < 21_000
    assert f"to read on, read `{uri}?offset=" in default
    assert marker(12) in section and marker(12) not in default
    assert "[characters 100-" in small and f"{uri}?offset=" in small
    assert BODY.rstrip() in whole and "[characters" not in whole
    assert info.value.code == t.INVALID_PARAMS and "out of range" in info.value.message


async def test_rest_get_shapes_and_errors(kb) -> None:
    _, found = await rest_post(kb, "/tools/search", {"query": marker(70), "limit": 1})
    [hit] = found["results"]
    assert {"chunk", "heading"} <= set(hit) and "Section 70" in hit["heading"]
    status, doc = await rest_post(kb, "/tools/get", {"id": hit["id"], "chunk": hit["chunk"], "max_chars": 3000})
    assert status == 200 and set(doc) == SEED_KEYS | NEW_KEYS
    assert len(doc["body"]) <= 3000 and marker(70) in doc["body"]
    assert doc["range"]["end"] - doc["range"]["start"] == len(doc["body"])
    assert all(set(c) == {"index", "text", "heading", "start", "end"} for c in doc["chunks"])
    status, whole = await rest_post(kb, "/tools/get", {"id": hit["id"], "max_chars": 0})
    assert status == 200 and whole["body"] == BODY and whole["next_offset"] is None
    status, error = await rest_post(kb, "/tools/get", {"id": hit["id"], "offset": len(BODY) + 5})
    assert status == 400 and error["error"]["code"] == "bad_request"
    past = f"offset {len(BODY) + 5} is past the end of the document ({len(BODY)} characters)"
    assert error["error"]["message"] == past
