"""What an MCP client reads from a tool result."""

from __future__ import annotations

import json
from typing import Any


def error_of(result: Any) -> dict[str, Any]:
    """The ``{"code", "message"}`` of an ``isError`` tool result: its text block is the JSON error, and it
    carries no ``structuredContent`` (which would have to match the tool's ``outputSchema``)."""
    assert result.is_error, result
    assert result.structured_content is None, result.structured_content
    error: dict[str, Any] = json.loads(result.content[0].text)["error"]
    return error


def payload_of(result: Any) -> dict[str, Any]:
    """What a tool answered, as the REST body has it: the structured content of a result, the JSON error
    (``{"error": {...}}``) of an ``isError`` one."""
    if result.is_error:
        return {"error": error_of(result)}
    payload: dict[str, Any] = result.structured_content
    return payload
