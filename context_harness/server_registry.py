"""What the MCP server offers, as plain data: tool, prompt, resource and template specs in a
``Registry`` (no SDK types), and the built-in tools and document template over a ``Harness``.

``mcp_server`` serves a ``Registry`` with the SDK; keeping the registry apart keeps that module
small and lets agents and extensions register without touching the SDK.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel

from context_harness.errors import NotFound
from context_harness.tools.base import Tool
from context_harness.tools.registry import ToolChanges, ToolRegistry

log = logging.getLogger(__name__)

DOCUMENT_TEMPLATE = "ctx://documents/{id}"
DOCUMENT_PREFIX = "ctx://documents/"
PAGE_SIZE = 100


# -- the registry (plain data; no SDK types) ----------------------------------------------------

ToolCall = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Raw, untrusted arguments -> the structured payload (a JSON object). Raises ``HarnessError``."""


@dataclass
class ToolSpec:
    """One tool, as MCP (``tools/list``, ``tools/call``) and REST (``/tools/*``) both see it.

    ``call`` validates its own arguments (with ``context_harness.validation``) and returns the exact
    JSON object that is the MCP ``structuredContent`` and the REST response body, so the two cannot
    differ. Lua tools return ``{"result": ...}``. ``render`` turns that payload into the readable
    text block; without it the text block is the JSON itself.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    call: ToolCall
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True
    builtin: bool = False
    render: Callable[[dict[str, Any]], str] | None = None

    def annotations(self) -> dict[str, Any]:
        out: dict[str, Any] = {"readOnlyHint": self.read_only, "openWorldHint": self.open_world}
        if self.title:
            out["title"] = self.title
        if not self.read_only:  # destructive/idempotent are meaningful only for tools that write
            out["destructiveHint"] = self.destructive
            out["idempotentHint"] = self.idempotent
        return out

    def text(self, payload: dict[str, Any]) -> str:
        if self.render is not None:
            return self.render(payload)
        return json.dumps(payload, ensure_ascii=False, indent=2)


@dataclass
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@dataclass
class PromptSpec:
    """A prompt (agents are prompts). ``render`` gets string arguments and returns
    ``{"description": str | None, "messages": [{"role": "user"|"assistant", "content": str}]}``."""

    name: str
    description: str | None
    render: Callable[[dict[str, str]], Awaitable[dict[str, Any]]]
    arguments: list[PromptArgument] = field(default_factory=list)
    title: str | None = None
    complete: Callable[[str, str], Awaitable[list[str]]] | None = None  # (argument, prefix) -> values


@dataclass
class ResourceSpec:
    """A concrete resource (e.g. ``agent://NAME``); ``read`` returns its text."""

    uri: str
    name: str
    read: Callable[[], Awaitable[str]]
    description: str | None = None
    mime_type: str | None = "text/plain"
    title: str | None = None


@dataclass
class TemplateSpec:
    """A resource template. ``match`` returns the parameters when a URI belongs to it, else None."""

    uri_template: str
    name: str
    match: Callable[[str], dict[str, str] | None]
    read: Callable[[dict[str, str]], Awaitable[str]]
    description: str | None = None
    mime_type: str | None = "text/plain"
    title: str | None = None


@dataclass
class ResourceCatalog:
    """A paged set of resources owned by URI scheme (agents: ``agent://``, ``skill://``).

    ``page(cursor)`` returns ``{"resources": [{uri, name, description, mimeType}], "nextCursor"}``
    with its own opaque cursor (``HarnessError`` for a bad one); ``read(uri)`` returns the text
    (``NotFound`` for an unknown URI of its schemes). Both are cheap and run on the event loop.
    """

    schemes: tuple[str, ...]
    page: Callable[[str | None], dict[str, Any]]
    read: Callable[[str], str]
    mime_type: str = "application/json"

    def owns(self, uri: str) -> bool:
        return uri.startswith(self.schemes)


Listener = Callable[[str], None]
"""Called with ``"tools"``, ``"prompts"`` or ``"resources"`` after the registry changes."""


class Registry:
    """Everything the MCP server and the REST shim offer. Mutations notify listeners.

    ``agent_scope`` is the hook for agents: given an agent name it returns the names of the tools
    that agent may use (or raises ``NotFound``). ``tools(agent=NAME)`` applies it.
    """

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._prompts: dict[str, PromptSpec] = {}
        self._resources: dict[str, ResourceSpec] = {}
        self._templates: dict[str, TemplateSpec] = {}
        self._listeners: list[Listener] = []
        self.agent_scope: Callable[[str], Collection[str]] | None = None
        self.tool_source: ToolRegistry | None = None  # reloaded while serving (``HarnessServer.watch_tools``)
        self.agents: Any = None  # the ``AgentRegistry`` served (``mcp_agents.install_agents``), for REST too
        self.catalog: ResourceCatalog | None = None  # paged resources listed after the concrete ones
        self.pollers: list[Callable[[], Awaitable[None]]] = []  # run every reload interval while serving

    # listeners
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self, kind: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind)
            except Exception:
                log.exception("registry listener failed")

    # tools
    def add_tool(self, spec: ToolSpec, *, replace: bool = False) -> None:
        if spec.name in self._tools and not replace:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = spec
        self._changed("tools")

    def remove_tool(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self._changed("tools")

    def apply(self, changes: ToolChanges) -> None:
        """Re-register what a ``ToolRegistry.reload()`` changed (each change notifies listeners)."""
        for tool in [*changes.added, *changes.replaced]:
            self.add_tool(tool_spec(tool), replace=True)
        for name in changes.removed:
            self.remove_tool(name)

    def tool(self, name: str, agent: str | None = None) -> ToolSpec | None:
        spec = self._tools.get(name)
        if spec is None or (agent is not None and name not in self.agent_tools(agent)):
            return None
        return spec

    def tools(self, agent: str | None = None) -> list[ToolSpec]:
        if agent is None:
            return list(self._tools.values())
        allowed = self.agent_tools(agent)
        return [s for s in self._tools.values() if s.name in allowed]

    def agent_tools(self, agent: str) -> Collection[str]:
        if self.agent_scope is None:
            raise NotFound(f"unknown agent {agent!r}: no agents are configured")
        return self.agent_scope(agent)

    # prompts
    def add_prompt(self, spec: PromptSpec, *, replace: bool = False) -> None:
        if spec.name in self._prompts and not replace:
            raise ValueError(f"a prompt named {spec.name!r} is already registered")
        self._prompts[spec.name] = spec
        self._changed("prompts")

    def remove_prompt(self, name: str) -> None:
        if self._prompts.pop(name, None) is not None:
            self._changed("prompts")

    def set_prompts(self, specs: list[PromptSpec]) -> None:
        """Replace every prompt at once (one ``prompts/list_changed``, whatever the count)."""
        self._prompts = {spec.name: spec for spec in specs}
        self._changed("prompts")

    def prompt(self, name: str) -> PromptSpec | None:
        return self._prompts.get(name)

    def prompts(self) -> list[PromptSpec]:
        return list(self._prompts.values())

    # resources
    def add_resource(self, spec: ResourceSpec, *, replace: bool = False) -> None:
        if spec.uri in self._resources and not replace:
            raise ValueError(f"a resource {spec.uri!r} is already registered")
        self._resources[spec.uri] = spec
        self._changed("resources")

    def remove_resource(self, uri: str) -> None:
        if self._resources.pop(uri, None) is not None:
            self._changed("resources")

    def resources(self) -> list[ResourceSpec]:
        return list(self._resources.values())

    def touch(self, kind: str) -> None:
        """Announce that ``kind`` ("tools", "prompts", "resources") changed outside the registry's
        own mutations (e.g. the resource catalog reloaded)."""
        self._changed(kind)

    def add_template(self, spec: TemplateSpec, *, replace: bool = False) -> None:
        if spec.uri_template in self._templates and not replace:
            raise ValueError(f"a resource template {spec.uri_template!r} is already registered")
        self._templates[spec.uri_template] = spec
        self._changed("resources")

    def templates(self) -> list[TemplateSpec]:
        return list(self._templates.values())

    def resolve(self, uri: str) -> tuple[Callable[[], Awaitable[str]], str | None] | None:
        """The reader and MIME type for ``uri``: a concrete resource first, then the templates."""
        resource = self._resources.get(uri)
        if resource is not None:
            return resource.read, resource.mime_type
        catalog = self.catalog
        if catalog is not None and catalog.owns(uri):
            async def read_catalog() -> str:
                return catalog.read(uri)

            return read_catalog, catalog.mime_type
        for template in self._templates.values():
            params = template.match(uri)
            if params is not None:
                return (lambda tpl=template, p=params: tpl.read(p)), template.mime_type
        return None


# -- the built-ins --------------------------------------------------------------------------------

def render_search(payload: dict[str, Any]) -> str:
    results = payload.get("results", [])
    if not results:
        return "No documents matched. Try other words, fewer filters, or `sources` to see what is indexed."
    lines = [f"{len(results)} result{'s' if len(results) != 1 else ''}:"]
    for i, r in enumerate(results, 1):
        lines.append(f"{i}. {r.get('title') or r['source_id']}  [{r['source']} · {r['source_id']}]  "
                     f"score {r['score']:.3f}")
        lines.append(f"   id: {r['id']}")
        if r.get("updated_at"):
            lines.append(f"   updated: {r['updated_at']}")
        if r.get("snippet"):
            lines.append(f"   {' '.join(r['snippet'].split())}")
    lines.append("Call `get` with an id for the full document.")
    return "\n".join(lines)


def render_document(doc: dict[str, Any]) -> str:
    """A document as Markdown: title, a metadata list, then the body."""
    lines = [f"# {doc.get('title') or doc['source_id']}", ""]
    fields = [("id", doc["id"]), ("source", doc["source"]), ("source_id", doc["source_id"]),
              ("url", doc.get("source_url")), ("author", doc.get("author")), ("created", doc.get("created_at")),
              ("updated", doc.get("updated_at")), ("content_type", doc.get("content_type"))]
    for key, value in (doc.get("metadata") or {}).items():
        if value not in (None, "", [], {}):
            fields.append((key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    lines.extend(f"- **{k}**: {v}" for k, v in fields if v)
    lines.extend(["", "---", "", doc.get("body", "").rstrip(), ""])
    return "\n".join(lines)


def render_sources(payload: dict[str, Any]) -> str:
    sources = payload.get("sources", [])
    if not sources:
        return "No sources are configured."
    lines = []
    for s in sources:
        state = "healthy" if s["healthy"] else "unhealthy"
        line = (f"- {s['name']}: {s['document_count']} documents, {s['chunk_count']} chunks, {state}, "
                f"last sync {s['last_sync'] or 'never'}")
        if s.get("notes"):
            line += f" ({s['notes']})"
        lines.append(line)
    return "\n".join(lines)


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "search": render_search, "get": render_document, "sources": render_sources}


def render_result(payload: dict[str, Any]) -> str:
    """A Lua tool's ``{"result": ...}`` as text: a string as is, anything else as JSON."""
    result = payload.get("result")
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=2)


def tool_spec(tool: Tool) -> ToolSpec:
    """A ``Tool`` (built-in or Lua) as the registry entry MCP and REST serve. Absent hints take the
    MCP defaults (not read-only, destructive, not idempotent, open world): nothing is assumed."""
    hints = tool.annotations
    return ToolSpec(
        name=tool.name, description=tool.description, input_schema=tool.input_schema, call=tool.call,
        output_schema=tool.output_schema, title=tool.title or hints.get("title"),
        read_only=hints.get("readOnlyHint", False), destructive=hints.get("destructiveHint", True),
        idempotent=hints.get("idempotentHint", False), open_world=hints.get("openWorldHint", True),
        builtin=tool.builtin,
        render=getattr(tool, "render", None) or (RENDERERS.get(tool.name) if tool.builtin else render_result),
    )


def build_registry(harness: Any, tools: ToolRegistry | None = None, *, agents: Any = None,
                   extra_tools: Collection[Tool] = ()) -> Registry:
    """A registry holding the tools (built-ins, agent tools, ``extra_tools`` and ``[tools.script.NAME]``
    Lua tools, from ``ToolRegistry.build`` unless ``tools`` is given), the agents (``agents``: an
    ``AgentRegistry``; default: the config's agents without entry-point discovery) as prompts,
    resources and tool scopes, and the document template for ``harness``. The tool registry is kept
    as ``tool_source`` for reloads."""
    from context_harness.agents import build_agent_registry
    from context_harness.mcp_agents import install_agents

    registry = Registry()
    agents = agents if agents is not None else build_agent_registry(harness.config, discover=False)
    tools = tools if tools is not None else ToolRegistry.build(harness.config, harness, agents=agents,
                                                               extra_tools=extra_tools)
    for tool in tools:
        registry.add_tool(tool_spec(tool))
    registry.tool_source = tools

    def match_document(uri: str) -> dict[str, str] | None:
        if not uri.startswith(DOCUMENT_PREFIX):
            return None
        doc_id = unquote(uri[len(DOCUMENT_PREFIX):])
        if not doc_id or "/" in doc_id or len(doc_id) > 200:
            return None
        return {"id": doc_id}

    async def read_document(params: dict[str, str]) -> str:
        return render_document(_dump(await harness.get(params["id"])))

    registry.add_template(TemplateSpec(
        uri_template=DOCUMENT_TEMPLATE, name="document", title="A document in the knowledge base",
        description="A document as Markdown (title, metadata, body); use an id returned by `search`.",
        mime_type="text/markdown", match=match_document, read=read_document,
    ))
    install_agents(registry, agents, harness)
    return registry
