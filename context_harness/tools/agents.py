"""The agent tools: ``agent_list``, ``agent_get`` and ``agent_inject``, over an ``AgentRegistry``.

They register in the ``ToolRegistry`` like the other built-ins (``ToolRegistry.build(..., agents=)``)
when ``[server] agent_tools`` is true and at least one agent is defined; ``sync_agent_tools`` keeps
them in step when agents are added, removed or reloaded while serving.

Payloads (the MCP ``structuredContent``): ``agent_list`` -> ``{"agents": [{name, description}]}``,
``agent_get`` -> the agent's definition (as ``agent://NAME``), ``agent_inject`` -> ``{name,
compiled}`` (``format = "compiled"``, the text block is the compiled string) or ``{name, system,
skills, tools, messages}`` (``"structured"``). Unknown agent: ``not_found``; unknown format or
arguments: ``bad_request``.

Annotations are truthful: listing and reading definitions are read-only and local. ``agent_inject``
resolves the agent: TOML and Markdown agents only fill in text, Lua agents search the knowledge base
and may call ``http.*`` (unless ``[lua] http_allow = []``), Python agents run arbitrary code. So
``agent_inject`` is declared read-only and closed-world only while every agent is static (or the
Lua agents cannot reach the network); otherwise it is not read-only and open-world.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from context_harness.agents.context import HarnessContext
from context_harness.agents.registry import FORMATS, AgentRegistry
from context_harness.errors import BadRequest

AGENT_TOOL_NAMES = ("agent_list", "agent_get", "agent_inject")
READ_ONLY_LOCAL = {"readOnlyHint": True, "openWorldHint": False, "idempotentHint": True}

AGENT_LIST_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"agents": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
        "required": ["name", "description"]}}},
    "required": ["agents"],
}


@dataclass
class AgentTool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=lambda: dict(READ_ONLY_LOCAL))
    builtin: bool = True
    render: Callable[[dict[str, Any]], str] | None = None

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.run(arguments)


def _check(arguments: Any, allowed: dict[str, type], required: tuple[str, ...], tool: str) -> dict[str, Any]:
    if not isinstance(arguments, dict):
        raise BadRequest(f"{tool}: arguments must be an object")
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise BadRequest(f"{unknown[0]}: unknown argument ({tool} takes {', '.join(allowed) or 'no arguments'})")
    for key in required:
        if key not in arguments:
            raise BadRequest(f"{key}: required")
    for key, kind in allowed.items():
        if key in arguments and not isinstance(arguments[key], kind):
            raise BadRequest(f"{key}: expected {'an object' if kind is dict else 'a string'}")
    return arguments


def may_reach_network(agents: AgentRegistry) -> bool:
    """True when resolving some agent may do more than read the knowledge base (see module docstring)."""
    sources = {info.source for info in agents.list()}
    if "python" in sources:
        return True
    if "lua" in sources:
        return agents.config.lua.http_allow != []
    return False


def inject_annotations(agents: AgentRegistry) -> dict[str, Any]:
    if may_reach_network(agents):
        return {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True}
    return {"readOnlyHint": True, "openWorldHint": False}


def render_inject(payload: dict[str, Any]) -> str:
    compiled = payload.get("compiled")
    return compiled if isinstance(compiled, str) else json.dumps(payload, ensure_ascii=False, indent=2)


def agent_tools(agents: AgentRegistry, harness: Any) -> list[AgentTool]:
    """The three agent tools over ``agents``; resolving runs in a worker thread against ``harness``."""

    async def agent_list(arguments: dict[str, Any]) -> dict[str, Any]:
        _check(arguments, {}, (), "agent_list")
        return {"agents": [{"name": i.name, "description": i.description} for i in agents.list()]}

    async def agent_get(arguments: dict[str, Any]) -> dict[str, Any]:
        args = _check(arguments, {"name": str}, ("name",), "agent_get")
        return agents.definition(args["name"])

    async def agent_inject(arguments: dict[str, Any]) -> dict[str, Any]:
        args = _check(arguments, {"name": str, "format": str, "arguments": dict}, ("name",), "agent_inject")
        fmt = args.get("format", "compiled")
        if fmt not in FORMATS:
            raise BadRequest(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})")
        agents.spec(args["name"])  # not_found before any work
        context = HarnessContext(harness) if harness is not None else None
        result = await _blocking(harness, agents.compile, args["name"], args.get("arguments") or {}, fmt, context)
        if isinstance(result, str):
            return {"name": args["name"], "compiled": result}
        return result

    name_schema = {"type": "string", "description": "The agent's name (see agent_list)."}
    return [
        AgentTool(
            name="agent_list", title="List agents",
            description="List the agents (personas with a system prompt and tools) this knowledge base offers. "
            "Use agent_get for one agent's definition and agent_inject to adopt it.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema=AGENT_LIST_OUTPUT, run=agent_list),
        AgentTool(
            name="agent_get", title="Get an agent's definition",
            description="The full definition of one agent: description, source, tools, arguments, skills and "
            "(for static agents) the system prompt.",
            input_schema={"type": "object", "properties": {"name": name_schema}, "required": ["name"],
                          "additionalProperties": False},
            run=agent_get),
        AgentTool(
            name="agent_inject", title="Adopt an agent",
            description="Resolve an agent and return its instructions to follow for the rest of this "
            "conversation. format 'compiled' gives one text (instructions, active skills, context); "
            "'structured' gives {name, system, skills, tools, messages}. Lua agents pre-fetch context from "
            "the knowledge base.",
            input_schema={"type": "object", "properties": {
                "name": name_schema,
                "format": {"type": "string", "enum": list(FORMATS), "default": "compiled",
                           "description": "compiled (one text) or structured (JSON)."},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "The agent's arguments (see agent_get)."},
            }, "required": ["name"], "additionalProperties": False},
            run=agent_inject, annotations=inject_annotations(agents), render=render_inject),
    ]


async def _blocking(harness: Any, fn: Callable[..., Any], *args: Any) -> Any:
    if harness is not None and hasattr(harness, "run_blocking"):
        return await harness.run_blocking(fn, *args)
    import anyio

    return await anyio.to_thread.run_sync(lambda: fn(*args))


def wanted(agents: AgentRegistry | None, enabled: bool) -> bool:
    """The agent tools are offered when enabled and there is at least one agent."""
    return agents is not None and enabled and bool(agents.names())


def sync_agent_tools(tools: Any, agents: AgentRegistry, harness: Any, enabled: bool) -> Any:
    """After agents reloaded: add, re-register (annotations changed) or remove the agent tools in the
    ``ToolRegistry`` ``tools``. Returns its ``ToolChanges`` for the adapters to announce."""
    from context_harness.tools.registry import ToolChanges

    changes = ToolChanges()
    present = [tools.get(n) for n in AGENT_TOOL_NAMES]
    if not wanted(agents, enabled):
        for name, tool in zip(AGENT_TOOL_NAMES, present):
            if isinstance(tool, AgentTool) and tools.remove(name):
                changes.removed.append(name)
        return changes
    for tool, old in zip(agent_tools(agents, harness), present):
        if old is None:
            tools.add(tool)
            changes.added.append(tool)
        elif isinstance(old, AgentTool) and old.annotations != tool.annotations:
            tools.add(tool, replace=True)
            changes.replaced.append(tool)
    return changes


__all__ = ["AGENT_TOOL_NAMES", "AgentTool", "agent_tools", "inject_annotations", "may_reach_network",
           "render_inject", "sync_agent_tools", "wanted"]
