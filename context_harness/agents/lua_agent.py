"""Lua agents: ``[agents.script.NAME]`` scripts that build the prompt at resolve time.

The script defines::

    agent = {
      name = "incident-responder", description = "...", tools = {"search", "get"},
      arguments = { {name = "service", description = "...", required = true},
                    {name = "severity", enum = {"sev1", "sev2", "sev3"}, default = "sev2"} },
      skills = {"incident-triage"},             -- optional; disabled_skills too
    }
    function agent.resolve(args, config, context)
      local hits = context.search({query = args.service .. " runbook", limit = 3})
      return { system = "...", tools = {...}, messages = { {role = "user", content = "..."} } }
    end

``config`` is the entry's free TOML keys; ``context.search/get/sources`` reach the knowledge base.
It runs in the Lua sandbox under the entry's ``timeout`` (``Timeout`` when exceeded); script
errors and invalid results are ``AgentError``. The config key is the agent's name.
"""

from __future__ import annotations

import logging
from typing import Any

from context_harness.agents.base import (
    AgentContext,
    AgentSpec,
    check_name,
    coerce_prompt,
    parse_arguments,
    run_settings,
    string_list,
)
from context_harness.agents.models import AgentPrompt
from context_harness.config import LuaConfig, ScriptConfig
from context_harness.errors import AgentError, ConfigError
from context_harness.lua.script import CONTEXT, LuaScript

log = logging.getLogger(__name__)

METADATA_SNIPPET = """
local a = agent
if type(a) ~= "table" then return nil end
return {name = a.name, description = a.description, tools = a.tools, arguments = a.arguments,
        skills = a.skills, disabled_skills = a.disabled_skills, has_resolve = type(a.resolve) == "function"}
"""


MAX_INSTANCES = 2  # resolutions of one Lua agent that run at once (more wait: ``catalog.Catalog``)


def lua_spec(name: str, entry: ScriptConfig, lua_config: LuaConfig | None, *,
             max_instances: int = MAX_INSTANCES) -> AgentSpec:
    where = f"[agents.script.{name}] ({entry.path})"
    check_name(name, f"[agents.script.{name}]")
    script = LuaScript(entry.path, name=name, kind="agent", lua_config=lua_config, timeout=entry.timeout,
                       memory_limit=entry.memory_limit, env=entry.env, config=entry.extra, global_name="agent",
                       error_class=AgentError, max_instances=max_instances)
    meta = script.evaluate(METADATA_SNIPPET)
    if not isinstance(meta, dict):
        raise ConfigError(f"{where}: the script must define a global table `agent` (or end with `return agent`)")
    if not meta.get("has_resolve"):
        raise ConfigError(f"{where}: the script must define function agent.resolve(args, config, context)")
    declared = meta.get("name")
    if declared is not None and declared != name:
        log.info("Lua agent %s: agent.name is %r; the config key %r is used as the name", entry.path, declared, name)
    description = meta.get("description") or ""
    if not isinstance(description, str):
        raise ConfigError(f"{where}: agent.description must be a string")
    tools = string_list(meta.get("tools"), where, "agent.tools")
    config = entry.extra
    what = f"Lua agent '{name}'"

    def resolve(args: dict[str, Any], context: AgentContext | None) -> AgentPrompt:
        value = script.call_function("agent.resolve", args, config, CONTEXT, context=context)
        return coerce_prompt(value, what, tools)

    return AgentSpec(
        name=name, description=description.strip(), source="lua", origin=where, resolver=resolve, tools=tools,
        arguments=parse_arguments(meta.get("arguments"), where),
        skills=string_list(meta.get("skills"), where, "agent.skills"),
        disabled_skills=string_list(meta.get("disabled_skills"), where, "agent.disabled_skills"),
        metadata={"timeout": script.timeout}, files=(entry.path,),
        run=run_settings({k: v for k, v in config.items() if k in ("model", "approve", "max_steps", "max_seconds")},
                         where),
    )


__all__ = ["MAX_INSTANCES", "lua_spec"]
