"""The MCP adapter: the SDK's low-level ``Server`` over a ``Harness``.

This module and its siblings in ``server/`` are the only importers of the MCP SDK's server side.
Built on the low-level ``Server`` so that this module, not the SDK, decides argument validation
(the tools validate exactly as REST does), ``isError`` results, ``listChanged`` capabilities and
error mapping (``errors.outcome``).

What is served comes from the core: tools (``Harness.tools``/``call_tool``), agents as prompts
(``Harness.agents``/``resolve_agent``), the ``agent://``/``skill://`` resource catalog and the
``ctx://documents/{id}`` template. Changes the core announces (``Harness.subscribe``) reach
clients as ``notifications/*/list_changed`` on 2025-era sessions and ``subscriptions/listen``
events on 2026-07-28 connections. The background services (sync on start, reloads, warm-up) are
the core's (``Harness.serving``); this adapter only asks for the warm-up on a first request.

``prompts/get`` delivers an agent's system prompt as the first **user** message, wrapped as
``<instructions agent="NAME">…</instructions>`` plus a line asking the model to follow them (MCP
prompt messages have no system role; see docs/reference/agents.md), then the agent's own messages; messages
with role ``system`` from Lua/Python agents are folded into that instructions block.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote

import anyio
import mcp.types as t
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from context_harness import __version__
from context_harness.common.validation import parse_get, plain_int
from context_harness.core.face import (
    AGENT_SCHEME,
    CLIENT,
    RUN_CLIENT,
    SKILL_SCHEME,
    AgentPrompt,
    DocumentChanges,
    Harness,
    hints,
    prompt_get_messages,
)
from context_harness.errors import (
    BadRequest,
    HarnessError,
    InternalError,
    NotConfigured,
    NotFound,
    UnknownTool,
    as_harness_error,
    outcome,
)
from context_harness.server.compat import (
    ORCHESTR8,
    ORCHESTR8_LIST_MIME,
    ORCHESTR8_READ_MIME,
    orchestr8_definition,
    session_profile,
)
from context_harness.server.lending import lend
from context_harness.server.oauth.scopes import check_tool
from context_harness.server.schemas import portable_input, portable_output

log = logging.getLogger(__name__)

SERVER_NAME = "context-harness"
PAGE_SIZE = 100
DOCUMENT_TEMPLATE = "ctx://documents/{id}"
DOCUMENT_PREFIX = "ctx://documents/"
MAX_SUBSCRIPTIONS = 10_000  # resources/subscribe URIs per connection
TOOL_TITLES = "2025-06-18"  # the first protocol version with ``Tool.title`` (before it: ``annotations.title``)
DOCUMENTS_CURSOR = "documents:"  # resources/list cursors past the agent catalog: the last document id listed
EVENTS: dict[str, type[ToolsListChanged | PromptsListChanged | ResourcesListChanged]] = {
    "tools": ToolsListChanged, "prompts": PromptsListChanged, "resources": ResourcesListChanged}

Item = TypeVar("Item")


def protocol_error(error: HarnessError, data: Any = None) -> MCPError:
    """A JSON-RPC error for ``error``, with the code from the error table (every protocol error this
    adapter raises is made here)."""
    return MCPError(outcome(error).jsonrpc_code, error.message, data=data)


def unexpected(exc: Exception, where: str, data: Any = None) -> MCPError:
    """The protocol error for whatever a request handler's core call raised: a ``HarnessError`` by
    its row, anything else ``internal`` (logged, never echoed)."""
    return protocol_error(as_harness_error(exc, where), data)


def tool_error_result(error: HarnessError) -> t.CallToolResult:
    """An ``isError`` result: its one text block is the JSON error (``{"error": {"code", "message"}}``).
    It carries no ``structuredContent``: that would have to match the tool's ``outputSchema``, and
    clients that check it (the TypeScript SDK does) would show their own complaint instead of ours."""
    payload = error.to_dict()
    return t.CallToolResult(content=[t.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
                            is_error=True)


def prompt_messages(name: str, prompt: AgentPrompt) -> list[t.PromptMessage]:
    """``prompts/get`` messages for a resolved agent (``agents.render.prompt_get_messages``)."""
    return [t.PromptMessage(role=role, content=t.TextContent(type="text", text=text))  # type: ignore[arg-type]
            for role, text in prompt_get_messages(name, prompt.system, prompt.messages)]


def document_arguments(uri: str) -> dict[str, str] | None:
    """The ``get`` arguments of a ``ctx://documents/{id}`` URI (its query may add ``chunk``, ``offset``
    and ``max_chars``: ``ctx://documents/ID?chunk=3``), or None when ``uri`` is not one."""
    if not uri.startswith(DOCUMENT_PREFIX):
        return None
    path, _, query = uri[len(DOCUMENT_PREFIX):].partition("?")
    doc_id = unquote(path)
    if not doc_id or "/" in doc_id or len(doc_id) > 200:
        return None
    return {**dict(parse_qsl(query, keep_blank_values=True)), "id": doc_id}


