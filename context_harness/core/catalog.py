"""``Catalog``: the tools and agents a knowledge base offers, composed in one place.

This is the composition root of the server side: one ``ToolSet`` holds every tool (the
built-ins bound to the Harness, the agent tools and AgentZoo's with ``[server] compat``, extension
tools, then the Lua tools of ``[tools.script.NAME]``), and one ``AgentLibrary`` holds every agent
(config, files, extensions).
Every rim reaches them through the Harness (``tools``, ``call_tool``, ``agents``,
``resolve_agent``); agents resolve through one path (``AgentLibrary`` in a worker thread, with a
fresh ``HarnessContext``).

``reload()`` (run by the serving services) re-reads changed Lua tools, config and agent files and
tells listeners what changed: ``"tools"``, ``"prompts"`` (agents are prompts) or ``"resources"``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar, cast

from context_harness.agents.chat import ChatModel
from context_harness.agents.library import AgentLibrary
from context_harness.agents.lua_agent import MAX_INSTANCES as AGENT_INSTANCES
from context_harness.agents.models import AgentInfo, AgentPrompt
from context_harness.agents.runs import RUN_CLIENT, Approver, ClientSide, RunRequest, StepListener
from context_harness.config import Config
from context_harness.core.context import BlockingKnowledgeBase, HarnessContext
from context_harness.errors import NotConfigured, NotFound, Timeout, UnknownTool
from context_harness.tools.agents import AGENT_TOOL_NAMES, AgentTool, agent_tool_changes, agent_tools, wanted
from context_harness.tools.agentzoo import ZOO_TOOL_NAMES, zoo_tools
from context_harness.tools.base import Tool, ToolChanges, describe, render
from context_harness.tools.builtin import KnowledgeBase, builtin_tools
from context_harness.tools.chatgpt import CHATGPT, STANDS_FOR, chatgpt_tools, with_profile
from context_harness.tools.notes import NoteHost, note_tools
from context_harness.tools.script import CallGate
from context_harness.tools.toolset import ToolSet

log = logging.getLogger(__name__)

T = TypeVar("T")
_CALLER_SCOPE: ContextVar[frozenset[str] | None] = ContextVar("caller_scope", default=None)  # a scoped call's tools
RunBlocking = Callable[..., Awaitable[Any]]
Listener = Callable[[str], None]
"""Called with ``"tools"``, ``"prompts"``, ``"resources"`` or ``"instructions"`` after a change."""


class CatalogHost(KnowledgeBase, BlockingKnowledgeBase, Protocol):
    """What the catalog needs of ``Harness``: the async document calls for the built-in tools, their
    blocking form for agents' contexts, and ``run_blocking`` to resolve agents off the event loop."""

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T: ...
    async def run_agent(self, request: RunRequest, *, approver: Approver | None = None,
                        on_step: StepListener | None = None, model: ChatModel | None = None,
                        fallback: ChatModel | None = None) -> dict[str, Any]: ...


@dataclass
class ToolResult:
    """A tool's structured payload (MCP ``structuredContent``, the REST body) and its text block."""

    tool: Tool
    payload: dict[str, Any]

    @property
    def text(self) -> str:
        return render(self.tool, self.payload)


@dataclass
class AgentResolution:
    """A resolved agent, with what resolving it cost (``ctx agent test`` shows these)."""

    prompt: AgentPrompt
    ms: float
    searches: int
    fetches: int


