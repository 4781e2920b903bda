"""In-memory MCP tests: a real Harness, the real SDK client, both protocol eras."""

from __future__ import annotations

import json
import logging

import anyio
import mcp.types as t
import pytest
from mcp import Client, MCPError

from context_harness.core.harness import Harness
from context_harness.errors import NotFound
from context_harness.extensions import collect_extensions
from context_harness.server.mcp import build_server
from context_harness.tools.base import FunctionTool
from support.results import error_of

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def server(harness):
    return build_server(harness)


async def first_id(client: Client, query: str) -> str:
    result = await client.call_tool("search", {"query": query})
    return result.structured_content["results"][0]["id"]


async def test_initialize_describes_the_knowledge_base(server, mode):
    async with Client(server, mode=mode) as client:
        assert "4 documents" in client.instructions
        assert "filesystem:docs" in client.instructions
        assert "semantic search is disabled in the config" in client.instructions
        caps = client.server_capabilities
        assert caps.tools.list_changed and caps.prompts.list_changed and caps.resources.list_changed
        assert client.server_info.name == "context-harness"


async def test_tools_list_schemas_and_annotations(server, mode):
    async with Client(server, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search", "get", "sources", "recent", "related"}
    for tool in tools.values():
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.open_world_hint is False
        assert tool.output_schema["type"] == "object"
        assert tool.description
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert "description" in search["properties"]["query"]
    assert set(search["properties"]) >= {"query", "mode", "limit", "filters", "source"}
    assert search["additionalProperties"] is False
    assert tools["get"].input_schema["required"] == ["id"]
    assert "results" in tools["search"].output_schema["properties"]


async def test_search_returns_structured_content_and_text(server, mode):
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("search", {"query": "rust search engine", "limit": 2})
    assert not result.is_error
    hits = result.structured_content["results"]
    assert 1 <= len(hits) <= 2
    assert hits[0]["title"] == "Tantivy notes"
    assert set(hits[0]) == {"id", "score", "title", "source", "source_id", "updated_at", "snippet", "source_url",
                            "chunk", "heading", "version"}
    assert hits[0]["chunk"] == 0 and hits[0]["heading"] == "Tantivy notes"
    text = result.content[0].text
    assert "Tantivy notes" in text and hits[0]["id"] in text


async def test_search_filters_and_source_shorthand(server, mode):
    async with Client(server, mode=mode) as client:
        tagged = await client.call_tool("search", {"query": "sandbox scripts", "filters": {"tags": ["lua"]}})
        other = await client.call_tool("search", {"query": "tantivy", "source": "git"})
    assert [r["source_id"] for r in tagged.structured_content["results"]] == ["lua/sandbox.md"]
    assert other.structured_content["results"] == []
    assert "No documents matched" in other.content[0].text


@pytest.mark.parametrize("arguments, fragment", [
    ({}, "query: required"),
    ({"query": ""}, "query"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "limit": 500}, "limit"),
    ({"query": "x", "bogus": 1}, "bogus: unknown argument"),
    ({"query": "x", "mode": "fuzzy"}, "mode"),
    ({"query": "x", "filters": {"since": "yesterday"}}, "since"),
    ({"query": 42}, "query"),
])
async def test_search_bad_arguments_are_tool_errors(server, mode, arguments, fragment):
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("search", arguments)
    error = error_of(result)
    assert error["code"] == "bad_request"
    assert fragment in error["message"]


async def test_semantic_search_without_embeddings(server, mode):
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("search", {"query": "meaning", "mode": "semantic"})
    assert error_of(result)["code"] == "embeddings_disabled"


async def test_get_document(server, mode):
    async with Client(server, mode=mode) as client:
        doc_id = await first_id(client, "claude desktop")
        result = await client.call_tool("get", {"id": doc_id})
    assert not result.is_error
    doc = result.structured_content
    assert doc["id"] == doc_id and doc["title"] == "Connecting Claude Desktop"
    assert "claude_desktop_config.json" in doc["body"]
    assert doc["chunks"] and doc["chunks"][0]["index"] == 0
    assert result.content[0].text.startswith("# Connecting Claude Desktop")


@pytest.mark.parametrize("arguments, code", [
    ({"id": "0000000000000000"}, "not_found"),
    ({}, "bad_request"),
    ({"id": ""}, "bad_request"),
    ({"id": "a", "extra": True}, "bad_request"),
])
async def test_get_errors(server, mode, arguments, code):
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("get", arguments)
    assert error_of(result)["code"] == code


async def test_sources(server, mode):
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("sources", {})
        bad = await client.call_tool("sources", {"verbose": True})
    [source] = result.structured_content["sources"]
    assert source["name"] == "filesystem:docs" and source["document_count"] == 4 and source["healthy"]
    assert "filesystem:docs: 4 documents" in result.content[0].text
    assert error_of(bad)["code"] == "bad_request"


async def test_unknown_tool_is_a_protocol_error(server, mode):
    async with Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("nope", {})
    assert info.value.code == t.INVALID_PARAMS
    assert "nope" in info.value.message


