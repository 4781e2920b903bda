"""Agents over MCP: every agent as a prompt, ``agent://`` and ``skill://`` resources, tool scopes and
the reload poller. Part of the MCP adapter: it fills a ``mcp_server.Registry`` with plain specs (no
SDK types; ``mcp_server.py`` alone talks to the SDK).

``prompts/get`` delivers the system prompt as the first **user** message, wrapped as
``<instructions agent="NAME">…</instructions>`` plus a line asking the model to follow them (MCP
prompt messages have no system role; see docs/agents.md), then the agent's own messages.
"""

from __future__ import annotations

import logging
from typing import Any

from context_harness.agents import AGENT_SCHEME, SKILL_SCHEME, AgentPrompt, AgentRegistry, HarnessContext
from context_harness.agents.models import AgentInfo
from context_harness.server_registry import PromptArgument, PromptSpec, Registry, ResourceCatalog
from context_harness.tools.agents import sync_agent_tools

log = logging.getLogger(__name__)

FOLLOW = "Follow these instructions for the rest of this conversation."


def instructions_message(name: str, system: str) -> str:
    """The first user message of ``prompts/get``: the system prompt wrapped as instructions."""
    return f'<instructions agent="{name}">\n{system.strip()}\n</instructions>\n\n{FOLLOW}'


def prompt_messages(name: str, prompt: AgentPrompt) -> list[dict[str, str]]:
    """``prompts/get`` messages for a resolved agent: instructions first, then its messages."""
    messages = [{"role": "user", "content": instructions_message(name, prompt.system)}]
    messages.extend({"role": m.role, "content": m.content} for m in prompt.messages)
    return messages


async def resolve(agents: AgentRegistry, harness: Any, name: str, arguments: dict[str, Any] | None) -> AgentPrompt:
    """Resolve ``name`` in a worker thread with a fresh ``HarnessContext`` (REST uses it too)."""
    context = HarnessContext(harness)
    return await harness.run_blocking(agents.resolve, name, arguments or {}, context)


def prompt_spec(info: AgentInfo, agents: AgentRegistry, harness: Any) -> PromptSpec:
    async def render(arguments: dict[str, str]) -> dict[str, Any]:
        prompt = await resolve(agents, harness, info.name, arguments)
        return {"description": info.description or None, "messages": prompt_messages(info.name, prompt)}

    async def complete(argument: str, prefix: str) -> list[str]:
        return agents.complete(info.name, argument, prefix)

    return PromptSpec(
        name=info.name, description=info.description or None, render=render, complete=complete,
        arguments=[PromptArgument(a.name, a.description or None, a.required) for a in info.arguments],
    )


def install_agents(registry: Registry, agents: AgentRegistry, harness: Any) -> None:
    """Serve ``agents`` from ``registry``: prompts, the resource catalog, tool scopes, and a poller
    that reloads changed agent files and announces ``prompts``/``resources``/``tools`` changes."""
    registry.agents = agents
    registry.agent_scope = agents.tools
    registry.set_prompts([prompt_spec(info, agents, harness) for info in agents.list()])
    registry.catalog = ResourceCatalog(schemes=(AGENT_SCHEME, SKILL_SCHEME), page=agents.list_resources,
                                       read=agents.read_resource)

    async def poll() -> None:
        import anyio

        if not await anyio.to_thread.run_sync(agents.refresh):
            return
        log.info("agents reloaded: %d agents, %d skills", len(agents.names()), len(agents.skills()))
        registry.set_prompts([prompt_spec(info, agents, harness) for info in agents.list()])
        registry.touch("resources")
        if registry.tool_source is not None:
            changes = sync_agent_tools(registry.tool_source, agents, harness, harness.config.server.agent_tools)
            if changes:
                registry.apply(changes)

    registry.pollers.append(poll)


__all__ = ["FOLLOW", "install_agents", "instructions_message", "prompt_messages", "prompt_spec", "resolve"]