class Catalog:
    def __init__(self, config: Config, host: CatalogHost, *, agents: Iterable[Any] = (),
                 tools: Iterable[Tool] = ()) -> None:
        self.config = config
        self.host = host
        self.agent_library = AgentLibrary(config, agents, strict=False)  # a broken agent is set aside
        self.toolset = ToolSet(config, HarnessContext(host))
        offered: list[Tool] = [*builtin_tools(host), *note_tools(cast(NoteHost, host), config),
                               *(self._agent_tools() or [])]
        offered.extend(tools)
        for tool in offered:
            self.toolset.add(tool)
        self.toolset.load_scripts()
        self._listeners: list[Listener] = []
        self._agent_gates: dict[str, CallGate] = {}  # Lua agents' admission, like Lua tools'
        self._chatgpt: list[Tool] | None = None  # ChatGPT's search and fetch, made on first use

    # -- listeners ----------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def changed(self, kind: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind)
            except Exception:
                log.exception("change listener failed")

    # -- tools --------------------------------------------------------------------------------

    def tools(self, agent: str | None = None, profile: str | None = None) -> list[Tool]:
        """Every tool, or only those agent ``agent`` may use (``NotFound`` for an unknown agent);
        ``profile`` (``"chatgpt"``): with that client's shapes of some tools (``tools.chatgpt``)."""
        tools = self.toolset.tools()
        if agent is not None:
            allowed = set(self.agent_scope(agent))
            tools = [tool for tool in tools if tool.name in allowed]
        return with_profile(tools, self._profile_tools(profile, agent)) if profile else tools

    def _profile_tools(self, profile: str | None, agent: str | None) -> list[Tool]:
        """``profile``'s tools that agent ``agent`` may use (each as the tool it stands for)."""
        if profile != CHATGPT:
            return []
        if self._chatgpt is None:
            self._chatgpt = chatgpt_tools(self.host, self.config)
        scope = set(self.agent_scope(agent)) if agent is not None else None
        return [tool for tool in self._chatgpt if scope is None or STANDS_FOR[tool.name] in scope]

    def tool(self, name: str, agent: str | None = None, profile: str | None = None) -> Tool:
        """Tool ``name`` (in agent ``agent``'s scope): ``UnknownTool``, or ``NotConfigured`` when set aside."""
        own = next((tool for tool in self._profile_tools(profile, agent) if tool.name == name), None)
        if own is not None:
            return own
        tool = self.toolset.get(name)
        if tool is None or (agent is not None and name not in self.agent_scope(agent)):
            missing = next((u for u in self.toolset.unavailable() if u.name == name), None)
            if missing is not None and (agent is None or name in self.agent_scope(agent)):
                raise NotConfigured(f"tool {name!r} is unavailable: {missing.message}")
            raise UnknownTool(f"unknown tool {name!r}; list the tools to see the available ones")
        return tool

    def tool_listing(self, agent: str | None = None) -> dict[str, Any]:
        """``GET /tools/list`` and ``ctx tool list --json`` (one body): ``{"tools": [{name, description,
        builtin, parameters}]}``, plus ``"unavailable": [{name, key_path, variables, message}]`` when
        Lua tools are set aside (unset environment variables, or a script that did not load)."""
        body: dict[str, Any] = {"tools": [describe(tool) for tool in self.tools(agent)]}
        scope = set(self.agent_scope(agent)) if agent is not None else None
        missing = [u for u in self.toolset.unavailable() if scope is None or u.name in scope]
        if missing:
            body["unavailable"] = [{"name": u.name, "key_path": u.key_path, "variables": u.variables,
                                    "message": u.message} for u in missing]
        return body

    async def call_tool(self, name: str, arguments: Any, agent: str | None = None,
                        profile: str | None = None) -> ToolResult:
        tool = self.tool(name, agent, profile)
        scope = _CALLER_SCOPE.set(frozenset(self.agent_scope(agent)) if agent is not None else None)
        try:  # agent_run reads the caller's scope: the agent it runs must fit inside it
            return ToolResult(tool, await tool.call(arguments if arguments is not None else {}))
        finally:
            _CALLER_SCOPE.reset(scope)

    def agent_scope(self, agent: str) -> list[str]:
        if not self.agent_library.names():
            raise NotFound(f"unknown agent {agent!r}: no agents are configured")
        return self.agent_library.tools(agent)

    # -- agents -------------------------------------------------------------------------------

    def agents(self) -> list[AgentInfo]:
        return self.agent_library.list()

    def find_agent(self, name: str) -> AgentInfo:
        """The agent's info, or ``NotFound`` with a suggestion."""
        info = self.agent_library.find(name)
        if info is None:
            self.agent_library.spec(name)  # raises NotFound, naming close matches
            raise NotFound(f"unknown agent {name!r}")
        return info

    async def resolve_agent(self, name: str, arguments: dict[str, Any] | None = None) -> AgentResolution:
        """Run agent ``name`` against the knowledge base (in a worker thread)."""
        context = HarnessContext(self.host)

        def timed() -> AgentResolution:
            start = time.perf_counter()
            prompt = self.agent_library.resolve(name, arguments or {}, context)
            return AgentResolution(prompt, (time.perf_counter() - start) * 1000, context.searches, context.fetches)

        resolution: AgentResolution = await self._run_agent(name, timed)
        return resolution

    async def compile_agent(self, name: str, arguments: dict[str, Any], format: str) -> str | dict[str, Any]:
        """``agent_inject``: the agent resolved and compiled (``compiled`` text or ``structured``)."""
        result: str | dict[str, Any] = await self._run_agent(name, partial(
            self.agent_library.compile, name, arguments, format, HarnessContext(self.host)))
        return result

    async def _run_agent(self, name: str, fn: Callable[[], T]) -> T:
        """A Lua agent runs like a Lua tool (its own gate, then the shared Lua admission), never on
        the threads searches use; the other agents build their prompts on the host's threads."""
        spec = self.agent_library.find_spec(name)
        if spec is None or spec.source != "lua":
            result: T = await self.host.run_blocking(fn)
            return result
        timeout = float(spec.metadata.get("timeout") or 30.0)
        deadline = time.monotonic() + timeout
        what = f"Lua agent '{name}'"
        gate = self._agent_gates.get(name)
        if gate is None:
            gate = self._agent_gates[name] = CallGate(AGENT_INSTANCES, self.config.lua.max_queued_per_tool)

        def waited_out() -> Exception:
            return Timeout(f"{what} timed out after {timeout:g} s waiting for a free slot (other calls were "
                           "running; set `timeout` in its config to allow longer)")

        async with gate.slot(deadline, what, waited_out):
            return await self.toolset.calls.run(fn, deadline, waited_out)

    def complete_agent_argument(self, agent: str, argument: str, prefix: str) -> list[str]:
        return self.agent_library.complete(agent, argument, prefix)

    def agent_resources(self, cursor: str | None = None, numeric: bool = False) -> dict[str, Any]:
        """One page of ``agent://`` and ``skill://`` resources (``BadRequest`` for a bad cursor);
        ``numeric``: the next cursor is an offset (orchestr8's cursors)."""
        return self.agent_library.list_resources(cursor, numeric=numeric)

    def read_agent_resource(self, uri: str) -> str:
        return self.agent_library.read_resource(uri)

    async def run_agent(self, agent: str, task: str, arguments: dict[str, Any], model: str | None) -> dict[str, Any]:
        """``agent_run``: the run loop with what the calling client lends it (``RUN_CLIENT``)."""
        side = RUN_CLIENT.get() or ClientSide()
        request = RunRequest(agent=agent, task=task, arguments=arguments, model=model, within=_CALLER_SCOPE.get())
        return await self.host.run_agent(request, approver=side.approver, on_step=side.on_step,
                                         fallback=side.model)

    def _agent_tools(self) -> list[AgentTool] | None:
        """The agent tools (``[server] agent_tools``) and AgentZoo's (``compat = ["agentzoo"]``), or
        None when none are wanted (no agents, or both off)."""
        agents, server = self.agent_library, self.config.server
        offered = agent_tools(agents, self.compile_agent, self.run_agent) if wanted(agents, server.agent_tools) else []
        if wanted(agents, "agentzoo" in server.compat):
            offered.extend(zoo_tools(agents, self.compile_agent))
        return offered or None

    # -- reloading ----------------------------------------------------------------------------

    async def reload(self) -> None:
        """Re-read changed Lua tools, config and agent files; announce what changed. Never raises
        for a bad file: the previous version keeps serving and the problem is logged."""
        changes = ToolChanges()
        try:
            changes = await self.host.run_blocking(self.toolset.reload)
        except Exception:
            log.exception("reloading tools failed")
        try:
            if await self.host.run_blocking(self.agent_library.refresh):
                self._agents_reloaded(changes)
        except Exception:
            log.exception("reloading agents failed")
        if changes:
            self.changed("tools")

    def _agents_reloaded(self, changes: ToolChanges) -> None:
        agents = self.agent_library
        log.info("agents reloaded: %d agents, %d skills", len(agents.names()), len(agents.skills()))
        self.changed("prompts")
        self.changed("resources")
        present = {name: self.toolset.get(name) for name in (*AGENT_TOOL_NAMES, *ZOO_TOOL_NAMES)}
        fresh = self._agent_tools()
        found = agent_tool_changes(present, fresh)
        for name in found.removed:
            self.toolset.remove(name)
        for tool in [*found.added, *found.replaced]:
            self.toolset.add(tool, replace=True)
        changes.added.extend(found.added)
        changes.replaced.extend(found.replaced)
        changes.removed.extend(found.removed)


__all__ = ["AgentResolution", "Catalog", "Listener", "ToolResult"]
