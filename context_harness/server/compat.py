"""Protocol shapes of the systems this one replaces, for the MCP adapter (``[server] compat``).

``orchestr8``: ``agent://NAME`` resources as orchestr8 serves them. ``resources/list`` entries carry
the mimeType ``application/vnd.orchestr8.agent``, numeric offset cursors are accepted and given
(``"20"``, ``"40"`` ...) and the result's ``_meta`` holds ``total`` (agent:// and skill:// resources
in the catalog) and ``count`` (resources on this page); ``resources/read`` answers with the mimeType
``application/vnd.orchestr8.agent+json`` and the JSON ``{name, description, model, capabilities,
content}`` (``content``: the agent's Markdown/system prompt; ``model`` and ``capabilities`` from the
agent file's front matter), followed by this server's own fields (source, tools, arguments, skills,
metadata). AgentZoo's tools are tools like any other (``tools/agentzoo.py``).
"""

from __future__ import annotations

import json
from typing import Any

ORCHESTR8 = "orchestr8"
ORCHESTR8_LIST_MIME = "application/vnd.orchestr8.agent"
ORCHESTR8_READ_MIME = "application/vnd.orchestr8.agent+json"
KEPT = ("source", "tools", "arguments", "skills", "metadata")


def capabilities(metadata: dict[str, Any]) -> list[str]:
    """``capabilities`` from front matter: a list, or a comma-separated string; [] when absent."""
    raw = metadata.get("capabilities")
    if isinstance(raw, str):
        raw = raw.split(",")
    if not isinstance(raw, list):
        return []
    return [str(item).strip() for item in raw if str(item).strip()]


def orchestr8_definition(definition_text: str) -> str:
    """An ``agent://`` definition (our JSON text) in orchestr8's shape (see the module docstring)."""
    definition = json.loads(definition_text)
    metadata = definition.get("metadata") or {}
    model = metadata.get("model")
    out: dict[str, Any] = {
        "name": definition["name"], "description": definition.get("description", ""),
        "model": model if isinstance(model, str) else None, "capabilities": capabilities(metadata),
        "content": definition.get("system_prompt") or "",
    }
    out.update({key: definition[key] for key in KEPT if key in definition})
    return json.dumps(out, ensure_ascii=False, indent=2)


__all__ = ["ORCHESTR8", "ORCHESTR8_LIST_MIME", "ORCHESTR8_READ_MIME", "capabilities", "orchestr8_definition"]
