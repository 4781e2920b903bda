"""The original Context Harness's documented REST and MCP examples, replayed through the real
Starlette app and the real MCP client, checking the documented response shapes field by field; plus
the parity gaps of issue 19: ``ctx tool list --json`` is the ``GET /tools/list`` body (agent tools
included), the HTTP start-up lines list the Lua tools with their routes, and agents' ``system``
messages are accepted and rendered for MCP legally."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.http import build_app, startup_lines
from context_harness.server.mcp import build_server
from support.cli import run_ctx
from support.paths import EXAMPLES
from support.workspace import write_files, write_served

pytestmark = pytest.mark.anyio

BRIEFER_LUA = """
agent = {description = "Briefs with a system note", tools = {"search"}}
function agent.resolve(args, config, context)
  return {system = "You brief people.",
          messages = {{role = "system", content = "Answer in one paragraph."},
                      {role = "assistant", content = "Ready to brief."}}}
end
return agent
"""

EXTRA = f"""
[tools.script.echo]
path = "{(EXAMPLES / "lua").as_posix()}/echo.lua"

[tools.script.jira_create]
path = "{(EXAMPLES / "lua").as_posix()}/echo.lua"
token = "${{CTX_COMPAT_TEST_UNSET_TOKEN}}"

[agents.script.briefer]
path = "briefer.lua"
"""


@pytest.fixture
def original_config(tmp_path: Path) -> Path:
    """The served workspace (docs, TOML/Markdown/Lua agents), a Lua tool, a Lua agent with a system
    message, and a Lua tool whose table needs an unset variable."""
    config = write_served(tmp_path)
    write_files(tmp_path, {"briefer.lua": BRIEFER_LUA})
    config.write_text(config.read_text(encoding="utf-8") + EXTRA, encoding="utf-8")
    return config


@pytest.fixture
async def original(original_config: Path) -> Any:
    async with Harness.open(config_mod.load_file(original_config)) as harness:
        await harness.sync()
        yield harness


async def rest(harness: Any, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    app = build_app(harness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.request(method, path, **kwargs)


# -- the REST reference, request by request ------------------------------------------------------

async def test_original_rest_search(original) -> None:
    response = await rest(original, "POST", "/tools/search", json={"query": "runbook search", "mode": "keyword",
                                                                    "limit": 5})
    assert response.status_code == 200
    results = response.json()["results"]
    assert results and len(results) <= 5
    for hit in results:
        assert {"id", "source", "source_id", "title", "score", "snippet", "source_url", "updated_at"} <= set(hit)
        assert isinstance(hit["id"], str) and hit["id"] == hit["id"].lower()
        assert hit["source"] == "filesystem:docs" and isinstance(hit["score"], float)
        assert hit["source_url"].startswith("file://")
    only = await rest(original, "POST", "/tools/search", json={"query": "severity", "source": "filesystem:docs"})
    assert only.status_code == 200 and {h["source"] for h in only.json()["results"]} == {"filesystem:docs"}


async def test_original_rest_get(original) -> None:
    [hit] = (await rest(original, "POST", "/tools/search", json={"query": "severity policy", "limit": 1})).json()[
        "results"]
    response = await rest(original, "POST", "/tools/get", json={"id": hit["id"]})
    assert response.status_code == 200
    doc = response.json()
    assert {"id", "source", "source_id", "source_url", "title", "body", "updated_at", "created_at", "author",
            "content_type", "metadata", "chunks"} <= set(doc)
    assert (doc["id"], doc["source_id"], doc["title"]) == (hit["id"], "severity.md", "Severity policy")
    assert doc["body"].startswith("# Severity policy") and doc["created_at"] and doc["updated_at"]
    assert [set(c) >= {"index", "text"} for c in doc["chunks"]] == [True] * len(doc["chunks"])


async def test_original_rest_sources_list_call_agents_health(original) -> None:
    sources = (await rest(original, "GET", "/tools/sources")).json()["sources"]
    [docs] = sources
    assert {"name", "configured", "healthy", "notes", "document_count", "chunk_count", "last_sync"} <= set(docs)
    assert (docs["name"], docs["document_count"], docs["chunk_count"]) == ("filesystem:docs", 2, 2)

    listed = (await rest(original, "GET", "/tools/list")).json()
    by_name = {tool["name"]: tool for tool in listed["tools"]}
    assert [set(tool) for tool in listed["tools"]] == [{"name", "description", "builtin", "parameters"}] * len(by_name)
    assert {"search", "get", "sources", "echo", "agent_list", "agent_get", "agent_inject"} <= set(by_name)
    assert by_name["search"]["builtin"] is True and by_name["echo"]["builtin"] is False
    echo = by_name["echo"]["parameters"]
    assert echo["type"] == "object" and echo["required"] == ["text"] and echo["properties"]["text"]["type"] == "string"

    called = await rest(original, "POST", "/tools/echo", json={"text": "hi"})
    assert called.status_code == 200 and set(called.json()) == {"result"}
    unknown = await rest(original, "POST", "/tools/nope", json={})
    assert unknown.status_code == 404 and set(unknown.json()["error"]) == {"code", "message"}
    invalid = await rest(original, "POST", "/tools/echo", json={})
    assert invalid.status_code == 400 and invalid.json()["error"]["code"] == "bad_request"

    agents = (await rest(original, "GET", "/agents/list")).json()["agents"]
    assert [set(a) for a in agents] == [{"name", "description", "tools", "source", "arguments"}] * len(agents)
    assert {a["name"]: a["source"] for a in agents}["briefer"] == "lua"
    prompt = await rest(original, "POST", "/agents/responder/prompt", json={"service": "payments-api"})
    assert prompt.status_code == 200 and set(prompt.json()) == {"system", "tools", "messages"}
    assert [set(m) for m in prompt.json()["messages"]] == [{"role", "content"}]
    health = (await rest(original, "GET", "/health")).json()
    assert health["status"] == "ok"


# -- the MCP methods the original lists ------------------------------------------------------------

async def test_original_mcp_tools_and_prompts(original) -> None:
    async with Client(build_server(original)) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"search", "get", "sources", "echo", "agent_inject"} <= tools and "jira_create" not in tools
        searched = await client.call_tool("search", {"query": "runbook", "mode": "keyword", "limit": 5})
        assert not searched.is_error and searched.structured_content["results"]
        echoed = await client.call_tool("echo", {"text": "hi"})
        assert set(echoed.structured_content) == {"result"}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert {"briefer", "responder", "reviewer", "debugger"} <= prompts


# -- system-role messages --------------------------------------------------------------------------

async def test_system_messages_accepted_everywhere_and_folded_for_mcp(original) -> None:
    prompt = (await rest(original, "POST", "/agents/briefer/prompt", json={})).json()
    assert prompt["messages"] == [{"role": "system", "content": "Answer in one paragraph."},
                                  {"role": "assistant", "content": "Ready to brief."}]
    async with Client(build_server(original)) as client:
        got = await client.get_prompt("briefer", {})
        assert [m.role for m in got.messages] == ["user", "assistant"]  # MCP prompts have no system role
        assert got.messages[0].content.text.startswith(
            '<instructions agent="briefer">\nYou brief people.\n\nAnswer in one paragraph.\n</instructions>')
        assert got.messages[1].content.text == "Ready to brief."
        injected = await client.call_tool("agent_inject", {"name": "briefer"})
        assert not injected.is_error
        assert "You brief people.\n\nAnswer in one paragraph.\n\n## Context\n\nReady to brief.\n" in \
            injected.structured_content["compiled"]
        structured = await client.call_tool("agent_inject", {"name": "briefer", "format": "structured"})
        assert structured.structured_content["messages"][0] == {"role": "system",
                                                                "content": "Answer in one paragraph."}


# -- parity gaps -----------------------------------------------------------------------------------

async def test_tool_list_json_is_the_rest_body(original, original_config) -> None:
    body = (await rest(original, "GET", "/tools/list")).json()
    done = run_ctx("tool", "list", "--json", "--config", str(original_config), cwd=original_config.parent)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == body
    names = [tool["name"] for tool in body["tools"]]
    assert {"agent_list", "agent_get", "agent_inject", "echo"} <= set(names)
    [missing] = body["unavailable"]
    assert missing["name"] == "jira_create" and missing["variables"] == ["CTX_COMPAT_TEST_UNSET_TOKEN"]
    scoped = (await rest(original, "GET", "/tools/list?agent=reviewer")).json()
    assert [tool["name"] for tool in scoped["tools"]] == ["search"] and "unavailable" not in scoped


async def test_http_startup_lines_list_the_lua_tools_with_routes(original) -> None:
    lines = startup_lines(original, "http://127.0.0.1:7331")
    assert lines[0] == "Loaded 1 Lua tool(s):"
    assert lines[1].startswith("  POST /tools/echo — Echo the given text back")
    assert lines[2].startswith("  unavailable: jira_create — environment variable CTX_COMPAT_TEST_UNSET_TOKEN")
    assert lines[3:5] == ["MCP server listening on http://127.0.0.1:7331",
                          "  MCP endpoint: http://127.0.0.1:7331/mcp"]
    scoped = startup_lines(original, "http://127.0.0.1:7331", agent="reviewer")
    assert scoped[0] == "MCP server listening on http://127.0.0.1:7331"  # its tools hold no Lua tool
