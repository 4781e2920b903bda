"""The agent tools: ``agent_list``, ``agent_get`` and ``agent_inject``, over an ``AgentLibrary``.

They register in the one ``ToolSet`` like the other built-ins (the composition root in
``catalog`` adds them) when ``[server] agent_tools`` is true and at least one agent is defined;
``agent_tool_changes`` keeps them in step when agents are added, removed or reloaded while serving.

Payloads (the MCP ``structuredContent``): ``agent_list`` -> ``{"agents": [{name, description}]}``,
``agent_get`` -> the agent's definition (as ``agent://NAME``), ``agent_inject`` -> ``{name,
compiled}`` (``format = "compiled"``, the text block is the compiled string) or ``{name, system,
skills, tools, messages}`` (``"structured"``). ``agent_get`` and ``agent_inject`` take ``name`` or
its synonym ``agentId`` (AgentZoo's spelling). Unknown agent: ``not_found``; unknown format or
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
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from context_harness.agents.library import FORMATS, AgentLibrary
from context_harness.common.validation import parse
from context_harness.errors import BadRequest
from context_harness.models import NoArguments
from context_harness.tools.base import FunctionTool, Tool, ToolChanges
from context_harness.tools.builtin import schema_of

AGENT_TOOL_NAMES = ("agent_list", "agent_get", "agent_inject", "agent_run")

Compile = Callable[[str, dict[str, Any], str], Awaitable["str | dict[str, Any]"]]
"""``(name, arguments, format)`` -> the compiled text or the structured agent (resolves the agent)."""
RunAgent = Callable[[str, str, dict[str, Any], "str | None"], Awaitable[dict[str, Any]]]
"""``(agent, task, arguments, model)`` -> the run's record (``core/running.py``)."""
RUN_ANNOTATIONS = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True}


class AgentTool(FunctionTool):
    """One of the agent tools (kept apart from a user's tool of the same name on reloads)."""


class AgentSummary(BaseModel):
    name: str
    description: str


class AgentListResponse(BaseModel):
    agents: list[AgentSummary]


