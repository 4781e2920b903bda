"""Lua tools: metadata, JSON Schema, validation, the context bridge, errors, reuse and threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from context_harness.config import LuaConfig, ScriptConfig
from context_harness.errors import BadRequest, ConfigError, NotFound, Timeout, ToolError
from context_harness.lua.script import CONTEXT, LuaScript
from context_harness.lua.tools import LuaTool

FULL = """
tool = {
  name = "full", description = "Does things", title = "Full tool",
  parameters = {
    {name = "query", type = "string", required = true, description = "What"},
    {name = "limit", type = "integer", default = 5},
    {name = "ratio", type = "number"},
    {name = "flag", type = "boolean", default = false},
    {name = "tags", type = "array"},
    {name = "opts", type = "object"},
    {name = "mode", type = "string", enum = {"a", "b"}, default = "a"},
  },
  annotations = {readOnlyHint = true, openWorldHint = false},
}
function tool.execute(params, context) return params end
"""


def test_metadata_schema_and_annotations(make_tool: Any) -> None:
    tool = make_tool(FULL, name="full")
    assert tool.name == "full" and tool.description == "Does things" and tool.title == "Full tool"
    assert tool.annotations == {"readOnlyHint": True, "openWorldHint": False}
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What"},
            "limit": {"type": "integer", "default": 5},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean", "default": False},
            "tags": {"type": "array"},
            "opts": {"type": "object"},
            "mode": {"type": "string", "default": "a", "enum": ["a", "b"]},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert tool.describe()["builtin"] is False


def test_not_read_only_unless_declared_and_return_tool_form(make_tool: Any) -> None:
    tool = make_tool("local t = {description = 'x'} function t.execute() return 1 end return t")
    assert tool.annotations == {} and tool.input_schema["properties"] == {}
    assert tool.call({}) == 1


def test_validate_fills_defaults_and_checks_types(make_tool: Any) -> None:
    tool = make_tool(FULL, name="full")
    assert tool.validate({"query": "q"}) == {"query": "q", "limit": 5, "flag": False, "mode": "a"}
    assert tool.validate({"query": "q", "limit": 3.0, "tags": [], "opts": {}})["limit"] == 3
    cases = [({}, "missing required parameter 'query'"),
             ({"query": 1}, "parameter 'query' must be of type string"),
             ({"query": "q", "limit": 1.5}, "parameter 'limit' must be of type integer"),
             ({"query": "q", "limit": True}, "parameter 'limit' must be of type integer"),
             ({"query": "q", "flag": "yes"}, "parameter 'flag' must be of type boolean"),
             ({"query": "q", "mode": "c"}, "parameter 'mode' must be one of \"a\", \"b\""),
             ({"query": "q", "tags": "x"}, "parameter 'tags' must be of type array"),
             ({"query": "q", "nope": 1}, "unknown parameter 'nope'")]
    for arguments, message in cases:
        with pytest.raises(BadRequest, match=message):
            tool.call(arguments)
    with pytest.raises(BadRequest, match="arguments must be an object"):
        tool.validate([1])  # type: ignore[arg-type]


def test_call_round_trips_json_values(make_tool: Any) -> None:
    tool = make_tool(FULL, name="full")
    args = {"query": "héllo", "ratio": 0.5, "tags": ["a", "b"], "opts": {"k": [1, {"x": None}]}}
    assert tool.call(args) == {"query": "héllo", "limit": 5, "flag": False, "mode": "a", "ratio": 0.5,
                               "tags": ["a", "b"], "opts": {"k": [1, {}]}}


@pytest.mark.parametrize("name", ["search", "get", "sources", "recent", "related", "agent_list", "agent_get", "agent_inject",
                                  "bad name", "", "x" * 65, "ü"])
def test_bad_or_builtin_names_are_config_errors(make_tool: Any, name: str) -> None:
    with pytest.raises(ConfigError):
        LuaTool(name, ScriptConfig(path=Path("/nonexistent.lua")), LuaConfig())


def test_config_key_wins_over_script_name(make_tool: Any) -> None:
    tool = make_tool("tool = {name = 'other'} function tool.execute() return 'x' end", name="mine")
    assert tool.name == "mine"


@pytest.mark.parametrize(("source", "message"), [
    ("x = 1", "must define a global table `tool`"),
    ("tool = {}", "must define function tool.execute"),
    ("tool = {parameters = 'x'} function tool.execute() end", "tool.parameters must be an array"),
    ("tool = {parameters = {{name = 'a', type = 'date'}}} function tool.execute() end", "type must be one of"),
    ("tool = {parameters = {{name = 'a'}, {name = 'a'}}} function tool.execute() end", "declared twice"),
    ("tool = {parameters = {{name = 'a', type = 'integer', default = 'x'}}} function tool.execute() end",
     "default must be of type integer"),
    ("tool = {annotations = {readOnlyHint = 'yes'}} function tool.execute() end", "must be true or false"),
    ("tool = {annotations = {madeUp = true}} function tool.execute() end", "unknown annotation"),
    ("tool = {description = function() end} function tool.execute() end", "invalid metadata"),
    ("tool = setmetatable({}, {__index = function() while true do end end})", "took longer than"),
    ("this is not lua", "t.lua:1:"),
    ("error('boom at load')", "boom at load"),
])
def test_invalid_scripts_are_config_errors(make_tool: Any, source: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_tool(source, timeout=0.5)


def test_missing_script_and_bytecode_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="script not found"):
        LuaTool("t", ScriptConfig(path=tmp_path / "nope.lua"), LuaConfig())
    (tmp_path / "b.lua").write_bytes(b"\x1bLua\x54\x00")
    with pytest.raises(ConfigError, match="precompiled bytecode"):
        LuaTool("t", ScriptConfig(path=tmp_path / "b.lua"), LuaConfig())


CONTEXT_TOOL = """
tool = {parameters = {{name = "q", type = "string", required = true}}}
function tool.execute(params, context)
  local a = context.search(params.q, {mode = "keyword", limit = 1, source = "filesystem:docs"})
  local b = context.search({query = params.q, limit = 5, filters = {source = "script:api"}})
  local doc = context.get(a[1].id)
  local ok, err = pcall(context.get, "missing")
  return {a = #a, a_id = a[1].id, b = #b, b_title = b[1].title, title = doc.title,
          chunks = #doc.chunks, err = err, ok = ok, sources = #context.sources(), cfg = context.config.team}
end
"""


def test_context_bridge_both_search_forms(make_tool: Any, fake_context: Any) -> None:
    tool = make_tool(CONTEXT_TOOL, team="search")
    result = tool.call({"q": "lua"}, fake_context)
    assert result == {"a": 1, "a_id": "d1", "b": 1, "b_title": "Connectors", "title": "Lua sandbox", "chunks": 1,
                      "err": "context.get: document 'missing' not found", "ok": False, "sources": 1, "cfg": "search"}
    assert fake_context.requests == [
        {"query": "lua", "mode": "keyword", "limit": 1, "filters": {"source": "filesystem:docs"}},
        {"query": "lua", "limit": 5, "filters": {"source": "script:api"}},
    ]


def test_context_errors_and_timeouts(make_tool: Any, fake_context: Any) -> None:
    tool = make_tool(CONTEXT_TOOL)

    def slow_timeout(request: dict[str, Any]) -> list[Any]:
        from context_harness.errors import Timeout as HarnessTimeout

        raise HarnessTimeout("search timed out")

    fake_context.search = slow_timeout
    with pytest.raises(Timeout):
        tool.call({"q": "x"}, fake_context)

    def broken(request: dict[str, Any]) -> list[Any]:
        raise RuntimeError("secret internal detail")

    fake_context.search = broken
    with pytest.raises(ToolError) as info:
        tool.call({"q": "x"}, fake_context)
    assert "secret" not in info.value.message
    assert "context.search: failed unexpectedly (RuntimeError); the server log has the details" in info.value.message

    fake_context.search = lambda request: (_ for _ in ()).throw(NotFound("no index"))
    with pytest.raises(ToolError, match="context.search: no index"):
        tool.call({"q": "x"}, fake_context)
    with pytest.raises(ToolError, match="not available here"):
        tool.call({"q": "x"}, None)


def test_script_error_message_has_file_and_line(make_tool: Any) -> None:
    tool = make_tool("tool = {}\nfunction tool.execute()\n  local x = nil\n  return x.field\nend", name="errs")
    with pytest.raises(ToolError, match=r"Lua tool 'errs' failed: errs.lua:4: attempt to index a nil value"):
        tool.call({})
    tool2 = make_tool("tool = {} function tool.execute() error({message = 'custom'}) end", name="e2")
    with pytest.raises(ToolError, match="failed: custom"):
        tool2.call({})


def test_runtime_reused_without_reparse(make_tool: Any) -> None:
    tool = make_tool("loads = (loads or 0) + 1 calls = 0\n"
                     "tool = {} function tool.execute() calls = calls + 1 return {loads = loads, calls = calls} end")
    for i in range(1, 6):
        assert tool.call({}) == {"loads": 1, "calls": i}
    started = time.perf_counter()
    for _ in range(200):
        tool.call({})
    assert (time.perf_counter() - started) / 200 < 0.01  # about 0.4 ms a call; a reparse or a new worker costs more


def test_concurrent_calls_use_a_small_pool(write_script: Any) -> None:
    path = write_script("tool = {} function tool.execute() sleep(0.1) return 'ok' end", "pool.lua")
    tool = LuaTool("pool", ScriptConfig(path=path), LuaConfig(), max_instances=2)
    results: list[Any] = []

    def worker() -> None:
        results.append(tool.call({}))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["ok"] * 6
    assert 0.25 < time.monotonic() - started < 1.5  # 6 calls of 0.1 s on 2 runtimes
    assert tool.script.max_instances == 2


def test_generic_call_function_for_agents(write_script: Any, fake_context: Any) -> None:
    path = write_script("""
agent = {}
function agent.resolve(args, config, context)
  local hits = context.search(args.topic, {limit = 1})
  return {system = config.persona .. " on " .. args.topic, first = hits[1].title, cfg = context.config.k}
end
""", "agent.lua")
    script = LuaScript(path, name="writer", kind="agent", global_name="agent", config={"k": "v"})
    result = script.call_function("agent.resolve", {"topic": "lua"}, {"persona": "Writer"}, CONTEXT,
                                  context=fake_context)
    assert result == {"system": "Writer on lua", "first": "Lua sandbox", "cfg": "v"}
    from context_harness.errors import AgentError

    with pytest.raises(AgentError, match="does not define function agent.missing"):
        script.call_function("agent.missing")
    assert script.timeout == 30.0 and not script.changed()
    path.write_text("agent = {}")
    assert script.changed()
