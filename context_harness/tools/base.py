"""What a tool is: a name, a JSON Schema for its arguments, truthful annotations, ``call`` and ``render``.

Built-in tools (``search``, ``get``, ``sources``), the agent tools, extension tools and Lua tools
(``[tools.script.NAME]``) all implement ``Tool`` and live in one ``ToolSet``; MCP, REST and
the CLI render what ``call`` returns and never special-case where a tool came from.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

READ_ONLY_LOCAL: dict[str, Any] = {"readOnlyHint": True, "openWorldHint": False, "idempotentHint": True}
"""The annotations of a tool that only reads the local knowledge base."""

SCOPES: dict[str, str] = {
    "read": "search and read the knowledge base: documents, sources, agents' definitions, read-only tools",
    "write": "write, edit, move and delete notes, and call the other tools that change something",
    "agents": "run agents (agent_run): a chat model works through an agent's own tools on your behalf",
}
"""The OAuth scopes a remote client may be granted; every tool needs exactly one (``required_scope``)."""


@runtime_checkable
class Tool(Protocol):
    """``call`` takes raw, untrusted arguments, validates them (``BadRequest`` names the problem)
    and returns the JSON object that is both the MCP ``structuredContent`` and the REST body.
    Failures are ``HarnessError``s (``bad_request``, ``tool_error``, ``timeout`` ...).

    ``annotations`` holds only what is declared (MCP hint names: ``readOnlyHint``,
    ``destructiveHint``, ``idempotentHint``, ``openWorldHint``, ``title``); an absent hint takes the
    MCP default, so a tool is not read-only unless it says so.
    """

    name: str
    description: str
    title: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any]
    builtin: bool

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class FunctionTool:
    """A ``Tool`` made of an async function: the built-ins, the agent tools, and a simple way for
    extensions to write one. ``run`` validates its arguments and returns the JSON payload."""

    name: str
    title: str | None
    description: str
    input_schema: dict[str, Any]
    run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=lambda: dict(READ_ONLY_LOCAL))
    builtin: bool = True
    render: Callable[[dict[str, Any]], str] | None = None
    scope: str | None = None  # the OAuth scope a call needs; None: by its annotations (``required_scope``)

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.run(arguments)


def describe(tool: Tool) -> dict[str, Any]:
    """The tool-list entry: ``GET /tools/list``, ``ctx tool list --json`` (one shape everywhere)."""
    return {"name": tool.name, "description": tool.description, "builtin": tool.builtin,
            "parameters": tool.input_schema}


def hints(tool: Tool) -> dict[str, Any]:
    """The MCP ``annotations`` of a tool: every hint stated, absent ones at the MCP defaults (not
    read-only, destructive, not idempotent, open world); nothing is assumed."""
    declared = tool.annotations
    read_only = bool(declared.get("readOnlyHint", False))
    out: dict[str, Any] = {"readOnlyHint": read_only, "openWorldHint": bool(declared.get("openWorldHint", True))}
    title = tool.title or declared.get("title")
    if title:
        out["title"] = title
    if not read_only:  # destructive/idempotent are meaningful only for tools that write
        out["destructiveHint"] = bool(declared.get("destructiveHint", True))
        out["idempotentHint"] = bool(declared.get("idempotentHint", False))
    return out


def required_scope(tool: Tool) -> str:
    """The scope (``SCOPES``) a remote client needs to call ``tool``: the one the tool declares
    (``scope``, e.g. ``agent_run``'s ``agents``), else ``read`` for a read-only tool and ``write`` for
    any other (notes, and Lua or extension tools that do not say they only read)."""
    declared = getattr(tool, "scope", None)
    if declared in SCOPES:
        return str(declared)
    return "read" if hints(tool)["readOnlyHint"] else "write"


def render_json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, indent=2)


def render(tool: Tool, payload: dict[str, Any]) -> str:
    """The readable text block of a tool's result: the tool's own ``render`` when it has one."""
    own = getattr(tool, "render", None)
    return own(payload) if callable(own) else render_json(payload)


@dataclass
class ToolChanges:
    """What one reload changed: new or re-registered tools, and removed names."""

    added: list[Tool] = field(default_factory=list)
    replaced: list[Tool] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.replaced or self.removed)

    def summary(self) -> str:
        parts = [f"{label} {', '.join(names)}" for label, names in (
            ("added", [t.name for t in self.added]), ("reloaded", [t.name for t in self.replaced]),
            ("removed", self.removed)) if names]
        return "; ".join(parts) or "no changes"


__all__ = ["READ_ONLY_LOCAL", "SCOPES", "FunctionTool", "Tool", "ToolChanges", "describe", "hints", "render",
           "render_json", "required_scope"]
