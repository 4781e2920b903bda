"""ChatGPT's connector shapes (``[server] profile``, ``tools/chatgpt.py``): OpenAI's documented
``search`` ``{query}`` -> ``{"results": [{id, title, url}]}`` and ``fetch`` ``{id}`` -> ``{id, title,
text, url, metadata}``, each answer exactly one text item holding the JSON, for a client named
``openai-mcp`` (in process in both protocol eras, over stdio and over Streamable HTTP) or for any
client under ``profile = "chatgpt"``; every other client keeps the standard shapes, byte for byte."""

from __future__ import annotations

import html
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from context_harness import config as config_mod
from context_harness.console.markdown import doc_href
from context_harness.core.harness import Harness
from context_harness.models import MAX_GET_CHARS
from context_harness.server.compat import is_openai_client, session_profile
from context_harness.server.mcp import build_server
from support.http import stop_process
from support.oauth import serve_oauth, signed_in
from support.paths import EXAMPLES
from support.waiting import wait_for
from support.workspace import KB_DOCS, write_hostile_workspace, write_knowledge_base

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
OPENAI = Implementation(name="openai-mcp", version="1.0.0")
OTHER = Implementation(name="claude-ai", version="0.1.0")
PUBLIC = "https://kb.example.com"
BODIES = {"tantivy.md": KB_DOCS["tantivy.md"], "claude.md": KB_DOCS["claude.md"]}


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@asynccontextmanager
async def opened(root: Path, server: str = "sync_on_start = false") -> AsyncIterator[Any]:
    """A synced Harness over ``KB_DOCS`` with ``server`` as its ``[server]`` section."""
    async with Harness.open(config_mod.load_file(write_knowledge_base(root, server=server))) as harness:
        await harness.sync()
        yield harness


@pytest.fixture
async def kb(tmp_path: Path) -> Any:
    async with opened(tmp_path) as harness:
        yield harness


def answer_of(result: Any) -> dict[str, Any]:
    """What OpenAI's clients read: exactly one text item holding the JSON (the structured content too)."""
    assert not result.is_error, result
    [block] = result.content
    assert block.type == "text"
    payload: dict[str, Any] = json.loads(block.text)
    assert result.structured_content == payload
    return payload


def assert_search_shape(payload: dict[str, Any]) -> list[dict[str, str]]:
    assert list(payload) == ["results"]
    for hit in payload["results"]:
        assert list(hit) == ["id", "title", "url"], hit
        assert all(isinstance(value, str) and value for value in hit.values()), hit
    ids = [hit["id"] for hit in payload["results"]]
    assert len(ids) == len(set(ids))
    results: list[dict[str, str]] = payload["results"]
    return results


def assert_fetch_shape(payload: dict[str, Any]) -> dict[str, Any]:
    assert list(payload) == ["id", "title", "text", "url", "metadata"]
    assert all(isinstance(payload[key], str) for key in ("id", "title", "text", "url")), payload
    assert isinstance(payload["metadata"], dict)
    return payload


async def search_then_fetch(client: Client, query: str) -> list[dict[str, Any]]:
    """OpenAI's flow: ``search``, then ``fetch`` of every result's id."""
    results = assert_search_shape(answer_of(await client.call_tool("search", {"query": query})))
    assert results, query
    fetched = []
    for hit in results:
        doc = assert_fetch_shape(answer_of(await client.call_tool("fetch", {"id": hit["id"]})))
        assert (doc["id"], doc["title"], doc["url"]) == (hit["id"], hit["title"], hit["url"])
        fetched.append(doc)
    return fetched


# -- recognising the client ----------------------------------------------------------------------

def test_openai_clients_are_told_by_name_or_title() -> None:
    assert is_openai_client("openai-mcp") and is_openai_client("openai-mcp/1.0.0") and is_openai_client("OpenAI-MCP")
    assert is_openai_client("something", "openai-mcp")
    assert not is_openai_client("openai-mcp-clone") and not is_openai_client(None) and not is_openai_client("claude")
    assert session_profile("auto", "openai-mcp") == "chatgpt" and session_profile("auto", "cursor") is None
    assert session_profile("chatgpt", "cursor") == "chatgpt" and session_profile("standard", "openai-mcp") is None


# -- OpenAI's client, in process -----------------------------------------------------------------