def page(items: Sequence[Item], params: t.PaginatedRequestParams | None) -> tuple[list[Item], str | None]:
    """Cursor pagination: the cursor is the offset of the next page, as a string."""
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor:
        offset = plain_int(cursor)
        if offset is None:
            raise protocol_error(BadRequest("invalid cursor"))
        start = offset
    end = start + PAGE_SIZE
    return list(items[start:end]), (str(end) if end < len(items) else None)


class CountedListen:
    """The SDK's ``subscriptions/listen`` handler, counting the resource URIs its open streams asked
    for: a sync that changed 100,000 documents publishes ``resources/updated`` for those URIs only,
    not 100,000 events to streams that drop them (that held the event loop for most of a second)."""

    def __init__(self, bus: InMemorySubscriptionBus, admit: Callable[[Any, list[str]], Awaitable[None]]) -> None:
        self.handler = ListenHandler(bus)
        self.admit = admit  # refuses URIs the request may not watch (``HarnessServer._admit``)
        self.uris: Counter[str] = Counter()

    async def __call__(self, ctx: ServerRequestContext[Any], params: t.SubscriptionsListenRequestParams) -> Any:
        uris = list(params.notifications.resource_subscriptions or ())
        await self.admit(ctx, uris)
        self.uris.update(uris)
        try:
            return await self.handler(ctx, params)
        finally:
            self.uris.subtract(uris)
            self.uris += Counter()  # drops the URIs no stream listens to any more


