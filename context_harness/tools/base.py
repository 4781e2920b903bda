"""What a tool is: a name, a JSON Schema for its arguments, truthful annotations and ``call``.

Built-in tools (``search``, ``get``, ``sources``) and Lua tools (``[tools.script.NAME]``) both
implement ``Tool`` and live in one ``ToolRegistry``; MCP, REST and the CLI render what ``call``
returns and never special-case where a tool came from.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


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


def describe(tool: Tool) -> dict[str, Any]:
    """The ``GET /tools/list`` entry (and ``ctx tool list --json``)."""
    return {"name": tool.name, "description": tool.description, "builtin": tool.builtin,
            "parameters": tool.input_schema}


__all__ = ["Tool", "describe"]
