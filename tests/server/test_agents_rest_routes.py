"""REST: ``GET /agents/list`` and ``POST /agents/{name}/prompt`` on the real Starlette app, every
error code, ``/tools/list?agent=NAME``, and the same resolved prompt as MCP ``prompts/get``."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp import Client

from context_harness.server.http import build_app
from context_harness.server.mcp import build_server

pytestmark = pytest.mark.anyio


async def rest(harness: Any, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    app = build_app(harness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.request(method, path, **kwargs)


async def test_agents_rest_list(served) -> None:
    response = await rest(served, "GET", "/agents/list")
    assert response.status_code == 200
    agents = response.json()["agents"]
    assert [a["name"] for a in agents] == ["debugger", "responder", "reviewer"]
    assert agents[2] == {"name": "reviewer", "description": "Reviews code against the conventions.",
                         "tools": ["search"], "source": "toml",
                         "arguments": [{"name": "language", "description": "Language", "required": True}]}
    assert {a["name"]: a["source"] for a in agents} == {"debugger": "markdown", "responder": "lua", "reviewer": "toml"}
    assert agents[0]["tools"] == ["Read", "Edit", "Bash", "Grep", "Glob"]


@pytest.mark.parametrize("body", [{"language": "lua"}, {"arguments": {"language": "lua"}}])
async def test_agents_rest_prompt_flat_or_wrapped(served, body) -> None:
    response = await rest(served, "POST", "/agents/reviewer/prompt", json=body)
    assert response.status_code == 200
    payload = response.json()
    assert set(payload) == {"system", "tools", "messages"}
    assert payload["system"].startswith("You review lua code.\n\n## Active Skills\n\n### checklist")
    assert payload["tools"] == ["search"] and payload["messages"] == []


async def test_agents_rest_prompt_matches_mcp(served) -> None:
    response = await rest(served, "POST", "/agents/responder/prompt", json={"service": "search"})
    payload = response.json()
    assert payload["messages"] == [{"role": "user", "content": "Found 2 documents."}]
    async with Client(build_server(served)) as client:
        got = await client.get_prompt("responder", {"service": "search"})
    assert got.messages[0].content.text.startswith(f'<instructions agent="responder">\n{payload["system"]}\n')
    assert got.messages[1].content.text == payload["messages"][0]["content"]


@pytest.mark.parametrize(("path", "body", "status", "code", "fragment"), [
    ("/agents/nobody/prompt", {}, 404, "not_found", "unknown agent 'nobody'"),
    ("/agents/reviewer/prompt", {}, 400, "bad_request", "missing required argument 'language'"),
    ("/agents/reviewer/prompt", {"language": "cobol"}, 400, "bad_request", "must be one of"),
    ("/agents/reviewer/prompt", {"language": "go", "x": "1"}, 400, "bad_request", "unknown argument 'x'"),
    ("/agents/reviewer/prompt", ["go"], 400, "bad_request", "JSON object"),
    ("/agents/reviewer/prompt", b"{not json", 400, "bad_request", "not valid JSON"),
    ("/agents/responder/prompt", {"service": "x", "mode": "error"}, 500, "agent_error", "deliberate failure"),
    ("/agents/responder/prompt", {"service": "x", "mode": "bad"}, 500, "agent_error", "invalid prompt"),
    ("/agents/responder/prompt", {"service": "x", "mode": "spin"}, 408, "timeout", "timed out"),
])
async def test_agents_rest_prompt_errors(served, path, body, status, code, fragment) -> None:
    kwargs = ({"content": body, "headers": {"content-type": "application/json"}} if isinstance(body, bytes)
              else {"json": body})
    response = await rest(served, "POST", path, **kwargs)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and fragment in error["message"]
    assert "Traceback" not in response.text


async def test_agents_rest_methods_and_tool_scope(served) -> None:
    assert (await rest(served, "GET", "/agents/reviewer/prompt")).status_code == 405
    scoped = await rest(served, "GET", "/tools/list", params={"agent": "responder"})
    assert [t["name"] for t in scoped.json()["tools"]] == ["search", "get"]
    everything = await rest(served, "GET", "/tools/list")
    assert {"agent_list", "agent_get", "agent_inject"} <= {t["name"] for t in everything.json()["tools"]}
    unknown = await rest(served, "GET", "/tools/list", params={"agent": "nobody"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    inject = await rest(served, "POST", "/tools/agent_inject", json={"name": "reviewer", "format": "structured",
                                                                      "arguments": {"language": "go"}})
    assert inject.status_code == 200 and inject.json()["skills"][0]["name"] == "checklist"
    bad_format = await rest(served, "POST", "/tools/agent_inject", json={"name": "reviewer", "format": "x"})
    assert bad_format.status_code == 400


async def test_agents_rest_server_scoped_to_one_agent(served) -> None:
    app = build_app(served, agent="responder")
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        listed = (await client.get("/tools/list")).json()["tools"]
        assert [t["name"] for t in listed] == ["search", "get"]
        assert (await client.post("/tools/sources", json={})).status_code == 404
        other = await client.get("/tools/list", params={"agent": "reviewer"})
        assert other.status_code == 404 and "serves agent 'responder' only" in other.json()["error"]["message"]
