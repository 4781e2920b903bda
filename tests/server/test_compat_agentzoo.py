"""AgentZoo compatibility (``[server] compat = ["agentzoo"]``): AgentZoo's documented tool calls and
workflows replayed through the real MCP client (both protocol eras) and REST, checking its response
shapes field by field: ``agent_zoo_list_agents``, ``agent_zoo_get_agent``, ``agent_zoo_inject``
(compiled and structured), its error results, and ``agentId`` on ``agent_inject``/``agent_get``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.http import build_app
from context_harness.server.mcp import build_server
from support.results import error_of
from support.workspace import write_served

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
ZOO_TOOLS = {"agent_zoo_list_agents", "agent_zoo_get_agent", "agent_zoo_inject"}
REVIEWER_COMPILED = ("You are now reviewer. Use agentId=reviewer for all agent_zoo tool usage.\n\n"
                     "You review go code.\n\n---\n\n## Active Skills\n\n### checklist\nCheck the tests.")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
async def zoo(tmp_path: Path) -> Any:
    config = write_served(tmp_path, server='compat = ["agentzoo"]')
    async with Harness.open(config_mod.load_file(config)) as harness:
        yield harness


async def call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """What an AgentZoo client reads: isError and the JSON of the text block."""
    result = await client.call_tool(name, arguments)
    [block] = result.content
    return bool(result.is_error), json.loads(block.text)


async def test_agentzoo_tools_are_listed_with_agentzoo_schemas(zoo, mode) -> None:
    async with Client(build_server(zoo), mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert ZOO_TOOLS <= set(tools)
    inject = tools["agent_zoo_inject"].input_schema
    assert inject["required"] == ["agentId"]
    assert inject["properties"]["agentId"]["type"] == "string"
    assert inject["properties"]["format"]["enum"] == ["compiled", "structured"]
    assert tools["agent_zoo_list_agents"].input_schema == {"type": "object", "properties": {}, "required": []}
    assert tools["agent_zoo_get_agent"].input_schema["required"] == ["agentId"]
    assert tools["agent_zoo_list_agents"].annotations.read_only_hint is True


async def test_agentzoo_workflow_a_list_then_inject_compiled(zoo, mode) -> None:
    """Workflow A: list the agents, inject one into a fresh chat (compiled, the default format)."""
    async with Client(build_server(zoo), mode=mode) as client:
        error, listed = await call(client, "agent_zoo_list_agents", {})
        assert not error
        assert listed == {"agents": [{"id": "debugger", "name": "debugger"}, {"id": "responder", "name": "responder"},
                                     {"id": "reviewer", "name": "reviewer"}]}
        error, injected = await call(client, "agent_zoo_inject", {"agentId": "reviewer",
                                                                  "arguments": {"language": "go"}})
        assert not error
        assert list(injected) == ["agentId", "agentName", "prompt"]
        assert injected == {"agentId": "reviewer", "agentName": "reviewer", "prompt": REVIEWER_COMPILED}


async def test_agentzoo_compiled_without_skills_has_no_skills_section(zoo, mode) -> None:
    async with Client(build_server(zoo), mode=mode) as client:
        error, injected = await call(client, "agent_zoo_inject", {"agentId": "debugger", "format": "compiled"})
    assert not error
    prompt = injected["prompt"]
    assert prompt.startswith("You are now debugger. Use agentId=debugger for all agent_zoo tool usage.\n\n"
                             "You are an expert debugger specializing in root cause analysis.")
    assert "Active Skills" not in prompt and "---" not in prompt


async def test_agentzoo_only_enabled_skills(tmp_path: Path) -> None:
    config = write_served(tmp_path, server='compat = ["agentzoo"]')
    (tmp_path / "skills/style/SKILL.md").parent.mkdir(parents=True)
    (tmp_path / "skills/style/SKILL.md").write_text("---\nname: style\ndescription: Style.\n---\nUse PEP 8.\n")
    text = config.read_text().replace('skills = ["checklist"]', 'skills = ["checklist", "style"]\n'
                                      'disabled_skills = ["checklist"]')
    config.write_text(text)
    async with Harness.open(config_mod.load_file(config)) as harness, Client(build_server(harness)) as client:
        _, compiled = await call(client, "agent_zoo_inject", {"agentId": "reviewer", "arguments": {"language": "go"}})
        _, structured = await call(client, "agent_zoo_inject", {"agentId": "reviewer", "format": "structured",
                                                                "arguments": {"language": "go"}})
        _, raw = await call(client, "agent_zoo_get_agent", {"agentId": "reviewer"})
    assert compiled["prompt"].endswith("---\n\n## Active Skills\n\n### style\nUse PEP 8.")
    assert "checklist" not in compiled["prompt"]
    assert structured["skills"] == [{"id": "style", "name": "style", "description": "Use PEP 8."}]
    assert raw["skills"] == [{"id": "checklist", "name": "checklist", "description": "Check the tests.", "enabled": False},
                             {"id": "style", "name": "style", "description": "Use PEP 8.", "enabled": True}]


async def test_agentzoo_workflow_c_structured(zoo, mode) -> None:
    """Workflow C: inspect an agent's skills before using it (structured)."""
    async with Client(build_server(zoo), mode=mode) as client:
        error, structured = await call(client, "agent_zoo_inject", {"agentId": "reviewer", "format": "structured",
                                                                    "arguments": {"language": "lua"}})
    assert not error
    assert list(structured) == ["agentId", "agentName", "systemPrompt", "skills"]
    assert structured == {"agentId": "reviewer", "agentName": "reviewer", "systemPrompt": "You review lua code.",
                          "skills": [{"id": "checklist", "name": "checklist", "description": "Check the tests."}]}


