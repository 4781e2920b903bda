"""``WorkspaceSet``: many knowledge bases served by one process (``context-harness --workspaces``).

Each workspace of the registry (``config/workspaces.py``) is its own ``Harness``: its store, index,
sources, live watcher, tools and agents, reloading its own config. They share what a process needs
once: the embedding model (``embedding/local.py`` keeps one per model name in the process, whoever
asks) and one pool of worker threads (``SHARED_THREADS``). A workspace whose config does not load,
or which does not open, is set aside with why while the others serve.

The set offers the rims the calls ``Harness`` offers them for serving (``tools``, ``call_tool``,
agents as prompts, documents as resources, change listeners), so the MCP adapter serves it
unchanged; what is routed or merged across workspaces, and how, is ``core/routing.py``.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from context_harness.config import Config
from context_harness.config import workspaces as registry
from context_harness.core.harness import Harness
from context_harness.core.routing import QUALIFIER, Router, SetAside, Workspace
from context_harness.errors import (
    BadRequest,
    HarnessError,
    InsufficientScope,
    NotConfigured,
    NotFound,
    UnknownWorkspace,
)
from context_harness.extensions import Extensions, collect_extensions
from context_harness.models import DocumentEntry, DocumentListing, GetRequest

if TYPE_CHECKING:
    from context_harness.agents.models import AgentInfo
    from context_harness.core.catalog import AgentResolution, Listener, ToolResult
    from context_harness.ingest.sync import DocumentChanges
    from context_harness.tools.base import Tool

log = logging.getLogger(__name__)

VISIBLE: ContextVar[frozenset[str] | None] = ContextVar("visible_workspaces", default=None)
"""The names of the workspaces the request being served may use; None: every one (stdio, loopback)."""
GRANTS: ContextVar[dict[str, frozenset[str]] | None] = ContextVar("workspace_grants", default=None)
"""The OAuth scopes (``read``, ``write``, ``agents``) the request holds on each workspace it sees
(``server/oauth/scopes.workspace_grants``); None: no OAuth token, no per-workspace check."""


def shared_threads(count: int) -> int:
    """Worker threads for ``count`` workspaces: four for answers, as one workspace has, plus one per
    workspace for its long syncs (at most 32)."""
    return min(4 + count, 32)


class WorkspaceSet:
    """The open workspaces of one registry file, in its order, and those set aside."""

    def __init__(self, file: Path, served: list[Workspace], set_aside: list[SetAside]) -> None:
        self.file = file
        self.served = served
        self.set_aside = set_aside
        self.router = Router(self)

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def open(cls, file: Path, extensions: Extensions | None = None) -> AsyncIterator[WorkspaceSet]:
        """Open every good workspace of registry ``file`` (``NotConfigured`` when none can serve)."""
        checked = await anyio.to_thread.run_sync(registry.check, file)
        set_aside = [SetAside(entry.name, str(entry.config), why) for entry, why in checked.bad]
        extensions = extensions if extensions is not None else collect_extensions()
        limiter = anyio.CapacityLimiter(shared_threads(len(checked.good)))
        served: list[Workspace] = []
        async with AsyncExitStack() as stack:
            for entry, config in checked.good:
                try:
                    harness = await stack.enter_async_context(Harness.open(config, extensions, limiter))
                except HarnessError as exc:
                    set_aside.append(SetAside(entry.name, str(entry.config), exc.message))
                    continue
                served.append(Workspace(entry.name, entry.config, harness))
            for gone in set_aside:
                log.warning("workspace %s is set aside: %s", gone.name, gone.problem)
            if not served:
                why = "; ".join(f"{s.name}: {s.problem}" for s in set_aside) or "it lists none"
                raise NotConfigured(f"no workspace of {file} can serve ({why}); `ctx workspace list` says more")
            yield cls(file, served, set_aside)

    @asynccontextmanager
    async def serving(self, reload_interval: float | None = None) -> AsyncIterator[None]:
        """Every workspace's services (sync on start, live index, reloads of its own config)."""
        async with AsyncExitStack() as stack:
            for workspace in self.served:
                await stack.enter_async_context(workspace.harness.serving(reload_interval))
            stack.callback(self.subscribe(self.router.changed))  # a reload rebuilds the tools
            self.router.caching = True
            stack.callback(setattr, self.router, "caching", False)
            yield

    @property
    def config(self) -> Config:
        """The process-wide server settings (message limits, ``exit_with_parent``): the first workspace's."""
        return self.served[0].harness.config

    def visible(self) -> list[Workspace]:
        """The workspaces the request being served may use: all, unless its credentials open fewer
        (``VISIBLE``, set by the HTTP rim from the bearer token: ``admitted``)."""
        names = VISIBLE.get()
        return self.served if names is None else [w for w in self.served if w.name in names]

    @contextmanager
    def seeing(self, names: frozenset[str] | None, grants: dict[str, frozenset[str]] | None = None
               ) -> Iterator[None]:
        """Serve what runs in the block with only the workspaces ``names`` visible (None: all), and
        ``grants`` the OAuth scopes held on each (None: unchecked)."""
        reset, reset_grants = VISIBLE.set(names), GRANTS.set(grants)
        try:
            yield
        finally:
            VISIBLE.reset(reset)
            GRANTS.reset(reset_grants)

    def require(self, workspace: Workspace, scope: str, tool: str) -> None:
        """``InsufficientScope`` when the request's OAuth token lacks ``scope`` on ``workspace`` (a
        workspace it sees: naming it tells nothing new)."""
        grants = GRANTS.get()
        if grants is None or scope in grants.get(workspace.name, frozenset()):
            return
        needed = f"{scope}:{workspace.name}"
        raise InsufficientScope(f"calling {tool} in workspace {workspace.name!r} needs the OAuth scope {needed!r} "
                                f"(or {scope!r}, every workspace); this token was granted "
                                f"{' '.join(sorted(grants.get(workspace.name, frozenset())))} there: reconnect the "
                                f"client and approve it", needed)

    def admitted(self, token: str | None) -> frozenset[str] | None:
        """The workspaces a request presenting bearer ``token`` may use: those without ``[server]
        auth_token``, and those whose token it is. None when ``token`` is wrong for every workspace
        that has one (a token where none has one is not checked, as one workspace served alone)."""
        tokens = {w.name: w.harness.config.server.auth_token or "" for w in self.served}
        matched = {name for name, own in tokens.items()
                   if own and token is not None and hmac.compare_digest(token.encode(), own.encode())}
        if token is not None and not matched and any(tokens.values()):
            return None
        return frozenset(name for name, own in tokens.items() if not own or name in matched)

    def workspace(self, name: str) -> Workspace:
        """Workspace ``name`` (one this request may use), or ``UnknownWorkspace`` naming the known ones."""
        found = next((w for w in self.visible() if w.name == name), None)
        if found is None:
            known = ", ".join(w.name for w in self.visible())
            aside = next((s for s in self.set_aside if s.name == name), None)
            why = f" (it is set aside: {aside.problem})" if aside else ""
            raise UnknownWorkspace(f"unknown workspace {name!r}{why}; the workspaces are: {known}")
        return found

    def split_id(self, value: str) -> tuple[Workspace | None, str]:
        """A qualified ``workspace:id`` as its workspace and id; a bare id as (None, id)."""
        head, sep, rest = value.partition(QUALIFIER)
        if sep and rest:
            return self.workspace(head.strip().lower()), rest
        return None, value

    async def owner(self, doc_id: str, among: list[Workspace] | None = None) -> tuple[Workspace, str]:
        """The workspace holding document ``doc_id`` (bare or qualified) and the bare id. A bare id in two
        workspaces (the same source name and path in both) is ``BadRequest`` naming the qualified forms."""
        named, bare = self.split_id(doc_id)
        if named is not None:
            return named, bare
        key = bare.strip().lower()

        def holders() -> list[Workspace]:
            return [w for w in (among or self.visible()) if w.harness.store is not None
                    and w.harness.store.summaries([key])]

        found = await anyio.to_thread.run_sync(holders)
        if not found:
            raise NotFound(f"no document with id {bare!r} in any workspace "
                           f"({', '.join(w.name for w in among or self.visible())})")
        if len(found) > 1:
            forms = " or ".join(f"'{w.name}{QUALIFIER}{key}'" for w in found)
            raise BadRequest(f"document id {bare!r} is in more than one workspace: pass {forms}")
        return found[0], bare

    # -- what the rims serve ----------------------------------------------------------------

    def describe(self, named: bool = True) -> str:
        """The server's instructions; without the workspaces' names when not ``named`` (over HTTP, where
        a token may see only some: ``workspaces`` then lists those it sees)."""
        if not named:
            return ("A local-first knowledge base of several workspaces: `workspaces` lists those you can use, with "
                    "their sources and counts; `search`, `recent` and `related` search all of them unless "
                    "`workspace` names one; every result names its `workspace`, and its `id` works in `get` as it "
                    f"is (or qualified, 'workspace{QUALIFIER}id').")
        names = ", ".join(f"{w.name} ({'writable' if w.writable else 'read-only'})" for w in self.served)
        text = (f"A local-first knowledge base of {len(self.served)} workspaces: {names}. `workspaces` lists them "
                "with their sources and counts; `search`, `recent` and `related` search all of them unless "
                "`workspace` names one; every result names its `workspace`, and its `id` works in `get` as it "
                f"is (or qualified, 'workspace{QUALIFIER}id').")
        if self.set_aside:
            text += " Set aside: " + "; ".join(f"{s.name} ({s.problem})" for s in self.set_aside) + "."
        return text

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """``listener(kind)`` on any workspace's change of tools, prompts, resources or instructions."""
        return _all([w.harness.subscribe(listener) for w in self.served])

    def subscribe_documents(self, listener: Callable[[DocumentChanges], None]) -> Callable[[], None]:
        """``listener(changes)`` after a workspace's sync, with each id bare and qualified."""
        from context_harness.ingest.sync import DocumentChanges

        def labelled(name: str) -> Callable[[DocumentChanges], None]:
            def relay(changes: DocumentChanges) -> None:
                def both(ids: set[str]) -> set[str]:
                    return ids | {f"{name}{QUALIFIER}{i}" for i in ids}
                listener(DocumentChanges(both(changes.added), both(changes.updated), both(changes.deleted)))
            return relay

        return _all([w.harness.subscribe_documents(labelled(w.name)) for w in self.served])

    def request_warm_up(self) -> None:
        for workspace in self.served:
            workspace.harness.request_warm_up()

    def tools(self, agent: str | None = None, profile: str | None = None) -> list[Tool]:
        if agent is not None:
            raise BadRequest("--agent is not offered with --workspaces: serve that workspace alone")
        return self.router.tools()

    def tool_listing(self, agent: str | None = None) -> dict[str, Any]:
        """``GET /tools/list``: every tool served, as ``Harness.tool_listing`` lists one workspace's."""
        from context_harness.tools.base import describe

        return {"tools": [describe(tool) for tool in self.tools(agent)]}

    async def call_tool(self, name: str, arguments: Any, agent: str | None = None,
                        profile: str | None = None) -> ToolResult:
        return await self.router.call(name, arguments if arguments is not None else {})

    # -- agents as prompts: each workspace's, named as the tools are -------------------------

    def agents(self) -> list[AgentInfo]:
        return [info.model_copy(update={"name": name}) for name, (_, info) in self.router.agent_names().items()]

    def _agent(self, name: str) -> tuple[Workspace, AgentInfo]:
        found = self.router.agent_names().get(name)
        if found is None:
            raise NotFound(f"unknown agent {name!r}")
        return found

    def agent(self, name: str) -> AgentInfo:
        workspace, info = self._agent(name)
        return workspace.harness.agent(info.name).model_copy(update={"name": name})

    async def resolve_agent(self, name: str, arguments: dict[str, Any] | None = None) -> AgentResolution:
        workspace, info = self._agent(name)
        return await workspace.harness.resolve_agent(info.name, arguments)

    def complete_agent_argument(self, agent: str, argument: str, prefix: str) -> list[str]:
        workspace, info = self._agent(agent)
        return workspace.harness.complete_agent_argument(info.name, argument, prefix)

    def agent_resources(self, cursor: str | None = None, numeric: bool = False) -> dict[str, Any]:
        """Every workspace's ``agent://`` and ``skill://`` resources (the first of a URI two share), in
        pages of 100; the cursor is an offset."""
        seen: dict[str, dict[str, Any]] = {}
        for workspace in self.visible():
            following: str | None = None
            while True:
                page = workspace.harness.agent_resources(following)
                for resource in page["resources"]:
                    seen.setdefault(resource["uri"], resource)
                following = page.get("nextCursor")
                if not following:
                    break
        start = int(cursor) if cursor and cursor.isdigit() else 0
        if cursor and not cursor.isdigit():
            raise BadRequest("invalid cursor")
        listed = list(seen.values())
        body: dict[str, Any] = {"resources": listed[start:start + 100], "total": len(listed)}
        if start + 100 < len(listed):
            body["nextCursor"] = str(start + 100)
        return body

    def read_agent_resource(self, uri: str) -> str:
        for workspace in self.visible():
            try:
                return workspace.harness.read_agent_resource(uri)
            except NotFound:
                continue
        raise NotFound(f"Unknown resource: {uri}")

    # -- documents as resources: ``ctx://documents/WORKSPACE:ID`` ------------------------------

    async def document_listing(self, cursor: str | None = None, limit: int = 100) -> DocumentListing:
        """One page of every workspace's documents, workspace by workspace; ids qualified."""
        if limit < 1:
            raise BadRequest("limit must be at least 1")
        start, after, shown = 0, None, self.visible()
        if cursor:
            named, after = self.split_id(cursor)
            start = shown.index(named) if named is not None else 0
        entries: list[DocumentEntry] = []
        for workspace in shown[start:]:
            while len(entries) <= limit:
                page = await workspace.harness.document_listing(after, limit + 1 - len(entries))
                entries += [d.model_copy(update={"id": f"{workspace.name}{QUALIFIER}{d.id}"}) for d in page.documents]
                after = page.next_cursor
                if after is None:
                    break
            after = None
            if len(entries) > limit:
                break
        following = entries[limit - 1].id if len(entries) > limit else None
        return DocumentListing(documents=entries[:limit], next_cursor=following)

    async def document_markdown(self, request: GetRequest, read_on: str) -> str:
        workspace, bare = await self.owner(request.id)
        return await workspace.harness.document_markdown(request.model_copy(update={"id": bare}), read_on)


def _all(stops: list[Callable[[], None]]) -> Callable[[], None]:
    def stop() -> None:
        for each in stops:
            each()

    return stop


__all__ = ["VISIBLE", "SetAside", "Workspace", "WorkspaceSet", "shared_threads"]
