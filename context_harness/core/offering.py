"""``Offering``: the Harness's calls about what a knowledge base offers besides its documents.

Tools (list, call), agents (list, resolve, complete an argument, the ``agent://``/``skill://``
resources), a Lua tool tried once, and a document as Markdown (MCP's ``ctx://documents/{id}``).
``Harness`` inherits these, so a rim handler is one call on the Harness; the ``Catalog`` behind
them stays the core's own business (no rim reaches into it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # the catalog, tools and scripts are imported on first use: a knowledge base opened to search
    # imports none of them (issue 50)
    from context_harness.agents.models import AgentInfo
    from context_harness.config import Config, Unavailable
    from context_harness.core.catalog import AgentResolution, Catalog, ToolResult
    from context_harness.core.context import BlockingKnowledgeBase
    from context_harness.models import DocumentOut, GetRequest
    from context_harness.tools.base import Tool


class Offering:
    """Mixed into ``Harness`` (which provides ``config``, ``get`` and ``catalog``, built on first use)."""

    if TYPE_CHECKING:
        config: Config

        @property
        def catalog(self) -> Catalog: ...

        async def get(self, request: GetRequest | str) -> DocumentOut: ...

    # -- tools --------------------------------------------------------------------------------

    def tools(self, agent: str | None = None, profile: str | None = None) -> list[Tool]:
        """Every tool, or those agent ``agent`` may use (``NotFound`` for an unknown agent); ``profile``
        (``"chatgpt"``): with that client's shapes of ``search`` and ``fetch`` (``tools.chatgpt``)."""
        return self.catalog.tools(agent, profile)

    def tool_listing(self, agent: str | None = None) -> dict[str, Any]:
        """The body of ``GET /tools/list`` and ``ctx tool list --json`` (``Catalog.tool_listing``)."""
        return self.catalog.tool_listing(agent)

    async def call_tool(self, name: str, arguments: Any, agent: str | None = None,
                        profile: str | None = None) -> ToolResult:
        """Call tool ``name`` (of ``profile``'s tools, see ``tools``): ``UnknownTool`` when there is none
        (or agent ``agent`` may not use it), ``NotConfigured`` for a Lua tool set aside, else what the
        tool raises."""
        return await self.catalog.call_tool(name, arguments, agent, profile)

    async def try_tool(self, target: str, params: list[str]) -> dict[str, Any]:
        """``ctx tool test``: Lua tool ``target`` (a configured NAME or a ``.lua`` path) called once
        over this knowledge base, its other tools left unloaded (``scripts.try_tool``)."""
        from context_harness.core.scripts import try_tool

        return await try_tool(target, params, self.config, cast("BlockingKnowledgeBase", self))

    # -- agents -------------------------------------------------------------------------------

    def agents(self) -> list[AgentInfo]:
        return self.catalog.agents()

    def unavailable_agents(self) -> list[Unavailable]:
        """The agents set aside: unset environment variables, or files that did not load."""
        return self.catalog.agent_library.unavailable()

    def agent(self, name: str) -> AgentInfo:
        """Agent ``name``: ``NotFound`` naming close matches, ``NotConfigured`` when it is set aside."""
        return self.catalog.find_agent(name)

    async def resolve_agent(self, name: str, arguments: dict[str, Any] | None = None) -> AgentResolution:
        return await self.catalog.resolve_agent(name, arguments)

    def complete_agent_argument(self, agent: str, argument: str, prefix: str) -> list[str]:
        """The known values of an agent's argument that start with ``prefix`` (``NotFound``: no agent)."""
        return self.catalog.complete_agent_argument(agent, argument, prefix)

    def agent_resources(self, cursor: str | None = None, numeric: bool = False) -> dict[str, Any]:
        """One page of ``agent://`` and ``skill://`` resources (``BadRequest`` for a bad cursor)."""
        return self.catalog.agent_resources(cursor, numeric)

    def read_agent_resource(self, uri: str) -> str:
        return self.catalog.read_agent_resource(uri)

    # -- documents as text --------------------------------------------------------------------

    async def document_markdown(self, request: GetRequest, read_on: str) -> str:
        """The window of a document ``request`` names as Markdown (title, metadata, body), ending, when
        more follows, with how to read on: ``read_on`` formatted with the document's ``id`` and
        ``next_offset``."""
        from context_harness.tools.render import render_document

        doc = (await self.get(request)).model_dump(mode="json")
        return render_document(doc, read_on.format(id=doc["id"], next_offset=doc["next_offset"]))


__all__ = ["Offering"]
