"""Agents: named personas (system prompt, scoped tools, arguments, skills, optional dynamic context)
from TOML, Lua, Markdown and Python, served as MCP prompts, tools and resources.

Public API: ``build_agent_library(config, extra_agents=())`` -> ``AgentLibrary`` with ``list``,
``find``, ``resolve``, ``compile``, ``definition``, ``complete``, ``list_resources``,
``read_resource``, ``changed``/``reload``/``refresh``. Agents resolve against a
``context_harness.core.context.HarnessContext``. See docs/reference/agents.md.
"""

from context_harness.agents.base import Agent, AgentContext, AgentSpec, Argument
from context_harness.agents.library import AGENT_SCHEME, FORMATS, SKILL_SCHEME, AgentLibrary, build_agent_library
from context_harness.agents.models import (
    AgentArgument,
    AgentInfo,
    AgentMessage,
    AgentPrompt,
    AgentsListResponse,
    SkillOut,
    StructuredAgent,
)
from context_harness.agents.skills import Skill

__all__ = [
    "AGENT_SCHEME", "FORMATS", "SKILL_SCHEME", "Agent", "AgentArgument", "AgentContext", "AgentInfo", "AgentMessage",
    "AgentPrompt", "AgentLibrary", "AgentSpec", "AgentsListResponse", "Argument", "Skill",
    "SkillOut", "StructuredAgent", "build_agent_library",
]
