"""Lua tools through MCP ``tools/call`` (both protocol eras, in memory) and REST ``POST /tools/{name}``
(the real Starlette app in process): the same scripts give the same outcome, payload for payload."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.http import build_app
from context_harness.server.mcp import build_server
from support.results import error_of, payload_of

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
TIMEOUT = 0.5


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


async def via_mcp(client: Client, name: str, arguments: Any) -> tuple[bool, dict[str, Any], str]:
    result = await client.call_tool(name, arguments)
    return result.is_error, payload_of(result), result.content[0].text


async def via_rest(harness: Any, name: str, arguments: Any) -> tuple[int, dict[str, Any]]:
    app = build_app(harness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as rest:
        response = await rest.post(f"/tools/{name}", json=arguments)
    return response.status_code, response.json()


CASES = [
    # (tool, arguments, expected payload or error code, HTTP status)
    ("echo", {"text": "hi", "repeat": 2, "case": "upper"}, {"result": {"echo": "> HI HI", "length": 5}}, 200),
    ("echo", {"text": "x"}, {"result": {"echo": "> x", "length": 1}}, 200),
    ("modes", {"mode": "ok"}, {"result": {"mode": "ok", "n": 2, "config": "from-config"}}, 200),
    ("modes", {"mode": "search", "n": 1}, {"result": {"count": 1, "first": "Lua sandbox"}}, 200),
    ("echo", {}, "bad_request", 400),
    ("echo", {"text": 5}, "bad_request", 400),
    ("echo", {"text": "x", "case": "title"}, "bad_request", 400),
    ("echo", {"text": "x", "nope": 1}, "bad_request", 400),
    ("modes", {"mode": "ok", "n": 1.5}, "bad_request", 400),
    ("echo", {"text": "x", "repeat": 0}, "tool_error", 500),
    ("modes", {"mode": "error"}, "tool_error", 500),
    ("modes", {"mode": "spin"}, "timeout", 408),
    ("modes", {"mode": "sleep"}, "timeout", 408),
]


@pytest.mark.parametrize(("tool", "arguments", "expected", "status"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
async def test_same_outcome_through_mcp_and_rest(tools_harness, mode, tool, arguments, expected, status):
    async with Client(build_server(tools_harness), mode=mode) as client:
        started = time.monotonic()
        is_error, structured, text = await via_mcp(client, tool, arguments)
        elapsed = time.monotonic() - started
    rest_status, body = await via_rest(tools_harness, tool, arguments)

    assert rest_status == status
    assert structured == body  # the MCP structured content IS the REST body
    if isinstance(expected, dict):
        assert not is_error and structured == expected
    else:
        assert is_error and set(structured) == {"error"}
        assert structured["error"]["code"] == expected, structured
        message = structured["error"]["message"]
        assert "Traceback" not in message and "lupa" not in message and "Traceback" not in text
        if expected == "timeout":
            assert "timed out after 0.5 s" in message
            assert elapsed < TIMEOUT + 1.0
    # after any failure the tool keeps serving
    async with Client(build_server(tools_harness), mode=mode) as client:
        ok = await client.call_tool("modes", {"mode": "ok"})
    assert ok.structured_content["result"]["mode"] == "ok"


async def test_tools_list_schemas_annotations_and_rest_listing(tools_harness, mode):
    async with Client(build_server(tools_harness), mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search", "get", "sources", "recent", "related", "echo", "search_summary", "modes"}
    echo = tools["echo"]
    assert echo.input_schema["required"] == ["text"]
    assert echo.input_schema["properties"]["case"]["enum"] == ["keep", "upper", "lower"]
    assert echo.input_schema["additionalProperties"] is False
    assert echo.annotations.read_only_hint is True and echo.annotations.open_world_hint is False
    assert echo.output_schema["required"] == ["result"]
    # declared nothing -> not read-only, may destroy, open world (the MCP defaults, stated)
    modes = tools["modes"].annotations
    assert modes.read_only_hint is False and modes.destructive_hint is True and modes.open_world_hint is True

    app = build_app(tools_harness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as rest:
        listing = (await rest.get("/tools/list")).json()["tools"]
    by_name = {t["name"]: t for t in listing}
    assert [t["name"] for t in listing][:3] == ["search", "get", "sources"]
    assert by_name["echo"]["builtin"] is False and by_name["search"]["builtin"] is True
    assert by_name["echo"]["parameters"] == echo.input_schema
    assert by_name["modes"]["parameters"]["properties"]["n"] == {"type": "integer", "default": 2}


async def test_text_block_is_the_result(tools_harness):
    async with Client(build_server(tools_harness), mode="legacy") as client:
        result = await client.call_tool("search_summary", {"query": "lua sandbox", "limit": 1})
    assert not result.is_error
    summary = result.structured_content["result"]["summary"]
    assert summary.startswith('Found 1 document(s) for "lua sandbox"')
    assert "**Lua sandbox** (filesystem:docs" in summary
    assert '"summary"' in result.content[0].text


# A selection of the hostile battery (tests/lua/test_sandbox_abuse.py), end to end.
HOSTILE = [
    ("io_open", 'return io.open("/etc/passwd"):read("a")', "tool_error"),
    ("os_execute", 'return os.execute("touch /tmp/pwned")', "tool_error"),
    ("require_os", 'return require("os").execute("id")', "tool_error"),
    ("string_dump", "return load(string.dump(function() return 1 end))()", "tool_error"),
    ("python_eval", "return python.eval(\"__import__('os').system('id')\")", "tool_error"),
    ("env_walk", "return _ENV._G.io.open('/etc/passwd')", "tool_error"),
    ("context_class", "return context.search.__class__.__mro__", "tool_error"),
    ("pcall_swallow", "while true do pcall(function() while true do end end) end", "timeout"),
    ("coroutine_wrap_pcall", "local f = coroutine.wrap(function() while true do end end) "
     "while true do pcall(f) end", "timeout"),
    ("sleep_in_pcall", "while true do pcall(sleep, 30) end", "timeout"),
    ("slow_http", "return http.get(params.url .. '/slow?s=5')", "timeout"),
    ("string_bomb", "return string.rep('x', 1e9)", "tool_error"),
    ("deep_recursion", "local function f(n) return 1 + f(n + 1) end return f(1)", "tool_error"),
    ("cyclic_result", "local t = {} t.self = t return t", "tool_error"),
    ("function_result", "return {f = function() end}", "tool_error"),
    ("nan_result", "return {x = 0/0}", "tool_error"),
]

HOSTILE_SCRIPT = """
tool = {{
  description = "hostile",
  parameters = {{ {{name = "mode", type = "string", required = true}}, {{name = "url", type = "string"}} }},
}}
function tool.execute(params, context)
  if params.mode == "ok" then
    local hits = context.search("sandbox", {{limit = 1}})
    return {{ fine = true, hits = #hits }}
  end
  {attack}
end
"""


async def test_hostile_scripts_same_outcome_through_mcp_and_rest(tmp_path, api_url, make_tools_workspace):

    extra = []
    for name, attack, _ in HOSTILE:
        (tmp_path / "tools" / f"{name}.lua").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tools" / f"{name}.lua").write_text(HOSTILE_SCRIPT.format(attack=attack))
        extra.append(f'[tools.script.{name}]\npath = "tools/{name}.lua"\ntimeout = {TIMEOUT}\n'
                     f"memory_limit = {32 * 1024 * 1024}\n")
    extra.append('[lua]\nhttp_allow = ["127.0.0.1"]  # the test API is on loopback\n')
    config_path = make_tools_workspace(tmp_path, "\n" + "\n".join(extra))
    async with Harness.open(config_mod.load(config_path)) as harness:
        await harness.sync()
        app = build_app(harness)
        transport = httpx2.ASGITransport(app=app)
        async with Client(build_server(harness), mode="legacy") as client, \
                httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as rest:
            for name, _, code in HOSTILE:
                arguments = {"mode": "attack", "url": api_url}
                started = time.monotonic()
                result = await client.call_tool(name, arguments)
                assert time.monotonic() - started < TIMEOUT + 1.0, name
                response = await rest.post(f"/tools/{name}", json=arguments)
                assert result.is_error, name
                assert error_of(result)["code"] == code, (name, result.content)
                assert response.json()["error"]["code"] == code, name
                assert response.status_code == {"tool_error": 500, "timeout": 408}[code]
                message = error_of(result)["message"]
                assert message.startswith(f"Lua tool '{name}'") and "Traceback" not in message
                # the next legitimate call on the same tool succeeds, through both adapters
                ok = await client.call_tool(name, {"mode": "ok"})
                assert ok.structured_content == {"result": {"fine": True, "hits": 1}}, name
                assert (await rest.post(f"/tools/{name}", json={"mode": "ok"})).json() == ok.structured_content
