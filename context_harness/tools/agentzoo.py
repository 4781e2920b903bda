"""AgentZoo's tools (``[server] compat = ["agentzoo"]``): ``agent_zoo_list_agents``,
``agent_zoo_get_agent`` and ``agent_zoo_inject``, with AgentZoo's names, arguments and shapes, over
the same ``AgentLibrary`` as the agent tools (so IDE rules and prompts written for AgentZoo keep
working).

Mapping: an agent's ``id`` and ``name`` are its name here; AgentZoo's skill ``description`` (the
text injected into the prompt) is the skill's instructions (its description when it has none).

Payloads (AgentZoo's documented shapes)::

    agent_zoo_list_agents {}                 -> {agents: [{id, name}]}
    agent_zoo_get_agent {agentId}            -> {id, name, description, systemPrompt, skills: [{id, name,
                                                 description, enabled}], tools, source, arguments}
    agent_zoo_inject {agentId, format?}      -> compiled: {agentId, agentName, prompt}
                                                structured: {agentId, agentName, systemPrompt, skills:
                                                 [{id, name, description}]}

Errors are ``isError`` results ``{error: true, code, message}`` with AgentZoo's codes:
``INVALID_ARGUMENTS`` (no ``agentId``), ``AGENT_NOT_FOUND``, ``INVALID_FORMAT``; an agent that fails to
resolve gives ``AGENT_ERROR`` / ``TIMEOUT``. The compiled prompt (AgentZoo's layout)::

    You are now NAME. Use agentId=NAME for all agent_zoo tool usage.

    <system prompt>

    ---

    ## Active Skills              (only enabled skills; no section, and no ---, when none)

    ### <skill name>
    <skill text>

A Lua or Python agent's messages (pre-fetched context) follow as a ``## Context`` section in the
compiled prompt and as ``messages`` in the structured form (only when there are any); messages with
role ``system`` join the system prompt in the compiled form.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from context_harness.agents.library import FORMATS, AgentLibrary
from context_harness.agents.models import AgentMessage
from context_harness.agents.render import fold_system
from context_harness.errors import AgentError, BadRequest, HarnessError, NotFound, Timeout
from context_harness.tools.agents import AgentTool, Compile, inject_annotations
from context_harness.tools.base import READ_ONLY_LOCAL

ZOO_TOOL_NAMES = ("agent_zoo_list_agents", "agent_zoo_get_agent", "agent_zoo_inject")
AGENT_ID = {"type": "string", "description": "Agent ID (the agent's name; see agent_zoo_list_agents)."}


class _ZooError:
    """AgentZoo's error payload ``{error: true, code, message}`` on top of one of our error classes
    (which keeps deciding the HTTP status and the MCP outcome)."""

    zoo_code = "ERROR"

    def to_dict(self) -> dict[str, Any]:
        return {"error": True, "code": self.zoo_code, "message": getattr(self, "message", "")}


class ZooInvalid(_ZooError, BadRequest):
    def __init__(self, message: str, zoo_code: str = "INVALID_ARGUMENTS") -> None:
        super().__init__(message)
        self.zoo_code = zoo_code


class ZooNotFound(_ZooError, NotFound):
    zoo_code = "AGENT_NOT_FOUND"


class ZooAgentError(_ZooError, AgentError):
    zoo_code = "AGENT_ERROR"


class ZooTimeout(_ZooError, Timeout):
    zoo_code = "TIMEOUT"


def zoo_error(error: HarnessError) -> HarnessError:
    """Our error -> AgentZoo's shape (``BadRequest`` -> ``INVALID_ARGUMENTS`` ...)."""
    if isinstance(error, _ZooError):
        return error
    if isinstance(error, NotFound):
        return ZooNotFound(error.message)
    if isinstance(error, BadRequest):
        return ZooInvalid(error.message)
    if isinstance(error, Timeout):
        return ZooTimeout(error.message)
    if isinstance(error, AgentError):
        return ZooAgentError(error.message)
    return error


def agent_id(arguments: Any) -> str:
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ZooInvalid("arguments must be a JSON object.")
    raw = (arguments or {}).get("agentId")
    value = raw.strip() if isinstance(raw, str) else ""
    if not value:
        raise ZooInvalid("agentId is required.")
    return value


def usage_line(name: str) -> str:
    return f"You are now {name}. Use agentId={name} for all agent_zoo tool usage."


def compiled_prompt(name: str, system: str, skills: list[dict[str, str]], messages: list[dict[str, str]]) -> str:
    """AgentZoo's compiled prompt (see the module docstring); system-role messages join the system prompt."""
    system, others = fold_system(system, [AgentMessage.model_validate(m) for m in messages])
    sections = [usage_line(name)]
    if system.strip():
        sections.append(system.strip())
    if skills:
        blocks = [f"### {s['name']}\n{s['description']}" if s["description"] else f"### {s['name']}" for s in skills]
        if len(sections) > 1:
            sections.append("---")
        sections.append("## Active Skills\n\n" + "\n\n".join(blocks))
    context = [m.content.strip() for m in others if m.content.strip()]
    if context:
        sections.append("## Context\n\n" + "\n\n".join(context))
    return "\n\n".join(sections)