async def test_agentzoo_get_agent_is_the_full_configuration(zoo, mode) -> None:
    async with Client(build_server(zoo), mode=mode) as client:
        error, agent = await call(client, "agent_zoo_get_agent", {"agentId": "reviewer"})
    assert not error
    assert agent == {
        "id": "reviewer", "name": "reviewer", "description": "Reviews code against the conventions.",
        "systemPrompt": "You review {{language}} code.",
        "skills": [{"id": "checklist", "name": "checklist", "description": "Check the tests.", "enabled": True}],
        "tools": ["search"], "source": "toml",
        "arguments": [{"name": "language", "description": "Language", "required": True,
                       "enum": ["python", "lua", "go"]}]}


@pytest.mark.parametrize(("name", "arguments", "code", "message"), [
    ("agent_zoo_inject", {"agentId": "agent-1"}, "AGENT_NOT_FOUND", "Agent with ID 'agent-1' not found."),
    ("agent_zoo_get_agent", {"agentId": "xyz"}, "AGENT_NOT_FOUND", "Agent with ID 'xyz' not found."),
    ("agent_zoo_inject", {"agentId": "reviewer", "format": "yaml"}, "INVALID_FORMAT",
     "Unknown format 'yaml'. Use 'compiled' or 'structured'."),
    ("agent_zoo_inject", {}, "INVALID_ARGUMENTS", "agentId is required."),
    ("agent_zoo_get_agent", {"agentId": "  "}, "INVALID_ARGUMENTS", "agentId is required."),
    ("agent_zoo_inject", {"agentId": "reviewer", "arguments": "go"}, "INVALID_ARGUMENTS",
     "arguments must be an object of the agent's arguments."),
])
async def test_agentzoo_error_results(zoo, mode, name, arguments, code, message) -> None:
    async with Client(build_server(zoo), mode=mode) as client:
        error, payload = await call(client, name, arguments)
    assert error is True
    assert payload == {"error": True, "code": code, "message": message}


async def test_agentzoo_agent_failures_keep_the_shape(zoo) -> None:
    async with Client(build_server(zoo)) as client:
        error, missing = await call(client, "agent_zoo_inject", {"agentId": "reviewer"})
        _, failing = await call(client, "agent_zoo_inject", {"agentId": "responder",
                                                             "arguments": {"service": "x", "mode": "error"}})
        _, slow = await call(client, "agent_zoo_inject", {"agentId": "responder",
                                                          "arguments": {"service": "x", "mode": "spin"}})
    assert error is True and missing["error"] is True and missing["code"] == "INVALID_ARGUMENTS"
    assert "language" in missing["message"]
    assert (failing["error"], failing["code"]) == (True, "AGENT_ERROR")
    assert (slow["error"], slow["code"]) == (True, "TIMEOUT")


async def test_agentzoo_over_rest_same_bodies(zoo) -> None:
    app = build_app(zoo)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        listed = await client.post("/tools/agent_zoo_list_agents", json={})
        injected = await client.post("/tools/agent_zoo_inject", json={"agentId": "reviewer",
                                                                      "arguments": {"language": "go"}})
        missing = await client.post("/tools/agent_zoo_inject", json={"agentId": "nobody"})
        bad = await client.post("/tools/agent_zoo_inject", json={"agentId": "reviewer", "format": "x"})
    assert listed.status_code == 200 and [a["id"] for a in listed.json()["agents"]][-1] == "reviewer"
    assert injected.json() == {"agentId": "reviewer", "agentName": "reviewer", "prompt": REVIEWER_COMPILED}
    assert missing.status_code == 404
    assert missing.json() == {"error": True, "code": "AGENT_NOT_FOUND", "message": "Agent with ID 'nobody' not found."}
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_FORMAT"


async def test_agentzoo_is_off_by_default_but_agent_id_always_works(served, mode) -> None:
    async with Client(build_server(served), mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert not names & ZOO_TOOLS
        by_id = await client.call_tool("agent_get", {"agentId": "reviewer"})
        by_name = await client.call_tool("agent_get", {"name": "reviewer"})
        assert by_id.structured_content == by_name.structured_content
        assert by_id.structured_content["name"] == "reviewer"
        injected = await client.call_tool("agent_inject", {"agentId": "reviewer", "arguments": {"language": "go"}})
        assert injected.structured_content["name"] == "reviewer"
        assert injected.structured_content["compiled"].startswith('You are now acting as the agent "reviewer".')
        neither = await client.call_tool("agent_inject", {})
        assert error_of(neither)["code"] == "bad_request"
        assert "agentId" in error_of(neither)["message"]
        both = await client.call_tool("agent_get", {"name": "reviewer", "agentId": "debugger"})
        assert error_of(both)["code"] == "bad_request"