class AgentGetRequest(BaseModel):
    """``name`` or its synonym ``agentId`` (AgentZoo's spelling); one of them is required."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, description="The agent's name (see agent_list).")
    agentId: str | None = Field(default=None, description="A synonym of name (AgentZoo's spelling).")

    @model_validator(mode="after")
    def _one_name(self) -> Self:
        if self.name is None and self.agentId is None:
            raise ValueError("name: required (the agent's name; agentId is accepted as a synonym)")
        if self.name is not None and self.agentId is not None and self.name != self.agentId:
            raise ValueError("name and agentId name different agents; give one of them")
        return self

    @property
    def agent(self) -> str:
        return self.name if self.name is not None else str(self.agentId)


class AgentInjectRequest(AgentGetRequest):
    format: str = Field(default="compiled", json_schema_extra={"enum": list(FORMATS)},
                        description="compiled (one text) or structured (JSON).")
    arguments: dict[str, Any] | None = Field(default=None, description="The agent's arguments (see agent_get).")


class AgentRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, description="The agent's name (see agent_list).")
    task: str = Field(min_length=1, description="What the agent should do, in words.")
    arguments: dict[str, Any] | None = Field(default=None, description="The agent's arguments (see agent_get).")
    model: str | None = Field(default=None, description="A [models.NAME] of the server's config; unset: the "
                              "agent's, the configured default, or this client's own model (sampling).")


class AgentRunOut(BaseModel):
    id: str
    agent: str
    status: str
    reason: str | None = None
    answer: str | None = None
    steps: int
    tokens: dict[str, int]


def may_reach_network(agents: AgentLibrary) -> bool:
    """True when resolving some agent may do more than read the knowledge base (see module docstring)."""
    sources = {info.source for info in agents.list()}
    if "python" in sources:
        return True
    if "lua" in sources:
        return agents.config.lua.http_allow != []
    return False


def inject_annotations(agents: AgentLibrary) -> dict[str, Any]:
    if may_reach_network(agents):
        return {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True}
    return {"readOnlyHint": True, "openWorldHint": False}


def render_run(payload: dict[str, Any]) -> str:
    head = f"run {payload['id']} ({payload['agent']}): {payload['status']}"
    if payload.get("reason"):
        head += f" ({payload['reason']})"
    return f"{payload['answer']}\n\n{head}" if payload.get("answer") else head


def render_inject(payload: dict[str, Any]) -> str:
    compiled = payload.get("compiled")
    return compiled if isinstance(compiled, str) else json.dumps(payload, ensure_ascii=False, indent=2)


def agent_tools(agents: AgentLibrary, compile_agent: Compile, run_agent: RunAgent) -> list[AgentTool]:
    """The agent tools over ``agents``; ``compile_agent`` resolves one (in a worker thread),
    ``run_agent`` drives one with a model through its tools."""

    async def agent_list(arguments: dict[str, Any]) -> dict[str, Any]:
        parse(NoArguments, arguments)
        return {"agents": [{"name": i.name, "description": i.description} for i in agents.list()]}

    async def agent_get(arguments: dict[str, Any]) -> dict[str, Any]:
        return agents.definition(parse(AgentGetRequest, arguments).agent)

    async def agent_inject(arguments: dict[str, Any]) -> dict[str, Any]:
        request = parse(AgentInjectRequest, arguments)
        if request.format not in FORMATS:
            raise BadRequest(f"format must be one of {', '.join(FORMATS)} (got {request.format!r})")
        agents.spec(request.agent)  # not_found before any work
        result = await compile_agent(request.agent, request.arguments or {}, request.format)
        if isinstance(result, str):
            return {"name": request.agent, "compiled": result}
        return result

    async def agent_run(arguments: dict[str, Any]) -> dict[str, Any]:
        request = parse(AgentRunRequest, arguments)
        record = await run_agent(request.agent, request.task, request.arguments or {}, request.model)
        return {"id": record["id"], "agent": record["agent"], "status": record["status"],
                "reason": record.get("reason"), "answer": record.get("answer"), "steps": len(record["steps"]),
                "tokens": record["tokens"]}

    return [
        AgentTool(
            name="agent_list", title="List agents",
            description="List the agents (personas with a system prompt and tools) this knowledge base offers. "
            "Use agent_get for one agent's definition and agent_inject to adopt it.",
            input_schema=schema_of(NoArguments), output_schema=schema_of(AgentListResponse, "serialization"),
            run=agent_list),
        AgentTool(
            name="agent_get", title="Get an agent's definition",
            description="The full definition of one agent: description, source, tools, arguments, skills and "
            "(for static agents) the system prompt.",
            input_schema=schema_of(AgentGetRequest), run=agent_get),
        AgentTool(
            name="agent_inject", title="Adopt an agent",
            description="Resolve an agent and return its instructions to follow for the rest of this "
            "conversation. format 'compiled' gives one text (instructions, active skills, context); "
            "'structured' gives {name, system, skills, tools, messages}. Lua agents pre-fetch context from "
            "the knowledge base.",
            input_schema=schema_of(AgentInjectRequest), run=agent_inject,
            annotations=inject_annotations(agents), render=render_inject, scope="read"),
        AgentTool(
            name="agent_run", title="Run an agent",
            description="Run an agent on a task: a model (the server's configured one, or yours through "
            "sampling) works through the agent's own tools until it answers. Writes need a person's approval "
            "(asked through this client where it can ask) unless the agent says approve = \"writes\". "
            "Returns the answer and the run's id (its record: ctx agent show ID).",
            input_schema=schema_of(AgentRunRequest), output_schema=schema_of(AgentRunOut, "serialization"),
            run=agent_run, annotations=dict(RUN_ANNOTATIONS), render=render_run, scope="agents"),
    ]


def wanted(agents: AgentLibrary | None, enabled: bool) -> bool:
    """The agent tools are offered when enabled and there is at least one agent."""
    return agents is not None and enabled and bool(agents.names())


def agent_tool_changes(present: dict[str, Tool | None], fresh: list[AgentTool] | None) -> ToolChanges:
    """What to change in the tool set after agents reloaded: ``present`` maps each agent tool
    name to the registered tool (None when absent); ``fresh`` is the new agent tools, or None when
    they are no longer wanted. Tools of those names that are not agent tools are left alone."""
    changes = ToolChanges()
    if fresh is None:
        changes.removed.extend(name for name, tool in present.items()
                               if tool is not None and _is_agent_tool(tool))
        return changes
    for tool in fresh:
        old = present.get(tool.name)
        if old is None:
            changes.added.append(tool)
        elif _is_agent_tool(old) and old.annotations != tool.annotations:
            changes.replaced.append(tool)
    return changes


def _is_agent_tool(tool: Tool) -> bool:
    return isinstance(tool, AgentTool)


__all__ = ["AGENT_TOOL_NAMES", "AgentGetRequest", "AgentInjectRequest", "AgentRunRequest", "AgentTool",
           "agent_tool_changes", "agent_tools", "inject_annotations", "may_reach_network", "render_inject", "wanted"]