def function_tool(name: str, run) -> FunctionTool:
    return FunctionTool(name=name, title=None, description=name, input_schema={"type": "object"}, run=run,
                        annotations={}, builtin=False)


async def test_unexpected_exception_is_logged_never_echoed(config, mode, caplog):
    async def explode(arguments):
        raise RuntimeError("secret database path /etc/shadow")

    extensions = collect_extensions(tools=[function_tool("explode", explode)], discover=False)
    with caplog.at_level(logging.ERROR, logger="context_harness.errors"):
        async with Harness.open(config, extensions) as harness, Client(build_server(harness), mode=mode) as client:
            result = await client.call_tool("explode", {})
    assert error_of(result)["code"] == "internal"
    assert "secret" not in result.content[0].text
    assert any(r.exc_info and "secret" in str(r.exc_info[1]) for r in caplog.records)


async def test_document_template_reads_markdown(server, mode):
    async with Client(server, mode=mode) as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert [tpl.uri_template for tpl in templates] == ["ctx://documents/{id}"]
        doc_id = await first_id(client, "lua sandbox")
        listed = (await client.list_resources()).resources  # no agents here: the documents, by id
        assert f"ctx://documents/{doc_id}" in [r.uri for r in listed]
        assert [r.uri for r in listed] == sorted(r.uri for r in listed)
        assert {r.mime_type for r in listed} == {"text/markdown"}
        assert next(r for r in listed if r.uri.endswith(doc_id)).name == "Lua sandbox"
        result = await client.read_resource(f"ctx://documents/{doc_id}")
    [content] = result.contents
    assert content.mime_type == "text/markdown"
    assert content.text.startswith("# Lua sandbox")
    assert f"**id**: {doc_id}" in content.text
    assert "**source**: filesystem:docs" in content.text
    assert "instruction hooks" in content.text


@pytest.mark.parametrize("uri", ["ctx://documents/0000000000000000", "ctx://documents/", "file:///etc/passwd",
                                 "ctx://elsewhere/x"])
async def test_unknown_resources_are_protocol_errors(server, mode, uri):
    async with Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as info:
            await client.read_resource(uri)
    assert info.value.code == t.INVALID_PARAMS
    assert "Traceback" not in info.value.message


class Reviewer:
    """A Python agent with one required argument, registered in code."""

    name = "reviewer"
    description = "Reviews code"
    arguments = [{"name": "topic", "description": "What to review", "required": True}]

    def resolve(self, arguments, context):
        return f"You are a reviewer. Topic: {arguments['topic']}"


async def test_agents_are_prompts_and_resources(config, mode):
    extensions = collect_extensions(agents=[Reviewer()], discover=False)
    async with Harness.open(config, extensions) as harness, Client(build_server(harness), mode=mode) as client:
        [prompt] = (await client.list_prompts()).prompts
        assert prompt.name == "reviewer" and prompt.arguments[0].required
        got = await client.get_prompt("reviewer", {"topic": "lua"})
        assert "Topic: lua" in got.messages[0].content.text
        with pytest.raises(MCPError):
            await client.get_prompt("reviewer", {})
        with pytest.raises(MCPError):
            await client.get_prompt("nobody", {})
        [resource] = (await client.list_resources()).resources
        assert resource.uri == "agent://reviewer"
        definition = json.loads((await client.read_resource("agent://reviewer")).contents[0].text)
        assert definition["name"] == "reviewer"


async def test_core_changes_notify_legacy_clients(harness, config_path):
    seen: list[object] = []
    arrived = anyio.Event()

    async def on_message(message):
        if isinstance(message, t.ToolListChangedNotification):
            seen.append(message)
            arrived.set()

    (config_path.parent / "echo.lua").write_text(
        'tool = {name = "echo", description = "Echo"}\n'
        "function tool.execute(params, context) return params end\nreturn tool\n", encoding="utf-8")
    async with harness.serving(reload_interval=0.05), Client(build_server(harness), mode="legacy",
                                                             message_handler=on_message) as client:
        await client.list_tools()
        with config_path.open("a", encoding="utf-8") as out:
            out.write('\n[tools.script.echo]\npath = "echo.lua"\n')
        with anyio.fail_after(5):
            await arrived.wait()
        names = [tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools]
        assert "echo" in names
        result = await client.call_tool("echo", {})
        assert result.is_error is not True


async def test_agent_scope(config):
    class Reader(Reviewer):
        name = "reader"
        tools = ["search"]

    extensions = collect_extensions(agents=[Reader()], discover=False)
    async with Harness.open(config, extensions) as harness:
        async with Client(build_server(harness, agent="reader")) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["search"]
            with pytest.raises(MCPError):
                await client.call_tool("get", {"id": "x"})
        with pytest.raises(NotFound):
            build_server(harness, agent="writer")
    async with Harness.open(config) as harness:
        with pytest.raises(NotFound):
            build_server(harness, agent="reader")
