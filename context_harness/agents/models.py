"""Pydantic models at the agent edges: what ``/agents/list``, ``/agents/{name}/prompt``, the MCP
prompts and the ``agent_*`` tools return. Shapes follow DESIGN §4 exactly."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

AgentSource = Literal["toml", "lua", "markdown", "python"]


class AgentArgument(BaseModel):
    """One argument as clients see it (``prompts/list``, ``/agents/list``)."""

    name: str
    description: str = ""
    required: bool = False


class AgentInfo(BaseModel):
    """One ``/agents/list`` entry."""

    name: str
    description: str = ""
    tools: list[str] = Field(default_factory=list)
    source: AgentSource
    arguments: list[AgentArgument] = Field(default_factory=list)


class AgentMessage(BaseModel):
    """One message of a resolved agent. ``system`` messages (the Context Harness agent spec allows
    them) are folded into the instructions where a protocol has no system role (``agents.render``)."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"]
    content: str


class AgentPrompt(BaseModel):
    """A resolved agent: ``POST /agents/{name}/prompt`` and the input of ``prompts/get``."""

    model_config = ConfigDict(extra="forbid")

    system: str
    tools: list[str] = Field(default_factory=list)
    messages: list[AgentMessage] = Field(default_factory=list)


class AgentsListResponse(BaseModel):
    agents: list[AgentInfo]


class SkillOut(BaseModel):
    """A skill in the ``structured`` form of ``agent_inject``."""

    name: str
    description: str = ""
    instructions: str = ""


class StructuredAgent(BaseModel):
    """``agent_inject`` with ``format = "structured"``."""

    name: str
    system: str
    skills: list[SkillOut] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    messages: list[AgentMessage] = Field(default_factory=list)


class CompiledAgent(BaseModel):
    """``agent_inject`` with ``format = "compiled"``: one string to paste into a fresh chat."""

    name: str
    compiled: str


class ResourceEntry(BaseModel):
    """One ``resources/list`` entry (``mimeType`` spelled as MCP does)."""

    model_config = ConfigDict(populate_by_name=True)

    uri: str
    name: str
    description: str | None = None
    mime_type: str = Field(default="application/json", serialization_alias="mimeType")


class ResourcePage(BaseModel):
    resources: list[ResourceEntry]
    next_cursor: str | None = Field(default=None, serialization_alias="nextCursor")
    total: int = 0  # entries in the whole catalog


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True)


__all__ = ["AgentArgument", "AgentInfo", "AgentMessage", "AgentPrompt", "AgentSource", "AgentsListResponse",
           "CompiledAgent", "ResourceEntry", "ResourcePage", "SkillOut", "StructuredAgent", "dump"]