class _Zoo:
    """The three tools' bodies over ``agents``; ``compile_agent`` resolves one (in a worker thread)."""

    def __init__(self, agents: AgentLibrary, compile_agent: Compile) -> None:
        self.agents = agents
        self.compile_agent = compile_agent

    def skill_text(self, name: str) -> str:
        skill = next((s for s in self.agents.skills() if s.name == name), None)
        return (skill.instructions or skill.description) if skill is not None else ""

    def known(self, name: str) -> None:
        try:
            self.agents.spec(name)
        except NotFound:
            raise ZooNotFound(f"Agent with ID '{name}' not found.") from None

    async def list_agents(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"agents": [{"id": i.name, "name": i.name} for i in self.agents.list()]}

    async def get_agent(self, arguments: dict[str, Any]) -> dict[str, Any]:
        name = agent_id(arguments)
        self.known(name)
        definition = self.agents.definition(name)
        return {
            "id": name, "name": name, "description": definition["description"],
            "systemPrompt": definition.get("system_prompt"),
            "skills": [{"id": s["name"], "name": s["name"], "description": self.skill_text(s["name"]),
                        "enabled": s["enabled"]} for s in definition["skills"]],
            "tools": definition["tools"], "source": definition["source"], "arguments": definition["arguments"],
        }

    async def inject(self, arguments: dict[str, Any]) -> dict[str, Any]:
        name = agent_id(arguments)
        fmt = arguments.get("format", "compiled")
        if fmt not in FORMATS:
            raise ZooInvalid(f"Unknown format '{fmt}'. Use 'compiled' or 'structured'.", "INVALID_FORMAT")
        self.known(name)
        extra = arguments.get("arguments")
        if extra is not None and not isinstance(extra, dict):
            raise ZooInvalid("arguments must be an object of the agent's arguments.")
        resolved = await self.compile_agent(name, extra or {}, "structured")
        assert isinstance(resolved, dict)
        skills = [{"id": s["name"], "name": s["name"], "description": s["instructions"] or s["description"]}
                  for s in resolved["skills"]]
        messages = resolved["messages"]
        if fmt == "compiled":
            return {"agentId": name, "agentName": name,
                    "prompt": compiled_prompt(name, resolved["system"], skills, messages)}
        out = {"agentId": name, "agentName": name, "systemPrompt": resolved["system"], "skills": skills}
        return out | ({"messages": messages} if messages else {})


def _zoo_errors(run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]) -> Callable[
        [dict[str, Any]], Awaitable[dict[str, Any]]]:
    """``run`` with every ``HarnessError`` in AgentZoo's shape (``zoo_error``)."""
    async def call(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return await run(arguments)
        except HarnessError as exc:
            raise zoo_error(exc) from None

    return call


def zoo_tools(agents: AgentLibrary, compile_agent: Compile) -> list[AgentTool]:
    """The three AgentZoo tools over ``agents``; ``compile_agent`` resolves one (in a worker thread)."""
    zoo = _Zoo(agents, compile_agent)
    return [
        AgentTool(
            name="agent_zoo_inject", title="Inject an agent (AgentZoo)",
            description="Return a compiled prompt or structured data for agent injection.",
            input_schema={"type": "object", "properties": {
                "agentId": AGENT_ID,
                "format": {"type": "string", "enum": list(FORMATS), "description": "Output format. 'compiled' = "
                           "single prompt string. 'structured' = JSON with systemPrompt + skills."},
                "arguments": {"type": "object", "description": "The agent's arguments, if it declares any."}},
                "required": ["agentId"]},
            run=_zoo_errors(zoo.inject), annotations=inject_annotations(agents), scope="read"),
        AgentTool(
            name="agent_zoo_list_agents", title="List agents (AgentZoo)",
            description="List available agents for selection.",
            input_schema={"type": "object", "properties": {}, "required": []},
            run=_zoo_errors(zoo.list_agents), annotations=dict(READ_ONLY_LOCAL)),
        AgentTool(
            name="agent_zoo_get_agent", title="Get an agent (AgentZoo)",
            description="Get the full raw agent configuration.",
            input_schema={"type": "object", "properties": {"agentId": AGENT_ID}, "required": ["agentId"]},
            run=_zoo_errors(zoo.get_agent), annotations=dict(READ_ONLY_LOCAL)),
    ]


__all__ = ["ZOO_TOOL_NAMES", "ZooAgentError", "ZooInvalid", "ZooNotFound", "ZooTimeout", "compiled_prompt",
           "zoo_error", "zoo_tools"]