async def test_openai_client_lists_openais_search_and_fetch_beside_the_other_tools(kb, mode) -> None:
    async with Client(build_server(kb), mode=mode, client_info=OPENAI) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"search", "fetch", "get", "sources", "recent", "related"} <= set(tools)
    search, fetch = tools["search"], tools["fetch"]
    assert search.input_schema["properties"].keys() == {"query"} and search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["query"]["type"] == "string"
    assert fetch.input_schema["properties"].keys() == {"id"} and fetch.input_schema["required"] == ["id"]
    assert fetch.input_schema["properties"]["id"]["type"] == "string"
    items = search.output_schema["properties"]["results"]["items"]
    assert items["required"] == ["id", "title", "url"]
    assert fetch.output_schema["required"] == ["id", "title", "text", "url", "metadata"]
    assert search.annotations.read_only_hint is True and fetch.annotations.read_only_hint is True


async def test_openai_client_searches_then_fetches_each_result(kb, mode) -> None:
    async with Client(build_server(kb), mode=mode, client_info=OPENAI) as client:
        fetched = await search_then_fetch(client, "search engine Rust")
    tantivy = next(doc for doc in fetched if doc["metadata"]["source_id"] == "tantivy.md")
    assert tantivy["title"] == "Tantivy notes"
    assert tantivy["text"] == BODIES["tantivy.md"]
    assert tantivy["url"].startswith("file://") and tantivy["url"].endswith("/docs/tantivy.md")
    metadata = tantivy["metadata"]
    assert metadata["source"] == "filesystem:docs" and metadata["content_type"] == "text/markdown"
    assert metadata["truncated"] is False and metadata["total_chars"] == len(tantivy["text"])
    assert isinstance(metadata["updated_at"], str) and metadata["source_url"] == tantivy["url"]


async def test_fetch_carries_the_documents_own_metadata(kb) -> None:
    async with Client(build_server(kb), mode="legacy", client_info=OPENAI) as client:
        fetched = await search_then_fetch(client, "sandboxed Lua runtime")
    sandbox = next(doc for doc in fetched if doc["metadata"]["source_id"] == "lua/sandbox.md")
    assert sandbox["metadata"]["tags"] == ["lua", "security"]
    assert sandbox["text"].startswith("# Lua sandbox")


@pytest.mark.parametrize(("tool", "arguments", "code", "fragment"), [
    ("fetch", {"id": "0000000000000000"}, "not_found", "no document with id '0000000000000000'"),
    ("fetch", {}, "bad_request", "id is required"),
    ("fetch", {"id": "  "}, "bad_request", "id is required"),
    ("fetch", {"id": "x" * 201}, "bad_request", "too long"),
    ("search", {"query": ""}, "bad_request", "query is required"),
    ("search", {"query": 3}, "bad_request", "query is required"),
    ("search", {"query": "x", "limit": 3}, "bad_request", "unknown argument(s): limit"),
])
async def test_errors_are_clear_isError_results(kb, tool: str, arguments: dict[str, Any], code: str,
                                                fragment: str) -> None:
    async with Client(build_server(kb), mode="legacy", client_info=OPENAI) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None
    [block] = result.content
    error = json.loads(block.text)["error"]
    assert error["code"] == code and fragment in error["message"], error


async def test_a_query_nothing_matches_gives_no_results(kb) -> None:
    async with Client(build_server(kb), mode="legacy", client_info=OPENAI) as client:
        assert answer_of(await client.call_tool("search", {"query": "zyzzyva quuxplumber"})) == {"results": []}


# -- the profile setting ---------------------------------------------------------------------------

async def test_profile_chatgpt_gives_any_client_openais_shapes(tmp_path: Path, mode) -> None:
    async with opened(tmp_path, 'sync_on_start = false\nprofile = "chatgpt"') as harness:
        async with Client(build_server(harness), mode=mode, client_info=OTHER) as client:
            assert "fetch" in {tool.name for tool in (await client.list_tools()).tools}
            fetched = await search_then_fetch(client, "Claude Desktop")
    assert any(doc["text"] == BODIES["claude.md"] for doc in fetched)


async def test_profile_standard_gives_openais_client_the_standard_shapes(tmp_path: Path) -> None:
    async with opened(tmp_path, 'sync_on_start = false\nprofile = "standard"') as harness:
        async with Client(build_server(harness), mode="legacy", client_info=OPENAI) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            found = await client.call_tool("search", {"query": "Rust", "limit": 2})
    assert "fetch" not in names
    assert {"score", "snippet", "source"} <= found.structured_content["results"][0].keys()


