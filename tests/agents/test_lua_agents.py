"""Lua agents: metadata read in the sandbox, resolve with context searches, timeout and errors."""

from __future__ import annotations

from typing import Any

import pytest

from context_harness.errors import AgentError, BadRequest, ConfigError, Timeout

RESPONDER = """
agent = {
  name = "responder", description = "Responds to incidents", tools = {"search", "get"},
  arguments = {
    {name = "service", description = "Affected service", required = true},
    {name = "severity", enum = {"sev1", "sev2"}, default = "sev2"},
  },
}
function agent.resolve(args, config, context)
  local runbooks = context.search({query = config.prefix .. " " .. args.service, limit = 1})
  local policy = context.search("severity " .. args.severity, {limit = 2, source = "filesystem:docs"})
  local doc = context.get(policy[1].id)
  return {
    system = "Service " .. args.service .. " (" .. args.severity .. "): " .. runbooks[1].title
      .. " / " .. #policy .. " policy hits / " .. doc.body,
    messages = {{role = "user", content = "Start with " .. runbooks[1].id}},
  }
end
return agent
"""


def lua_registry(ws: Any, source: str, extra: str = "") -> Any:
    ws.write("agents/responder.lua", source)
    return ws.library(f"""
        [agents.script.responder]
        path = "agents/responder.lua"
        prefix = "runbook"
        {extra}
    """)


def test_agents_lua_resolve_runs_two_searches(ws: Any, agent_context: Any) -> None:
    reg = lua_registry(ws, RESPONDER)
    info = reg.find("responder")
    assert info.model_dump() == {
        "name": "responder", "description": "Responds to incidents", "tools": ["search", "get"], "source": "lua",
        "arguments": [{"name": "service", "description": "Affected service", "required": True},
                      {"name": "severity", "description": "", "required": False}]}
    prompt = reg.resolve("responder", {"service": "search"}, agent_context)
    assert prompt.system == ("Service search (sev2): Runbook: search down / 2 policy hits / "
                             "## Severity levels\n- sev1: page")
    assert prompt.tools == ["search", "get"]  # defaults to agent.tools
    assert [m.model_dump() for m in prompt.messages] == [{"role": "user", "content": "Start with r1"}]
    assert agent_context.requests == [
        {"query": "runbook search", "limit": 1},
        {"query": "severity sev2", "limit": 2, "filters": {"source": "filesystem:docs"}},
    ]
    assert agent_context.fetched == ["r1"]
    assert reg.complete("responder", "severity", "sev") == ["sev1", "sev2"]
    assert reg.definition("responder")["arguments"][1] == {
        "name": "severity", "description": "", "required": False, "enum": ["sev1", "sev2"], "default": "sev2"}
    with pytest.raises(BadRequest, match="missing required argument 'service'"):
        reg.resolve("responder", {"severity": "sev1"}, agent_context)


def test_agents_lua_timeout(ws: Any) -> None:
    reg = lua_registry(ws, """
        agent = {name = "responder", description = "loops"}
        function agent.resolve(args, config, context) while true do end end
    """, extra="timeout = 0.3")
    with pytest.raises(Timeout, match="timed out after 0.3 s"):
        reg.resolve("responder", {})


@pytest.mark.parametrize(("body", "message"), [
    ('error("boom")', "failed: .*boom"),
    ("return 42", "must return a table"),
    ('return {tools = {"x"}}', "invalid prompt: system: required"),
    ('return {system = "s", messages = {{role = "tool", content = "x"}}}', "invalid prompt: messages.0.role"),
    ('return {system = context.search("x")[1].id}', "no knowledge base is attached"),
])
def test_agents_lua_errors_are_agent_errors(ws: Any, body: str, message: str) -> None:
    reg = lua_registry(ws, f"""
        agent = {{name = "responder", description = "d"}}
        function agent.resolve(args, config, context) {body} end
    """)
    with pytest.raises(AgentError, match=message):
        reg.resolve("responder", {})


def test_agents_lua_system_messages_are_accepted(ws: Any) -> None:
    """The Context Harness agent spec allows user, assistant and system messages."""
    reg = lua_registry(ws, """
        agent = {name = "responder", description = "d"}
        function agent.resolve(args, config, context)
          return {system = "s", messages = {{role = "system", content = "Be brief."}, {role = "user", content = "u"}}}
        end
    """)
    prompt = reg.resolve("responder", {})
    assert [(m.role, m.content) for m in prompt.messages] == [("system", "Be brief."), ("user", "u")]
    compiled = reg.compile("responder", {})
    assert isinstance(compiled, str)
    assert "s\n\nBe brief.\n\n## Context\n\nu\n" in compiled  # folded into the instructions, in order


def test_agents_lua_load_errors_are_config_errors(ws: Any) -> None:
    with pytest.raises(ConfigError, match="must define a global table `agent`"):
        lua_registry(ws, "x = 1")
    with pytest.raises(ConfigError, match="must define function agent.resolve"):
        lua_registry(ws, 'agent = {name = "responder"}')
    with pytest.raises(ConfigError, match=r"arguments\[0\]: name: required"):
        lua_registry(ws, """
            agent = {arguments = {{required = true}}}
            function agent.resolve() return {system = "x"} end
        """)
    with pytest.raises(ConfigError, match="script not found"):
        ws.library('[agents.script.x]\npath = "missing.lua"\n')


def test_agents_lua_script_change_is_noticed(ws: Any, agent_context: Any) -> None:
    import os

    reg = lua_registry(ws, 'agent = {description = "one"}\nfunction agent.resolve() return {system = "1"} end\n')
    path = ws.root / "agents/responder.lua"
    path.write_text('agent = {description = "two"}\nfunction agent.resolve() return {system = "2"} end\n')
    os.utime(path, ns=(5, 5))
    assert reg.refresh() is True
    assert reg.find("responder").description == "two" and reg.resolve("responder").system == "2"
