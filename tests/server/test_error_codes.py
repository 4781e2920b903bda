"""The error table decides every code a client sees: MCP protocol errors (the real SDK client, in
memory), ``isError`` results, REST statuses and bodies and the JSON-RPC errors of ``POST /mcp`` (the
real app under uvicorn). An unexpected exception is ``internal`` (``-32603``, HTTP 500), never
``-32602``, and its text never reaches the client."""

from __future__ import annotations

import logging
from typing import Any

import httpx2
import mcp.types as t
import pytest
from mcp import Client, MCPError

from context_harness.core.harness import Harness
from context_harness.errors import (
    AgentError,
    BadRequest,
    InternalError,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    ParseError,
    UnknownTool,
    outcome,
)
from context_harness.extensions import collect_extensions
from context_harness.server.http import build_app
from context_harness.server.mcp import build_server
from context_harness.tools.base import FunctionTool
from support.results import error_of

pytestmark = pytest.mark.anyio
SECRET = "secret-path /etc/shadow"
INTERNAL = outcome(InternalError()).jsonrpc_code


@pytest.fixture(params=["legacy", "auto"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


class Failing:
    """A Python agent whose resolving fails (the core turns that into ``agent_error``)."""

    name = "failing"
    description = "Fails"
    arguments = [{"name": "topic", "description": "What about", "required": False}]

    def resolve(self, arguments: dict[str, Any], context: Any) -> Any:
        raise RuntimeError(SECRET)


async def explode(arguments: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError(SECRET)


EXPLODE = FunctionTool(name="explode", title=None, description="explode", input_schema={"type": "object"},
                       run=explode, annotations={}, builtin=False)


class Faulty(Harness):
    """A Harness whose agent catalog breaks unexpectedly (a bug, say) under completion and listing."""

    def complete_agent_argument(self, agent: str, argument: str, prefix: str) -> list[str]:
        raise RuntimeError(SECRET)

    def agent_resources(self, cursor: str | None = None, numeric: bool = False) -> dict[str, Any]:
        raise RuntimeError(SECRET)


@pytest.fixture
async def extended(config: Any) -> Any:
    extensions = collect_extensions(agents=[Failing()], tools=[EXPLODE], discover=False)
    async with Harness.open(config, extensions) as harness:
        await harness.sync()
        yield harness


async def test_mcp_protocol_errors_carry_the_tables_codes(extended: Harness, mode: str) -> None:
    async with Client(build_server(extended), mode=mode) as client:
        calls = {
            UnknownTool("x"): client.call_tool("nope", {}),
            NotFound("x"): client.get_prompt("nobody", {}),
            BadRequest("x"): client.list_resources(cursor="not-a-cursor"),
        }
        for error, call in calls.items():
            with pytest.raises(MCPError) as caught:
                await call
            assert caught.value.error.code == outcome(error).jsonrpc_code, (error, caught.value.error)
        with pytest.raises(MCPError) as unknown_resource:
            await client.read_resource("ctx://elsewhere/x")
        bad = await client.call_tool("search", {"query": 5})
    assert unknown_resource.value.error.code == outcome(NotFound("x")).jsonrpc_code
    assert not outcome(UnknownTool("x")).mcp_tool_error and outcome(BadRequest("x")).mcp_tool_error
    assert error_of(bad)["code"] == "bad_request"  # a tool's own error is an isError result, as the table says


async def test_failures_over_mcp_carry_the_tables_codes(extended: Harness, mode: str) -> None:
    async with Client(build_server(extended), mode=mode) as client:
        result = await client.call_tool("explode", {})
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("failing", {})
    assert error_of(result)["code"] == "internal" and SECRET not in result.content[0].text
    assert prompt.value.error.code == outcome(AgentError("x")).jsonrpc_code
    assert prompt.value.error.data["code"] == "agent_error" and SECRET not in prompt.value.error.message


async def test_unexpected_exceptions_in_completion_and_listing_are_internal_not_invalid_params(
        config: Any, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    extensions = collect_extensions(agents=[Failing()], discover=False)
    with caplog.at_level(logging.ERROR, logger="context_harness.errors"):
        async with Faulty.open(config, extensions) as harness, Client(build_server(harness), mode=mode) as client:
            with pytest.raises(MCPError) as completion:
                await client.complete(t.PromptReference(type="ref/prompt", name="failing"),
                                      {"name": "topic", "value": "a"})
            with pytest.raises(MCPError) as listing:
                await client.list_resources()
    for caught in (completion, listing):
        assert caught.value.error.code == INTERNAL != t.INVALID_PARAMS
        assert SECRET not in caught.value.error.message
    assert any(r.exc_info and SECRET in str(r.exc_info[1]) for r in caplog.records)  # logged, with the traceback


async def test_rest_statuses_and_bodies_come_from_the_table(extended: Harness) -> None:
    transport = httpx2.ASGITransport(app=build_app(extended))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as rest:
        answers = {
            UnknownTool("x"): await rest.post("/tools/nope", json={}),
            NotFound("x"): await rest.get("/nowhere"),
            MethodNotAllowed("x"): await rest.delete("/tools/list"),
            BadRequest("x"): await rest.post("/tools/search", json={"query": 5}),
            InternalError(): await rest.post("/tools/explode", json={}),
            AgentError("x"): await rest.post("/agents/failing/prompt", json={}),
        }
    for error, response in answers.items():
        assert response.status_code == outcome(error).http_status, (error, response.text)
        assert response.json()["error"]["code"] == error.code, response.text
        assert SECRET not in response.text
    unknown = next(response for error, response in answers.items() if isinstance(error, UnknownTool))
    assert "GET /tools/list shows the available tools" in unknown.json()["error"]["message"]


def test_json_rpc_refusals_of_post_mcp_come_from_the_table(app_server: Any) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx2.Client(base_url=app_server.url, headers=headers) as http:
        parse = http.post("/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method": NaN')
        invalid = http.post("/mcp", content=b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}')
    for error, response in ((ParseError("x"), parse), (InvalidRequest("x"), invalid)):
        row = outcome(error)
        assert response.status_code == row.http_status, response.text
        assert response.json()["error"]["code"] == row.jsonrpc_code, response.text
    assert (outcome(ParseError("x")).jsonrpc_code, outcome(InvalidRequest("x")).jsonrpc_code) == (-32700, -32600)
