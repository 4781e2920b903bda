"""``reference/mcp-tools.md``: every MCP tool the server can publish, from the one tool set.

The tool set is built four times, as the server builds it: for a config without agents (the
built-in tools), with one agent (plus the agent tools), with ``[server] compat = ["agentzoo"]``
(plus AgentZoo's) and with a writable folder (plus the note tools); then once for each tool profile
(``[server] profile``: ChatGPT's ``search`` and ``fetch``). The schemas are the ones ``tools/list``
publishes (``server/schemas.py``).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from devtools.markdown import GENERATED_NOTE, Undocumented

LAYERS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("Built-in tools", "Always published.", {}),
    ("Agent tools", "Published when at least one agent is defined and `[server] agent_tools` is true (the default).",
     {"agents": {"example": {"system_prompt": "An example agent."}}}),
    ("Compatibility tools", 'Published with `[server] compat = ["agentzoo"]` when at least one agent is defined: '
     "AgentZoo's names and shapes, for clients written for it.",
     {"agents": {"example": {"system_prompt": "An example agent."}}, "server": {"compat": ["agentzoo"]}}),
    ("Note tools", "Published while at least one `[connectors.filesystem.NAME]` has `writable = true` (see the "
     "how-to *Let the assistant write notes*).",
     {"agents": {"example": {"system_prompt": "An example agent."}}, "server": {"compat": ["agentzoo"]},
      "connectors": {"filesystem": {"notes": {"root": "notes", "writable": True}}}}),
)


PROFILES: tuple[tuple[str, str, str], ...] = (
    ("ChatGPT's tools", "Published to OpenAI's clients (`clientInfo` name `openai-mcp`), or to every client with "
     '`[server] profile = "chatgpt"`: `search` in place of the one above, and `fetch` beside `get`, with OpenAI\'s '
     "names and shapes for ChatGPT connectors (deep research, company knowledge). Each answer is exactly one text "
     "item holding the JSON, which is also the `structuredContent`. The session's other tools stay listed. See the "
     "how-to *Use from ChatGPT*.", "chatgpt"),
)


def registry_tools(extra: dict[str, Any], profile: str | None = None) -> list[Any]:
    """The tools a server publishes for a config made of ``extra`` (no extensions, no agent files), to a
    session of tool profile ``profile``."""
    from context_harness.config import from_dict
    from context_harness.core.harness import Harness
    from context_harness.extensions import Extensions

    with tempfile.TemporaryDirectory() as folder:
        agents = {"paths": [], "skill_paths": [], **extra.get("agents", {})}
        raw = {**extra, "db": {"path": str(Path(folder) / "ctx.sqlite")}, "agents": agents}
        return list(Harness(from_dict(raw, None), Extensions()).tools(None, profile))


def profile_layers() -> list[tuple[str, str, list[Any]]]:
    """``(title, when, tools)``: each profile's own tools (headed ``NAME (profile)`` on the page)."""
    from context_harness.tools.chatgpt import STANDS_FOR

    return [(title, when, [t for t in registry_tools({}, profile) if t.name in STANDS_FOR])
            for title, when, profile in PROFILES]


def layers() -> list[tuple[str, str, list[Any]]]:
    """``(title, when, tools)``: each layer holds the tools the ones before it do not."""
    seen: set[str] = set()
    out = []
    for title, when, extra in LAYERS:
        tools = [t for t in registry_tools(extra) if t.name not in seen]
        seen.update(t.name for t in tools)
        out.append((title, when, tools))
    return out


def undescribed(schema: dict[str, Any], path: str = "") -> list[str]:
    """The properties of an input schema (nested ones too) without a description."""
    out = []
    for name, node in (schema.get("properties") or {}).items():
        if not node.get("description"):
            out.append(path + name)
        out += undescribed(node, f"{path}{name}.")
        if isinstance(node.get("items"), dict):
            out += undescribed(node["items"], f"{path}{name}[].")
    return out


def missing(found: list[tuple[str, str, list[Any]]]) -> list[str]:
    out = []
    for _title, _when, tools in found:
        for tool in tools:
            if not (tool.description or "").strip():
                out.append(f"{tool.name} (its description)")
            out += [f"{tool.name}: argument {p}" for p in undescribed(tool.input_schema)]
    return out