async def test_other_clients_see_exactly_the_standard_tools_and_answers(tmp_path: Path, mode) -> None:
    """A normal client's tools/list and search answer under ``auto`` (the default) are byte for byte
    what ``standard`` serves (the same workspace opened twice), with no trace of ChatGPT's tools."""
    cfg = write_knowledge_base(tmp_path, server='sync_on_start = false\nprofile = "auto"')
    seen = []
    for profile in ("auto", "standard"):
        cfg.write_text(cfg.read_text(encoding="utf-8").replace('"auto"', f'"{profile}"'), encoding="utf-8")
        async with Harness.open(config_mod.load_file(cfg)) as harness:
            assert harness.config.server.profile == profile
            await harness.sync()
            for info in (OTHER, None):
                async with Client(build_server(harness), mode=mode, client_info=info) as client:
                    tools = await client.list_tools()
                    found = await client.call_tool("search", {"query": "search engine"})
                seen.append((tools.model_dump_json(by_alias=True, exclude_none=True),
                             found.model_dump_json(by_alias=True, exclude_none=True)))
    assert seen[0] == seen[2] and seen[1] == seen[3]
    assert '"fetch"' not in seen[0][0] and '"snippet"' in seen[0][1]


# -- links ---------------------------------------------------------------------------------------------

async def test_url_is_the_consoles_document_page_when_public_url_is_set(tmp_path: Path) -> None:
    async with opened(tmp_path, f'sync_on_start = false\npublic_url = "{PUBLIC}/"') as harness:
        async with Client(build_server(harness), mode="legacy", client_info=OPENAI) as client:
            fetched = await search_then_fetch(client, "Rust search engine")
    for doc in fetched:
        assert doc["url"] == PUBLIC + doc_href(doc["id"])
        assert doc["metadata"]["source_url"].startswith("file://")


async def test_url_falls_back_to_the_source_when_the_console_is_off(tmp_path: Path) -> None:
    root = tmp_path
    cfg = write_knowledge_base(root, server=f'sync_on_start = false\npublic_url = "{PUBLIC}"')
    cfg.write_text(cfg.read_text(encoding="utf-8") + "\n[ui]\nenabled = false\n", encoding="utf-8")
    async with Harness.open(config_mod.load_file(cfg)) as harness:
        await harness.sync()
        async with Client(build_server(harness), mode="legacy", client_info=OPENAI) as client:
            fetched = await search_then_fetch(client, "Rust")
    assert all(doc["url"].startswith("file://") for doc in fetched)


# -- a huge document -----------------------------------------------------------------------------------

async def test_fetch_of_a_huge_document_is_cut_at_gets_ceiling(tmp_path: Path) -> None:
    cfg = write_knowledge_base(tmp_path)
    line = "Quokkas hop about on the island all day long. "
    (tmp_path / "docs" / "huge.txt").write_text(line * (MAX_GET_CHARS // len(line) + 5000), encoding="utf-8")
    async with Harness.open(config_mod.load_file(cfg)) as harness:
        await harness.sync()
        async with Client(build_server(harness), mode="legacy", client_info=OPENAI) as client:
            [hit] = [h for h in assert_search_shape(answer_of(await client.call_tool("search", {"query": "quokkas"})))]
            doc = assert_fetch_shape(answer_of(await client.call_tool("fetch", {"id": hit["id"]})))
    metadata = doc["metadata"]
    assert metadata["truncated"] is True and metadata["total_chars"] > MAX_GET_CHARS
    body, _, note = doc["text"].rpartition("\n\n")
    assert len(body) <= MAX_GET_CHARS and body.startswith(line)
    assert note.startswith("[cut: characters 0-") and f"call `get` with id '{hit['id']}' and offset" in note


# -- an agent's scope ----------------------------------------------------------------------------------

async def test_a_served_agent_gets_fetch_only_when_it_may_get(tmp_path: Path) -> None:
    cfg = write_hostile_workspace(tmp_path, server='profile = "chatgpt"')
    async with Harness.open(config_mod.load_file(cfg)) as harness:
        await harness.sync()
        listed = {}
        for agent in ("reviewer", "responder"):  # tools: ["search"] / {"search", "get"}
            async with Client(build_server(harness, agent), mode="legacy") as client:
                listed[agent] = {tool.name for tool in (await client.list_tools()).tools}
                if agent == "reviewer":
                    with pytest.raises(MCPError, match="Unknown tool: fetch"):
                        await client.call_tool("fetch", {"id": "x"})
    assert listed["reviewer"] == {"search"} and listed["responder"] == {"search", "get", "fetch"}


# -- over the wire ---------------------------------------------------------------------------------------

async def test_openai_client_over_stdio(tmp_path: Path, child_env: dict[str, str]) -> None:
    async with opened(tmp_path):  # synced, then closed: the server reads what the sync wrote
        pass
    cfg = tmp_path / "ctx.toml"
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(cfg),
                                                                 "serve"], env=child_env, cwd=str(tmp_path))
    for mode in MODES:
        async with Client(params, mode=mode, client_info=OPENAI) as client:
            fetched = await search_then_fetch(client, "Rust search engine")
        assert any(doc["text"] == BODIES["tantivy.md"] for doc in fetched), mode


