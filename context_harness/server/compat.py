"""Protocol shapes of the systems this one replaces, for the MCP adapter (``[server] compat``).

``orchestr8``: ``agent://NAME`` resources as orchestr8 serves them. ``resources/list`` entries carry
the mimeType ``application/vnd.orchestr8.agent``, numeric offset cursors are accepted and given
(``"20"``, ``"40"`` ...) and the result's ``_meta`` holds ``total`` (agent:// and skill:// resources
in the catalog) and ``count`` (resources on this page); ``resources/read`` answers with the mimeType
``application/vnd.orchestr8.agent+json`` and the JSON ``{name, description, model, capabilities,
content}`` (``content``: the agent's Markdown/system prompt; ``model`` and ``capabilities`` from the
agent file's front matter), followed by this server's own fields (source, tools, arguments, skills,
metadata). AgentZoo's tools are tools like any other (``tools/agentzoo.py``).

ChatGPT (``[server] profile``): a session whose client is OpenAI's gets ChatGPT's ``search`` and
``fetch`` (``tools/chatgpt.py``). OpenAI's clients are told by the ``clientInfo`` they send: name (or
title) ``openai-mcp``, or ``openai-mcp/VERSION`` as some of them write it. ``profile = "chatgpt"`` gives
every session those tools, ``"standard"`` none.
"""

from __future__ import annotations

import json
from typing import Any

ORCHESTR8 = "orchestr8"
ORCHESTR8_LIST_MIME = "application/vnd.orchestr8.agent"
ORCHESTR8_READ_MIME = "application/vnd.orchestr8.agent+json"
KEPT = ("source", "tools", "arguments", "skills", "metadata")


OPENAI_CLIENT = "openai-mcp"


def is_openai_client(name: str | None, title: str | None = None) -> bool:
    """Whether a ``clientInfo`` name or title is OpenAI's (``openai-mcp``, ``openai-mcp/1.0.0``)."""
    return any(isinstance(text, str) and (text.strip().lower() == OPENAI_CLIENT
                                          or text.strip().lower().startswith(OPENAI_CLIENT + "/"))
               for text in (name, title))


def session_profile(setting: str, name: str | None, title: str | None = None) -> str | None:
    """The tool profile of a session (``"chatgpt"`` or None, the standard tools) under ``[server]
    profile`` = ``setting``, for a client that sent ``clientInfo`` ``name``/``title``."""
    if setting == "auto":
        return "chatgpt" if is_openai_client(name, title) else None
    return "chatgpt" if setting == "chatgpt" else None


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


__all__ = ["OPENAI_CLIENT", "ORCHESTR8", "ORCHESTR8_LIST_MIME", "ORCHESTR8_READ_MIME", "capabilities",
           "is_openai_client", "orchestr8_definition", "session_profile"]