class HarnessServer(Server[dict[str, Any]]):
    """The low-level SDK server over a ``Harness``; announces the core's changes to clients."""

    def __init__(self, harness: Harness, agent: str | None = None) -> None:
        self.harness = harness
        self.agent = agent
        self.orchestr8 = ORCHESTR8 in harness.config.server.compat
        self.bus = InMemorySubscriptionBus()
        self.listen = CountedListen(self.bus, self._admit)
        self._legacy_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._change_queues: set[Any] = set()  # one per running lifespan
        # 2025-era connections -> {document id: the URIs it subscribed to (``resources/subscribe``)}
        self._subscriptions: weakref.WeakKeyDictionary[Any, dict[str, set[str]]] = weakref.WeakKeyDictionary()
        super().__init__(
            SERVER_NAME, version=__version__, title="Context Harness",
            description="A local-first knowledge base: search, get and list sources.",
            instructions=self.describe(), lifespan=_lifespan,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt,
            on_list_resources=self._list_resources, on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource, on_subscriptions_listen=self.listen,
            on_subscribe_resource=self._subscribe, on_unsubscribe_resource=self._unsubscribe,
            on_completion=self._complete,
        )
        harness.subscribe(self._on_change)
        harness.subscribe_documents(self._on_documents)

    def describe(self) -> str:
        text = self.harness.describe()
        if self.agent:
            text += f" Serving agent {self.agent!r}: only its tools are listed."
        return text

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                                      extensions: dict[str, dict[str, Any]] | None = None) -> InitializationOptions:
        # The core announces its changes, so say so to 2025-era clients too (the SDK default is false).
        notification_options = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True)
        return super().create_initialization_options(notification_options, experimental_capabilities, extensions)

    # -- change notifications -----------------------------------------------------------------

    def _on_change(self, kind: str) -> None:
        if kind == "instructions":
            self.instructions = self.describe()
            return
        self._enqueue(kind)

    def _on_documents(self, changes: DocumentChanges) -> None:
        self._enqueue(changes)

    def _enqueue(self, change: str | DocumentChanges) -> None:
        for queue in list(self._change_queues):
            try:
                queue.send_nowait(change)
            except anyio.WouldBlock:
                log.warning("dropping a change notification (%s): too many pending",
                            change if isinstance(change, str) else "documents")

    @staticmethod
    def _connection(ctx: ServerRequestContext[Any]) -> Any:
        """The 2025-era connection behind a request, or None (a 2026-07-28 connection, or an SDK that
        moved it). ``ctx.session`` is a per-request proxy; the long-lived ``Connection`` behind it has
        no public accessor in mcp 2.3.0, hence the private attribute (guarded)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        connection = getattr(ctx.session, "_connection", None)
        return connection if connection is not None and hasattr(connection, "send_tool_list_changed") else None

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        """Called by every request handler: asks for the search warm-up (the core starts it once), and
        keeps (weakly) each 2025-era connection, to send it list_changed notifications later."""
        self.harness.request_warm_up()
        connection = self._connection(ctx)
        if connection is not None:
            self._legacy_sessions.add(connection)

    async def announce_changes(self) -> None:
        """Forward the core's changes to clients until cancelled (run inside the lifespan)."""
        send, receive = anyio.create_memory_object_stream[str | DocumentChanges](256)
        self._change_queues.add(send)
        try:
            with send, receive:
                async for change in receive:
                    if isinstance(change, DocumentChanges):
                        await self._announce_documents(change)
                    else:
                        await self._announce(change)
        finally:
            self._change_queues.discard(send)

    async def _announce(self, kind: str) -> None:
        await self.bus.publish(EVENTS[kind]())
        for session in list(self._legacy_sessions):
            try:
                if kind == "tools":
                    await session.send_tool_list_changed()
                elif kind == "prompts":
                    await session.send_prompt_list_changed()
                else:
                    await session.send_resource_list_changed()
            except Exception:  # a closed session must not stop the others
                self._legacy_sessions.discard(session)

    async def _announce_documents(self, changes: DocumentChanges) -> None:
        """``resources/updated`` for each changed document a client subscribed to (2025-era sessions:
        ``resources/subscribe``; 2026-07-28: listen streams, which filter by their URIs), and
        ``resources/list_changed`` when documents came or went."""
        touched = changes.added | changes.updated | changes.deleted
        for uri in sorted(self.listen.uris):  # the few a stream listens to, not every change
            if uri.startswith(DOCUMENT_PREFIX) and uri[len(DOCUMENT_PREFIX):] in touched:
                await self.bus.publish(ResourceUpdated(uri=uri))
        for session, subscribed in list(self._subscriptions.items()):
            try:
                for doc_id in sorted(touched & subscribed.keys()):
                    for uri in sorted(subscribed[doc_id]):
                        await session.send_resource_updated(uri)
            except Exception:  # a closed session must not stop the others
                self._subscriptions.pop(session, None)
        if changes.added or changes.deleted:
            await self._announce("resources")

    async def _subscribe(self, ctx: ServerRequestContext[Any], params: t.SubscribeRequestParams) -> t.EmptyResult:
        """``resources/subscribe`` (2025-era sessions) to a document: ``resources/updated`` follows each
        change of it, whatever window the URI names."""
        self._remember(ctx)
        uri = str(params.uri)
        arguments = document_arguments(uri)
        if arguments is None:
            raise protocol_error(BadRequest(f"cannot subscribe to {uri!r}: only documents ({DOCUMENT_TEMPLATE}) "
                                            "announce updates"), data={"uri": uri})
        await self._admit(ctx, [uri])
        connection = self._connection(ctx)
        if connection is None:
            raise protocol_error(InternalError("this connection cannot receive resources/updated"))
        subscribed = self._subscriptions.setdefault(connection, {})
        if sum(map(len, subscribed.values())) >= MAX_SUBSCRIPTIONS:
            raise protocol_error(BadRequest(f"at most {MAX_SUBSCRIPTIONS} subscriptions per connection; "
                                            "unsubscribe from some first"))
        subscribed.setdefault(arguments["id"].strip().lower(), set()).add(uri)
        return t.EmptyResult()

    async def _admit(self, ctx: ServerRequestContext[Any], uris: list[str]) -> None:
        """Refuse a subscription to a URI this request may not read. Every document may be watched here,
        even one not indexed yet; the multi-workspace adapter narrows it to what the token sees."""

    async def _unsubscribe(self, ctx: ServerRequestContext[Any], params: t.UnsubscribeRequestParams) -> t.EmptyResult:
        uri = str(params.uri)
        arguments = document_arguments(uri)
        connection = self._connection(ctx)
        subscribed = self._subscriptions.get(connection) if connection is not None else None
        if arguments is not None and subscribed is not None:
            doc_id = arguments["id"].strip().lower()
            subscribed.get(doc_id, set()).discard(uri)
            if not subscribed.get(doc_id, True):
                del subscribed[doc_id]
        return t.EmptyResult()

    # -- tools --------------------------------------------------------------------------------

    def _profile(self, ctx: ServerRequestContext[Any]) -> str | None:
        """The session's tool profile: ``"chatgpt"`` for OpenAI's clients (``server.compat``), else None."""
        client = ctx.session.client_params
        info = client.client_info if client is not None else None
        return session_profile(self.harness.config.server.profile, info.name if info else None,
                               info.title if info else None)

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
        self._remember(ctx)
        structured = self.harness.config.server.output_schemas
        titled = ctx.protocol_version >= TOOL_TITLES
        tools = [
            t.Tool(name=tool.name, title=tool.title, description=tool.description,
                   input_schema=portable_input(tool.input_schema),
                   output_schema=portable_output(tool.output_schema) if structured else None,
                   annotations=t.ToolAnnotations.model_validate(  # a title said once, where the client reads it
                       {k: v for k, v in hints(tool).items() if not (k == "title" and titled and tool.title)}))
            for tool in self.harness.tools(self.agent, self._profile(ctx))
        ]
        listed, cursor = page(tools, params)
        return t.ListToolsResult(tools=listed, next_cursor=cursor)

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> t.CallToolResult:
        self._remember(ctx)
        try:
            client = ctx.session.client_params  # its clientInfo names the writer in the note log line
            CLIENT.set(client.client_info.name if client is not None else "unknown")
            if params.name == "agent_run":  # the run may use this client's model and ask its user
                RUN_CLIENT.set(lend(ctx.session))
            check_tool(self.harness, params.name, self.agent, getattr(ctx.request, "scope", None),  # OAuth scopes
                       self._profile(ctx))
            result = await self.harness.call_tool(params.name, params.arguments or {}, self.agent,
                                                  self._profile(ctx))
            text = result.text
        except UnknownTool:  # the table makes it a protocol error; the wording is MCP's
            raise protocol_error(UnknownTool(f"Unknown tool: {params.name}")) from None
        except Exception as exc:  # a Lua tool set aside (not_configured) is an isError result: says which
            error = as_harness_error(exc, f"tool {params.name!r}")
            if not outcome(error).mcp_tool_error:
                raise protocol_error(error) from None
            return tool_error_result(error)
        structured = result.payload if self.harness.config.server.output_schemas else None
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)], structured_content=structured)

    # -- prompts (agents) ---------------------------------------------------------------------

    async def _list_prompts(self, ctx: ServerRequestContext[Any],
                            params: t.PaginatedRequestParams | None) -> t.ListPromptsResult:
        self._remember(ctx)
        prompts = [
            t.Prompt(name=info.name, description=info.description or None, arguments=[
                t.PromptArgument(name=a.name, description=a.description or None, required=a.required)
                for a in info.arguments])
            for info in self.harness.agents()
        ]
        listed, cursor = page(prompts, params)
        return t.ListPromptsResult(prompts=listed, next_cursor=cursor)

    async def _get_prompt(self, ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> t.GetPromptResult:
        self._remember(ctx)
        try:
            info = self.harness.agent(params.name)
        except NotFound:
            raise protocol_error(NotFound(f"Unknown prompt: {params.name}")) from None
        except NotConfigured as exc:  # an agent set aside for an unset variable
            raise protocol_error(exc, data=exc.to_dict()["error"]) from None
        arguments = dict(params.arguments or {})
        missing = [a.name for a in info.arguments if a.required and not arguments.get(a.name)]
        if missing:
            bad = BadRequest(f"prompt {info.name!r}: missing required argument(s): {', '.join(missing)}")
            raise protocol_error(bad, data={"code": bad.code, "missing": missing})
        try:
            resolution = await self.harness.resolve_agent(info.name, arguments)
        except Exception as exc:
            error = as_harness_error(exc, f"prompt {info.name!r}")
            raise protocol_error(error, data=error.to_dict()["error"]) from None
        return t.GetPromptResult(description=info.description or None,
                                 messages=prompt_messages(info.name, resolution.prompt))

    async def _complete(self, ctx: ServerRequestContext[Any], params: t.CompleteRequestParams) -> t.CompleteResult:
        """Argument completion for prompts whose arguments have known values; nothing otherwise."""
        values: list[str] = []
        if isinstance(params.ref, t.PromptReference):
            name = params.ref.name
            try:
                values = self.harness.complete_agent_argument(name, params.argument.name, params.argument.value)
            except NotFound:
                raise protocol_error(NotFound(f"Unknown prompt: {name}")) from None
            except Exception as exc:
                raise unexpected(exc, f"completion for prompt {name!r}") from None
        return t.CompleteResult(completion=t.Completion(values=values[:100], total=len(values), has_more=False))

    # -- resources ----------------------------------------------------------------------------

    async def _list_resources(self, ctx: ServerRequestContext[Any],
                              params: t.PaginatedRequestParams | None) -> t.ListResourcesResult:
        """The ``agent://``/``skill://`` catalog, then every document (``ctx://documents/{id}``, by id),
        in pages of at most ``PAGE_SIZE``; the documents fill up the catalog's last page."""
        self._remember(ctx)
        cursor = (params.cursor if params is not None else None) or None
        if cursor is not None and cursor.startswith(DOCUMENTS_CURSOR):
            documents, following = await self._documents(cursor[len(DOCUMENTS_CURSOR):] or None, PAGE_SIZE)
            meta = {"total": self.harness.agent_resources(None, numeric=True)["total"],
                    "count": len(documents)} if self.orchestr8 else None
            return t.ListResourcesResult(resources=documents, next_cursor=following, _meta=meta)
        try:
            listed = self.harness.agent_resources(cursor, numeric=self.orchestr8)
        except Exception as exc:
            raise unexpected(exc, "resources/list") from None
        resources = [t.Resource(uri=r["uri"], name=r["name"], description=r.get("description"),
                                mime_type=self._list_mime(r["uri"], r.get("mimeType"))) for r in listed["resources"]]
        following = listed.get("nextCursor")
        if following is None:
            room = PAGE_SIZE - len(resources)
            documents, following = await self._documents(None, room) if room > 0 else ([], None)
            resources += documents
            if room <= 0 and (await self.harness.document_listing(None, 1)).documents:
                following = DOCUMENTS_CURSOR
        meta = {"total": listed["total"], "count": len(resources)} if self.orchestr8 else None
        return t.ListResourcesResult(resources=resources, next_cursor=following, _meta=meta)

    def _list_mime(self, uri: str, mime_type: str | None) -> str | None:
        return ORCHESTR8_LIST_MIME if self.orchestr8 and uri.startswith(AGENT_SCHEME) else mime_type

    async def _documents(self, after: str | None, limit: int) -> tuple[list[t.Resource], str | None]:
        """Up to ``limit`` documents after id ``after`` as resources, and the cursor of the rest."""
        listing = await self.harness.document_listing(after, limit)
        documents = [t.Resource(uri=DOCUMENT_PREFIX + d.id, name=d.title or d.id, description=d.source,
                                mime_type="text/markdown") for d in listing.documents]
        return documents, listing.next_cursor and DOCUMENTS_CURSOR + listing.next_cursor

    async def _list_templates(self, ctx: ServerRequestContext[Any],
                              params: t.PaginatedRequestParams | None) -> t.ListResourceTemplatesResult:
        self._remember(ctx)
        templates = [t.ResourceTemplate(
            uri_template=DOCUMENT_TEMPLATE, name="document", title="A document in the knowledge base",
            description="A document as Markdown (title, metadata, body); use an id returned by `search`. Like "
            "`get`, it holds one window of a long document: add `?chunk=K` for a search hit's section, "
            "`?offset=N` to read on, `&max_chars=M` to size the window (0: the whole document, up to 1,000,000 "
            "characters).",
            mime_type="text/markdown")]
        listed, cursor = page(templates, params)
        return t.ListResourceTemplatesResult(resource_templates=listed, next_cursor=cursor)

    async def _read_resource(self, ctx: ServerRequestContext[Any],
                             params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        self._remember(ctx)
        uri = str(params.uri)
        reader = self._reader(uri)
        if reader is None:
            raise protocol_error(NotFound(f"Unknown resource: {uri}"), data={"uri": uri})
        read, mime_type = reader
        try:
            text = await read()
        except Exception as exc:
            error = as_harness_error(exc, f"resource {uri!r}")
            raise protocol_error(error, data={"uri": uri, **error.to_dict()}) from None
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, text=text, mime_type=mime_type)])

    def _reader(self, uri: str) -> tuple[Callable[[], Any], str] | None:
        """The reader and MIME type for ``uri``: the agent catalog, then the document template."""
        if uri.startswith((AGENT_SCHEME, SKILL_SCHEME)):
            orchestr8 = self.orchestr8 and uri.startswith(AGENT_SCHEME)

            async def read_agent() -> str:
                text = self.harness.read_agent_resource(uri)
                return orchestr8_definition(text) if orchestr8 else text

            return read_agent, ORCHESTR8_READ_MIME if orchestr8 else "application/json"
        arguments = document_arguments(uri)
        if arguments is None:
            return None

        async def read_document() -> str:
            read_on = f"read `{DOCUMENT_PREFIX}{{id}}?offset={{next_offset}}`"
            return await self.harness.document_markdown(parse_get(arguments), read_on)

        return read_document, "text/markdown"


@asynccontextmanager
async def _lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
    """Entered once per stdio process / HTTP app: forwards the core's change notifications."""
    assert isinstance(server, HarnessServer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.announce_changes)
        try:
            yield {}
        finally:
            tg.cancel_scope.cancel()


def build_server(harness: Harness, agent: str | None = None) -> HarnessServer:
    """The MCP server for ``harness`` (stdio, HTTP and tests all use this). ``agent`` limits the
    listed and callable tools to that agent's; an unknown agent fails here, at start-up."""
    if agent is not None:
        harness.tools(agent)
    return HarnessServer(harness, agent)


__all__ = ["DOCUMENT_TEMPLATE", "HarnessServer", "build_server",
           "prompt_messages", "tool_error_result"]
