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

A connector type's entries are configured as ``[connectors.<type>.NAME]`` tables, exactly like the
built-in types.

Or register them in code and build a server with them (the ``python -m my_harness`` of a team)::

    from context_harness.server import run_server

    setup = prepare_server(config, agents=[MyAgent()], tools=[MyTool()], connectors=[my_connector])
    run_server(setup)                       # stdio; run_server(setup, http=True) for HTTP

or open the core directly: ``async with Harness.open(config, setup.extensions) as harness``.

Built-in agents (TOML, Markdown, Lua) go through the same agent library as Python ones, and built-in
connector types through the same ``ConnectorKinds`` as extension types. This module is core: it
never imports a rim; the ``ctx`` commands call ``collect_extensions`` too, so entry points are
discovered wherever a Harness is opened from the command line.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from context_harness.config import Config
from context_harness.connectors.base import Candidate, Connector, ScanReport, SourceItem
from context_harness.connectors.kinds import ConnectorFactory, ConnectorKinds, default_kinds
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

if TYPE_CHECKING:  # imported on first use (``__getattr__`` below): ``ctx search`` opens a Harness, and with it
    # this module, without importing agents, Lua or tools (issue 50)
    from context_harness.agents.base import Agent, AgentContext
    from context_harness.agents.models import AgentArgument, AgentMessage, AgentPrompt
    from context_harness.tools.base import Tool

_LAZY = {"Agent": "context_harness.agents.base", "AgentContext": "context_harness.agents.base",
         "AgentArgument": "context_harness.agents.models", "AgentMessage": "context_harness.agents.models",
         "AgentPrompt": "context_harness.agents.models", "Tool": "context_harness.tools.base"}

log = logging.getLogger(__name__)

AGENTS_GROUP = "context_harness.agents"
TOOLS_GROUP = "context_harness.tools"
CONNECTORS_GROUP = "context_harness.connectors"
GROUPS = (AGENTS_GROUP, TOOLS_GROUP, CONNECTORS_GROUP)


def load_entry_points(group: str) -> list[tuple[Any, str]]:
    """Load every entry point of ``group`` -> ``[(object, origin)]`` sorted by entry-point name.

    Agent and tool classes are instantiated with no arguments; connector entries are returned as
    they are (a factory). One that fails to load is logged (naming the entry point, its package and
    the error) and left out: a broken package must not keep the server from starting.
    """
    return [(obj, origin) for _, obj, origin in _load(group)]


def _load(group: str, found: Iterable[importlib.metadata.EntryPoint] | None = None) -> list[tuple[str, Any, str]]:
    """``group``'s entry points loaded; ``found``: the group's, read by a caller that reads every group
    at once (each ``entry_points(group=...)`` reads every installed package's metadata again, 10-20 ms)."""
    if group not in GROUPS:
        raise ValueError(f"unknown entry-point group {group!r}; expected one of {', '.join(GROUPS)}")
    out: list[tuple[str, Any, str]] = []
    found = found if found is not None else importlib.metadata.entry_points(group=group)
    for ep in sorted(found, key=lambda e: (e.name, e.value)):
        dist = ep.dist.name if ep.dist is not None else "unknown package"
        origin = f"entry point '{ep.name}' in {group} ({dist})"
        try:
            obj = ep.load()
            if isinstance(obj, type) and group != CONNECTORS_GROUP:
                obj = obj()
        except Exception as exc:
            log.error("%s: cannot load %s (%s: %s); it is left out and everything else is served (fix or "
                      "uninstall %s)", origin, ep.value, type(exc).__name__, exc, dist,
                      exc_info=log.isEnabledFor(logging.DEBUG))
            continue
        out.append((ep.name, obj, origin))
    return out


@dataclass
class Extensions:
    """What extensions contribute, each with its origin (for error messages)."""

    agents: list[tuple[Any, str]] = field(default_factory=list)
    tools: list[tuple[Tool, str]] = field(default_factory=list)
    connector_types: dict[str, tuple[ConnectorFactory, str]] = field(default_factory=dict)
    connectors: list[tuple[Connector, str]] = field(default_factory=list)

    def connector_kinds(self) -> ConnectorKinds:
        """The built-in connector types plus the extension types and instances."""
        kinds = default_kinds()
        kinds.register("script", _lua_script)
        for connector, _ in self.connectors:
            kinds.add_instance(connector)
        for type_name, (factory, origin) in self.connector_types.items():
            try:
                kinds.register(type_name, factory)
            except ConfigError:
                raise ConfigError(f"{origin}: connector type {type_name!r} is already registered") from None
        return kinds

    def tool_names(self) -> list[str]:
        return [t.name for t, _ in self.tools]


def _lua_script(name: str, entry: Any, config: Config) -> Connector:
    """The built-in ``script`` type: a ``[connectors.script.NAME]`` Lua connector (``lua/connector.py``,
    imported on first use); a script that does not load is set aside."""
    from context_harness.lua.connector import script_connector

    return script_connector(name, entry, config.lua)


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
        installed = importlib.metadata.entry_points()  # one read of the installed packages for the three groups
        ext.agents.extend((obj, origin) for _, obj, origin in _load(AGENTS_GROUP, installed.select(group=AGENTS_GROUP)))
        ext.tools.extend((obj, origin) for _, obj, origin in _load(TOOLS_GROUP, installed.select(group=TOOLS_GROUP)))
        for type_name, factory, origin in _load(CONNECTORS_GROUP, installed.select(group=CONNECTORS_GROUP)):
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


def __getattr__(name: str) -> Any:
    """``Agent``, ``AgentPrompt``, ``Tool`` ...: imported from where they live on first use (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


@dataclass
class ServerSetup:
    """A config and the extensions to serve it with: ``context_harness.server.run_server(setup)``,
    or ``Harness.open(setup.config, setup.extensions)``."""

    config: Config
    extensions: Extensions


def prepare_server(config: Config, *, agents: Iterable[Any] = (), tools: Iterable[Tool] = (),
                   connectors: Iterable[Connector] = (),
                   connector_types: Mapping[str, ConnectorFactory] | None = None,
                   discover: bool = True) -> ServerSetup:
    """Collect extensions (code, and with ``discover`` the installed entry points) for ``config``;
    an entry point that cannot load is a ``ConfigError`` now, before anything is served."""
    ext = collect_extensions(agents=agents, tools=tools, connectors=connectors,
                             connector_types=connector_types, discover=discover)
    return ServerSetup(config, ext)


__all__ = [
    "AGENTS_GROUP", "CONNECTORS_GROUP", "GROUPS", "TOOLS_GROUP", "Agent", "AgentArgument", "AgentContext", "AgentError",
    "AgentMessage", "AgentPrompt", "BadRequest", "Candidate", "ConfigError", "Connector", "ConnectorFactory",
    "ConnectorKinds", "Extensions", "HarnessError", "NotConfigured", "NotFound", "ScanReport", "ServerSetup",
    "SourceItem", "Timeout", "Tool", "ToolError", "collect_extensions", "load_entry_points", "prepare_server",
]
