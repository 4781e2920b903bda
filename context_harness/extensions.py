"""The Python extension API: ship agents, tools and connectors in your own package.

Everything an extension needs is importable from here::

    from context_harness.extensions import Agent, AgentPrompt, Tool, Connector, SourceItem, Candidate

Three entry-point groups are discovered at start (``importlib.metadata``)::

    [project.entry-points."context_harness.agents"]       # an Agent class (instantiated with no
    release-notes = "my_pkg.agents:ReleaseNotesAgent"       # arguments) or an Agent instance
    [project.entry-points."context_harness.tools"]        # a Tool class or instance
    word_count = "my_pkg.tools:WordCount"
    [project.entry-points."context_harness.connectors"]   # a connector TYPE: a callable
    changelog = "my_pkg.connectors:ChangelogConnector"     # (name, entry, config) -> Connector

Or register them in code and build a server with them (the ``python -m my_harness`` of a team)::

    from context_harness.mcp_server import run_server

    setup = prepare_server(config, agents=[MyAgent()], tools=[MyTool()], connectors=[my_connector])
    run_server(setup)                       # stdio; run_server(setup, http=True) for HTTP

Built-in agents (TOML, Markdown, Lua) go through the same registry as Python ones, and built-in
connector types through the same ``ConnectorRegistry`` as extension types. This module is core: it
never imports an adapter; serving a ``ServerSetup`` is ``context_harness.mcp_server.run_server``
(the real ``ctx serve`` path calls ``prepare_server`` too, so entry points are discovered at start).
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from context_harness.agents.base import Agent, AgentContext
from context_harness.agents.models import AgentArgument, AgentMessage, AgentPrompt
from context_harness.agents.registry import AgentRegistry
from context_harness.config import Config
from context_harness.connectors.base import Candidate, Connector, ScanReport, SourceItem
from context_harness.connectors.registry import ConnectorFactory, ConnectorRegistry, default_registry
from context_harness.errors import (
    AgentError,
    BadRequest,
    ConfigError,
    HarnessError,
    NotConfigured,
    NotFound,
    Timeout,
    ToolError,
)
from context_harness.tools.base import Tool

log = logging.getLogger(__name__)

AGENTS_GROUP = "context_harness.agents"
TOOLS_GROUP = "context_harness.tools"
CONNECTORS_GROUP = "context_harness.connectors"
GROUPS = (AGENTS_GROUP, TOOLS_GROUP, CONNECTORS_GROUP)


def load_entry_points(group: str) -> list[tuple[Any, str]]:
    """Load every entry point of ``group`` -> ``[(object, origin)]`` sorted by entry-point name.

    Agent and tool classes are instantiated with no arguments; connector entries are returned as
    they are (a factory). A failing import is a ``ConfigError`` naming the entry point and package.
    """
    return [(obj, origin) for _, obj, origin in _load(group)]


def _load(group: str) -> list[tuple[str, Any, str]]:
    if group not in GROUPS:
        raise ValueError(f"unknown entry-point group {group!r}; expected one of {', '.join(GROUPS)}")
    out: list[tuple[str, Any, str]] = []
    for ep in sorted(importlib.metadata.entry_points(group=group), key=lambda e: (e.name, e.value)):
        dist = ep.dist.name if ep.dist is not None else "unknown package"
        origin = f"entry point '{ep.name}' in {group} ({dist})"
        try:
            obj = ep.load()
            if isinstance(obj, type) and group != CONNECTORS_GROUP:
                obj = obj()
        except Exception:
            log.exception("cannot load %s = %s", origin, ep.value)
            raise ConfigError(f"{origin}: cannot load {ep.value}; see the log for the error") from None
        out.append((ep.name, obj, origin))
    return out


class ExtensionConnectorRegistry(ConnectorRegistry):
    """A ``ConnectorRegistry`` that also yields connector instances registered in code, and builds
    ``[connectors.<type>.NAME]`` entries of extension types once the config accepts them."""

    def __init__(self, base: ConnectorRegistry, instances: Iterable[Connector] = ()) -> None:
        super().__init__()
        self._factories = dict(base._factories)
        self.instances = list(instances)

    def build(self, config: Config) -> list[Connector]:
        connectors = super().build(config)
        extra: Mapping[str, Any] = getattr(config.connectors, "model_extra", None) or {}
        for type_name in sorted(extra):
            factory = self._factories.get(type_name)
            if factory is None:
                continue
            for name in sorted(extra[type_name] or {}):
                connectors.append(factory(name, extra[type_name][name], config))
        labels = {c.label for c in connectors}
        for connector in self.instances:
            if connector.label in labels:
                raise ConfigError(f"connector {connector.label} is defined twice (config and code)")
            labels.add(connector.label)
            connectors.append(connector)
        return connectors


@dataclass
class Extensions:
    """What extensions contribute, each with its origin (for error messages)."""

    agents: list[tuple[Any, str]] = field(default_factory=list)
    tools: list[tuple[Tool, str]] = field(default_factory=list)
    connector_types: dict[str, tuple[ConnectorFactory, str]] = field(default_factory=dict)
    connectors: list[tuple[Connector, str]] = field(default_factory=list)

    def connector_registry(self, base: ConnectorRegistry | None = None) -> ExtensionConnectorRegistry:
        """The built-in connector types plus the extension types and instances."""
        registry = ExtensionConnectorRegistry(base or default_registry(), [c for c, _ in self.connectors])
        for type_name, (factory, origin) in self.connector_types.items():
            try:
                registry.register(type_name, factory)
            except ConfigError:
                raise ConfigError(f"{origin}: connector type {type_name!r} is already registered") from None
        return registry

    def tool_names(self) -> list[str]:
        return [t.name for t, _ in self.tools]


def _origin(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"code ({cls.__module__}.{cls.__qualname__})"


def collect_extensions(*, agents: Iterable[Any] = (), tools: Iterable[Tool] = (),
                       connectors: Iterable[Connector] = (),
                       connector_types: Mapping[str, ConnectorFactory] | None = None,
                       discover: bool = True) -> Extensions:
    """Extensions registered in code plus (``discover=True``) the installed entry points.

    Two tools with one name are a ``ConfigError`` naming both origins.
    """
    ext = Extensions()
    if discover:
        ext.agents.extend(load_entry_points(AGENTS_GROUP))
        ext.tools.extend(load_entry_points(TOOLS_GROUP))
        for type_name, factory, origin in _load(CONNECTORS_GROUP):
            ext.connector_types[type_name] = (factory, origin)
    ext.agents.extend((a, _origin(a)) for a in agents)
    ext.tools.extend((t, _origin(t)) for t in tools)
    ext.connectors.extend((c, _origin(c)) for c in connectors)
    for type_name, factory in (connector_types or {}).items():
        if type_name in ext.connector_types:
            raise ConfigError(f"connector type {type_name!r} is defined twice: "
                              f"{ext.connector_types[type_name][1]} and {_origin(factory)}")
        ext.connector_types[type_name] = (factory, _origin(factory))
    seen: dict[str, str] = {}
    for tool, origin in ext.tools:
        if not isinstance(getattr(tool, "name", None), str):
            raise ConfigError(f"tool from {origin}: a tool needs a string `name`")
        if tool.name in seen:
            raise ConfigError(f"tool {tool.name!r} is defined twice: {seen[tool.name]} and {origin}")
        seen[tool.name] = origin
    return ext


@dataclass
class ServerSetup:
    """Everything a server needs beyond the config, built before any I/O:

    - ``connector_registry``: pass to ``Harness.open(config, registry=...)``;
    - ``agents``: the ``AgentRegistry`` (config agents + extension agents);
    - ``extensions.tools``: ``Tool`` objects to add next to the built-in and Lua tools.
    """

    config: Config
    extensions: Extensions
    agents: AgentRegistry
    connector_registry: ExtensionConnectorRegistry


def prepare_server(config: Config, *, agents: Iterable[Any] = (), tools: Iterable[Tool] = (),
                   connectors: Iterable[Connector] = (),
                   connector_types: Mapping[str, ConnectorFactory] | None = None,
                   discover: bool = True) -> ServerSetup:
    """Collect extensions (code + entry points) and build the agent and connector registries."""
    ext = collect_extensions(agents=agents, tools=tools, connectors=connectors,
                             connector_types=connector_types, discover=discover)
    registry = AgentRegistry(config, ext.agents, discover=False)
    return ServerSetup(config, ext, registry, ext.connector_registry())


__all__ = [
    "AGENTS_GROUP", "CONNECTORS_GROUP", "GROUPS", "TOOLS_GROUP", "Agent", "AgentArgument", "AgentContext", "AgentError",
    "AgentMessage", "AgentPrompt", "BadRequest", "Candidate", "ConfigError", "Connector", "ConnectorFactory",
    "ExtensionConnectorRegistry", "Extensions", "HarnessError", "NotConfigured", "NotFound", "ScanReport", "ServerSetup",
    "SourceItem", "Timeout", "Tool", "ToolError", "collect_extensions", "load_entry_points", "prepare_server",
]