async def test_openai_client_over_http(tmp_path: Path, start_server: Any) -> None:
    """``ctx serve --http``'s app under uvicorn: OpenAI's client and another one side by side, on one
    server, in both protocol eras (the 2026-07-28 one names its client in every request's ``_meta``)."""
    cfg = write_knowledge_base(tmp_path, server=f'sync_on_start = false\npublic_url = "{PUBLIC}"')
    url = start_server(config_mod.load_file(cfg)).url + "/mcp"
    for mode in MODES:
        async with Client(url, mode=mode, client_info=OPENAI) as openai, \
                Client(url, mode=mode, client_info=OTHER) as other:
            assert {"fetch", "get"} <= {tool.name for tool in (await openai.list_tools()).tools}
            assert "fetch" not in {tool.name for tool in (await other.list_tools()).tools}
            fetched = await search_then_fetch(openai, "Rust search engine")
            found = (await other.call_tool("search", {"query": "Rust"})).structured_content
        assert any(doc["url"] == PUBLIC + doc_href(doc["id"]) and doc["text"] == BODIES["tantivy.md"]
                   for doc in fetched), mode
        assert "snippet" in found["results"][0], mode
    for doc in fetched:  # the console serves each url's page (reached here by its loopback address)
        page = httpx2.get(url.removesuffix("/mcp") + doc["url"].removeprefix(PUBLIC), timeout=30)
        assert page.status_code == 200 and html.escape(doc["title"]) in page.text, doc["url"]


@pytest.mark.slow
async def test_openai_client_signed_in_with_oauth_and_the_read_scope_searches_and_fetches(
        tmp_path: Path, child_env: dict[str, str]) -> None:
    """As ChatGPT connects to a server behind a tunnel: ``ctx serve --http`` with ``[server.oauth]`` on, a
    client registered and approved by the owner with ``read`` only; ``search`` and ``fetch`` need no more."""
    server = serve_oauth(tmp_path, child_env)
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            _client, tokens = await signed_in(http, server.url, scopes=())
        assert tokens["scope"] == "read"
        bearer = {"authorization": f"Bearer {tokens['access_token']}"}
        async with httpx2.AsyncClient(headers=bearer, timeout=30) as http:
            transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
            async with Client(transport, mode="legacy", client_info=OPENAI) as client:
                assert {"search", "fetch"} <= {tool.name for tool in (await client.list_tools()).tools}

                async def indexed() -> bool:  # the sync on start may still run
                    found = await client.call_tool("search", {"query": "quokka lighthouse"})
                    return bool(answer_of(found)["results"])

                await wait_for(indexed, "the note indexed by the sync on start", 60)
                [doc] = await search_then_fetch(client, "quokka lighthouse")
    finally:
        stop_process(server.process)
    assert doc["title"] == "Harbour" and doc["url"] == f"{server.url}/ui/doc?id={doc['id']}"
    assert "quokka" in doc["text"]


async def test_chatgpts_fetch_hides_a_lua_tool_of_that_name_from_openais_sessions_only(tmp_path: Path) -> None:
    cfg = write_knowledge_base(tmp_path)
    echo = (EXAMPLES / "lua" / "echo.lua").as_posix()
    cfg.write_text(cfg.read_text(encoding="utf-8") + f'\n[tools.script.fetch]\npath = "{echo}"\n', encoding="utf-8")
    async with Harness.open(config_mod.load_file(cfg)) as harness:
        await harness.sync()
        for info, builtin in ((OTHER, False), (OPENAI, True)):
            async with Client(build_server(harness), mode="legacy", client_info=info) as client:
                [fetch] = [tool for tool in (await client.list_tools()).tools if tool.name == "fetch"]
                called = await client.call_tool("fetch", {"id": "0000000000000000"} if builtin else {"text": "hi"})
            assert (list(fetch.input_schema["properties"]) == ["id"]) is builtin
            assert called.is_error is builtin  # ours: not_found; the Lua echo: its echo
            assert ('"not_found"' if builtin else "hi") in called.content[0].text