def result_models() -> dict[str, Any]:
    """The pydantic model of each tool's result, by tool name: their field descriptions are listed under the
    published schema, which says structure only (``tools.builtin.schema_of``)."""
    from context_harness.models import (
        DocumentOut,
        NoteResult,
        RecentResponse,
        RelatedResponse,
        SearchResponse,
        SourcesResponse,
    )
    from context_harness.tools.agents import AgentListResponse, AgentRunOut

    notes = dict.fromkeys(("note_write", "note_edit", "note_move", "note_delete", "note_restore"), NoteResult)
    return {"search": SearchResponse, "get": DocumentOut, "sources": SourcesResponse, "recent": RecentResponse,
            "related": RelatedResponse, "agent_list": AgentListResponse, "agent_run": AgentRunOut, **notes}


def field_notes(model: Any) -> list[str]:
    """``- `path`: description`` for each described field of ``model``'s result, nested ones by path
    (``results[].chunk``); a shape used in several places is listed at its first."""
    schema = model.model_json_schema(mode="serialization")
    defs = schema.get("$defs", {})
    seen: set[str] = set()
    out: list[str] = []

    def objects(node: dict[str, Any], suffix: str) -> list[tuple[dict[str, Any], str]]:
        if isinstance(node.get("$ref"), str):
            name = node["$ref"].removeprefix("#/$defs/")
            if name in seen or name not in defs:
                return []
            seen.add(name)
            return objects(defs[name], suffix)
        found = [(node, suffix)] if "properties" in node else []
        for branch in node.get("anyOf", []):
            found += objects(branch, suffix)
        if isinstance(node.get("items"), dict):
            found += objects(node["items"], suffix + "[]")
        return found

    def walk(node: dict[str, Any], path: str) -> None:
        for name, prop in node.get("properties", {}).items():
            if prop.get("description"):
                out.append(f"- `{path}{name}`: {prop['description']}")
            for sub, suffix in objects(prop, ""):
                walk(sub, f"{path}{name}{suffix}.")

    walk(schema, "")
    return out


def schema_block(schema: dict[str, Any] | None) -> list[str]:
    if schema is None:
        return ["None published (the description above says what the result holds).", ""]
    return ["```json", json.dumps(schema, indent=2, ensure_ascii=False), "```", ""]


def page() -> str:
    from context_harness.server.schemas import portable_input, portable_output
    from context_harness.tools.base import hints

    found = layers()
    profiles = profile_layers()
    models = result_models()
    problems = missing(found + profiles)
    if problems:
        raise Undocumented("reference/mcp-tools.md", problems, "the tool's module (description=, the request "
                           "model's Field(description=...))")
    out = ["# MCP tools reference", "", GENERATED_NOTE.format(source="the tool registry (`context_harness/tools/`)"),
           "", "Every tool a server publishes in `tools/list`, with the JSON Schemas of its arguments and of its "
           "`structuredContent`, exactly as published; a result's schema says its structure only, and what its fields "
           "mean is listed below it. The same tools answer over REST (`POST /tools/NAME`) and "
           "`ctx tool test`. Besides these, every Lua tool of your config (`[tools.script.NAME]`) and every tool an "
           "installed extension registers is published the same way: `ctx tool list` shows them all.", "",
           "The annotations below are those of a config whose agents are all TOML or Markdown agents: "
           "`agent_inject` is not read-only, and open-world, when a Lua or Python agent may reach the network.", ""]
    for (title, when, tools), suffix in [*((layer, "") for layer in found),
                                         *((layer, f" ({profile})") for layer, (_, _, profile) in zip(
                                             profiles, PROFILES, strict=True))]:
        out += [f"## {title}", "", when, ""]
        for tool in tools:
            annotations = ", ".join(f"`{k}: {json.dumps(v)}`" for k, v in hints(tool).items() if k != "title")
            out += [f"### {tool.name}{suffix}", "", f"**{tool.title}**" if tool.title else "", "", tool.description, "",
                    f"Annotations: {annotations}.", "", "Arguments (`inputSchema`):", ""]
            out += schema_block(portable_input(tool.input_schema))
            out += ["Result (`outputSchema`):", ""]
            out += schema_block(portable_output(tool.output_schema))
            own = not suffix and tool.name in models and tool.output_schema  # a profile's search is another shape
            notes = field_notes(models[tool.name]) if own else []
            out += ["What the result's fields mean:", "", *notes, ""] if notes else []
    return "\n".join(out).rstrip() + "\n"


def names() -> list[str]:
    return [tool.name for _title, _when, tools in layers() for tool in tools]

