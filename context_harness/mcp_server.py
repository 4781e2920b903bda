"""The MCP adapter: what the server offers (a registry) and how the SDK serves it.

This is the only module that imports the MCP SDK's server side. It is built on the low-level
``Server`` so that this module, not the SDK, decides argument validation (the same ``validation``
functions REST uses), ``isError`` results, ``listChanged`` capabilities and error mapping.

What the server offers lives in a ``Registry`` of plain specs (no SDK types): tools, prompts,
resources and resource templates. The built-in ``search``/``get``/``sources`` tools and the
``ctx://documents/{id}`` template register exactly the way Lua tools and agents will, and every
change to the registry is announced to connected clients (``notifications/*/list_changed`` on
2025-era sessions, ``subscriptions/listen`` events on 2026-07-28 connections).

The registry itself (plain specs) lives in ``server_registry``. Agents are installed into it by ``mcp_agents.install_agents`` (prompts, the ``agent://``
and ``skill://`` resource catalog, tool scopes, a reload poller).

Public entry points: ``build_registry``, ``build_server`` (used by stdio, HTTP and tests),
``run_stdio``, ``run_server``/``serve_setup`` (serve an ``extensions.ServerSetup``: extensions
registered in code) and ``render_document``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any

import anyio
import mcp.types as t
from mcp import MCPError
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from context_harness import __version__
from context_harness.config import Config
from context_harness.errors import HarnessError, InternalError, NotConfigured, outcome
from context_harness.server_registry import (  # noqa: F401  (the public MCP-side API is re-exported)
    DOCUMENT_TEMPLATE,
    PAGE_SIZE,
    PromptArgument,
    PromptSpec,
    Registry,
    ResourceCatalog,
    ResourceSpec,
    TemplateSpec,
    ToolSpec,
    build_registry,
    render_document,
)

log = logging.getLogger(__name__)

SERVER_NAME = "context-harness"
RELOAD_INTERVAL = 1.0  # seconds between checks of the config file and the Lua tool scripts

# -- errors ---------------------------------------------------------------------------------------

def error_payload(exc: BaseException, where: str) -> HarnessError:
    """A ``HarnessError`` for any exception; unknown ones are logged with traceback, never echoed."""
    if isinstance(exc, HarnessError):
        return exc
    log.error("%s failed", where, exc_info=exc)
    return InternalError()


def _error_result(error: HarnessError) -> t.CallToolResult:
    payload = error.to_dict()
    return t.CallToolResult(
        content=[t.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=payload, is_error=True,
    )


# -- the SDK server -------------------------------------------------------------------------------

class HarnessServer(Server[dict[str, Any]]):
    """The low-level SDK server over a ``Registry``; announces registry changes to clients."""

    def __init__(self, harness: Any, registry: Registry, agent: str | None = None) -> None:
        self.harness = harness
        self.registry = registry
        self.agent = agent
        self.bus = InMemorySubscriptionBus()
        self._legacy_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._change_queues: set[Any] = set()  # one per running lifespan
        self._background: Any = None  # the running lifespan's task group
        self._warming = False
        self.reload_interval = RELOAD_INTERVAL
        super().__init__(
            SERVER_NAME, version=__version__, title="Context Harness",
            description="A local-first knowledge base: search, get and list sources.",
            instructions=self.describe(), lifespan=_lifespan,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt,
            on_list_resources=self._list_resources, on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource, on_subscriptions_listen=ListenHandler(self.bus),
            on_completion=self._complete,
        )
        registry.subscribe(self._on_registry_change)

    def describe(self) -> str:
        text = self.harness.describe()
        if self.agent:
            text += f" Serving agent {self.agent!r}: only its tools are listed."
        return text

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                                      extensions: dict[str, dict[str, Any]] | None = None) -> InitializationOptions:
        # The registry announces its changes, so say so to 2025-era clients too (the SDK default is false).
        notification_options = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True)
        return super().create_initialization_options(notification_options, experimental_capabilities, extensions)

    # change notifications
    def _on_registry_change(self, kind: str) -> None:
        for queue in list(self._change_queues):
            try:
                queue.send_nowait(kind)
            except anyio.WouldBlock:
                log.warning("dropping a %s list_changed notification: too many pending", kind)

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        """Called by every request handler: starts the search warm-up on the first request, and keeps
        (weakly) each 2025-era connection, to send it list_changed notifications later.

        ``ctx.session`` is a per-request proxy; the long-lived ``Connection`` behind it has no
        public accessor in mcp 2.3.0, hence the private attribute (guarded: no-op if it moves).
        """
        self._start_warm_up()
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None and hasattr(connection, "send_tool_list_changed"):
                self._legacy_sessions.add(connection)

    async def announce_changes(self) -> None:
        """Forward registry changes to clients until cancelled (run inside the lifespan)."""
        events = {"tools": ToolsListChanged, "prompts": PromptsListChanged, "resources": ResourcesListChanged}
        send, receive = anyio.create_memory_object_stream[str](64)
        self._change_queues.add(send)
        try:
            with send, receive:
                async for kind in receive:
                    await self._announce(events[kind](), kind)
        finally:
            self._change_queues.discard(send)

    async def _announce(self, event: Any, kind: str) -> None:
        await self.bus.publish(event)
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

    async def watch_tools(self) -> None:
        """While serving, reload changed Lua tool scripts and config every ``reload_interval`` seconds;
        registry changes reach clients as ``tools/list_changed``. Runs inside the lifespan."""
        source = self.registry.tool_source
        if source is None or not source.watching():
            return
        while True:
            await anyio.sleep(self.reload_interval)
            try:
                changes = await anyio.to_thread.run_sync(source.reload)
            except Exception:
                log.exception("reloading tools failed")
                continue
            if changes:
                self.registry.apply(changes)

    async def watch_registry(self) -> None:
        """While serving, run the registry's pollers (agent reloads) every ``reload_interval`` seconds."""
        if not self.registry.pollers:
            return
        while True:
            await anyio.sleep(self.reload_interval)
            for poll in list(self.registry.pollers):
                try:
                    await poll()
                except Exception:
                    log.exception("reloading agents failed")

    async def sync_in_background(self) -> None:
        """``[server] sync_on_start``: bring stale sources up to date while serving; log to stderr."""
        try:
            report = await self.harness.sync("all")
        except NotConfigured as exc:
            log.info("sync on start skipped: %s", exc.message)
            return
        except HarnessError as exc:
            log.warning("sync on start failed: %s", exc.message)
            return
        except Exception:
            log.exception("sync on start failed")
            return
        changed = report.total("added") + report.total("updated") + report.total("deleted")
        log.info("sync on start: %d documents changed", changed)
        if report.embedding_error:
            log.warning("sync on start: embedding failed (searchable by keyword meanwhile): %s",
                        report.embedding_error["message"])
        self.instructions = self.describe()

    def _start_warm_up(self) -> None:
        if not self._warming and self._background is not None:
            self._warming = True
            self._background.start_soon(self.warm_up)

    # tools
    async def warm_up(self) -> None:
        """Load the vector index and the embedding model in the background, so the first search does
        not wait ~1.5 s for them. Started by the first request after ``initialize`` (usually
        ``tools/list``: a client connecting), so it does not slow the cold start; abandoned, not
        awaited, when the server stops."""
        warm = getattr(self.harness, "warm_up", None)
        if warm is None:
            return
        try:
            if await anyio.to_thread.run_sync(warm, abandon_on_cancel=True):
                log.info("search warmed up: vector index and embedding model loaded")
        except Exception as exc:  # the first search will report it properly
            log.info("search warm-up skipped: %s", exc)

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
        self._remember(ctx)
        tools = [
            t.Tool(name=s.name, title=s.title, description=s.description, input_schema=s.input_schema,
                   output_schema=s.output_schema, annotations=t.ToolAnnotations.model_validate(s.annotations()))
            for s in self.registry.tools(self.agent)
        ]
        page, cursor = _page(tools, params)
        return t.ListToolsResult(tools=page, next_cursor=cursor)

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> t.CallToolResult:
        self._remember(ctx)
        spec = self.registry.tool(params.name, self.agent)
        if spec is None:
            raise MCPError(t.INVALID_PARAMS, f"Unknown tool: {params.name}")
        try:
            payload = await spec.call(params.arguments or {})
            text = spec.text(payload)
        except Exception as exc:
            error = error_payload(exc, f"tool {spec.name!r}")
            if not outcome(error).mcp_tool_error:
                raise MCPError(t.INVALID_PARAMS if outcome(error).http_status < 500 else t.INTERNAL_ERROR,
                               error.message) from None
            return _error_result(error)
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)], structured_content=payload)

    # prompts
    async def _list_prompts(self, ctx: ServerRequestContext[Any],
                            params: t.PaginatedRequestParams | None) -> t.ListPromptsResult:
        self._remember(ctx)
        prompts = [
            t.Prompt(name=p.name, title=p.title, description=p.description, arguments=[
                t.PromptArgument(name=a.name, description=a.description, required=a.required) for a in p.arguments])
            for p in self.registry.prompts()
        ]
        page, cursor = _page(prompts, params)
        return t.ListPromptsResult(prompts=page, next_cursor=cursor)

    async def _get_prompt(self, ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> t.GetPromptResult:
        self._remember(ctx)
        spec = self.registry.prompt(params.name)
        if spec is None:
            raise MCPError(t.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        arguments = dict(params.arguments or {})
        missing = [a.name for a in spec.arguments if a.required and not arguments.get(a.name)]
        if missing:
            raise MCPError(t.INVALID_PARAMS, f"prompt {spec.name!r}: missing required argument(s): "
                           f"{', '.join(missing)}", data={"code": "bad_request", "missing": missing})
        try:
            rendered = await spec.render(arguments)
        except Exception as exc:
            error = error_payload(exc, f"prompt {spec.name!r}")
            raise MCPError(t.INVALID_PARAMS if outcome(error).http_status < 500 else t.INTERNAL_ERROR,
                           error.message, data=error.to_dict()["error"]) from None
        messages = [t.PromptMessage(role=m["role"], content=t.TextContent(type="text", text=m["content"]))
                    for m in rendered["messages"]]
        return t.GetPromptResult(description=rendered.get("description") or spec.description, messages=messages)

    async def _complete(self, ctx: ServerRequestContext[Any], params: t.CompleteRequestParams) -> t.CompleteResult:
        """Argument completion for prompts whose arguments have known values; nothing otherwise."""
        values: list[str] = []
        if isinstance(params.ref, t.PromptReference):
            spec = self.registry.prompt(params.ref.name)
            if spec is None:
                raise MCPError(t.INVALID_PARAMS, f"Unknown prompt: {params.ref.name}")
            if spec.complete is not None:
                try:
                    values = await spec.complete(params.argument.name, params.argument.value)
                except Exception as exc:
                    error = error_payload(exc, f"completion for prompt {spec.name!r}")
                    raise MCPError(t.INVALID_PARAMS, error.message) from None
        return t.CompleteResult(completion=t.Completion(values=values[:100], total=len(values), has_more=False))

    # resources
    async def _list_resources(self, ctx: ServerRequestContext[Any],
                              params: t.PaginatedRequestParams | None) -> t.ListResourcesResult:
        self._remember(ctx)
        catalog = self.registry.catalog
        cursor = params.cursor if params is not None else None
        resources: list[t.Resource] = []
        if catalog is None or not cursor:  # concrete resources lead the first page
            resources = [t.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description,
                                    mime_type=r.mime_type) for r in self.registry.resources()]
        if catalog is None:
            page, next_cursor = _page(resources, params)
            return t.ListResourcesResult(resources=page, next_cursor=next_cursor)
        try:
            listed = catalog.page(cursor or None)
        except Exception as exc:
            raise MCPError(t.INVALID_PARAMS, error_payload(exc, "resources/list").message) from None
        resources.extend(t.Resource(uri=r["uri"], name=r["name"], description=r.get("description"),
                                    mime_type=r.get("mimeType")) for r in listed["resources"])
        return t.ListResourcesResult(resources=resources, next_cursor=listed.get("nextCursor"))

    async def _list_templates(self, ctx: ServerRequestContext[Any],
                              params: t.PaginatedRequestParams | None) -> t.ListResourceTemplatesResult:
        self._remember(ctx)
        templates = [t.ResourceTemplate(uri_template=r.uri_template, name=r.name, title=r.title,
                                        description=r.description, mime_type=r.mime_type)
                     for r in self.registry.templates()]
        page, cursor = _page(templates, params)
        return t.ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    async def _read_resource(self, ctx: ServerRequestContext[Any],
                             params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        self._remember(ctx)
        uri = str(params.uri)
        found = self.registry.resolve(uri)
        if found is None:
            raise MCPError(t.INVALID_PARAMS, f"Unknown resource: {uri}", data={"uri": uri})
        read, mime_type = found
        try:
            text = await read()
        except Exception as exc:
            error = error_payload(exc, f"resource {uri!r}")
            code = t.INVALID_PARAMS if outcome(error).http_status < 500 else t.INTERNAL_ERROR
            raise MCPError(code, error.message, data={"uri": uri, **error.to_dict()}) from None
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, text=text, mime_type=mime_type)])


def _page(items: list[Any], params: t.PaginatedRequestParams | None) -> tuple[list[Any], str | None]:
    """Cursor pagination: the cursor is the offset of the next page, as a string."""
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor:
        if not cursor.isdigit():
            raise MCPError(t.INVALID_PARAMS, "invalid cursor")
        start = int(cursor)
    end = start + PAGE_SIZE
    return items[start:end], (str(end) if end < len(items) else None)


@asynccontextmanager
async def _lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
    """Entered once per stdio process / HTTP app: change notifications, the start-up sync, and the
    search warm-up (started by the first request after `initialize`)."""
    assert isinstance(server, HarnessServer)
    async with anyio.create_task_group() as tg:
        server._background = tg
        tg.start_soon(server.announce_changes)
        tg.start_soon(server.watch_tools)
        tg.start_soon(server.watch_registry)
        if server.harness.config.server.sync_on_start:
            tg.start_soon(server.sync_in_background)
        try:
            yield {}
        finally:
            server._background = None
            tg.cancel_scope.cancel()


def build_server(harness: Any, agent: str | None = None, registry: Registry | None = None) -> HarnessServer:
    """The MCP server for ``harness`` (stdio, HTTP and tests all use this).

    ``registry`` defaults to ``build_registry(harness)``; pass one to add Lua tools, agent prompts
    and resources before serving (or add them later: clients are told the lists changed).
    ``agent`` limits the listed and callable tools to that agent's (``Registry.agent_scope``).
    """
    registry = registry if registry is not None else build_registry(harness)
    if agent is not None:
        registry.agent_tools(agent)  # fail at start-up, not on the first call, for an unknown agent
    return HarnessServer(harness, registry, agent)


# -- transports ----------------------------------------------------------------------------------

def streamable_http(server: HarnessServer, *, max_body_bytes: int) -> tuple[Any, Callable[[], Any]]:
    """The Streamable HTTP endpoint for ``server``: ``(asgi_app, run)``.

    ``run()`` is the async context manager the HTTP app's lifespan must enter (it enters the server
    lifespan once). Host/Origin checks, auth and CORS are the HTTP app's job, so the SDK's own
    DNS-rebinding check is left off here; the SDK still enforces the JSON Content-Type and the
    body limit. Sessions are kept (stateful) so 2025-era clients get list_changed notifications.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=server, json_response=False, stateless=False,
                                           max_request_body_size=max_body_bytes)
    return StreamableHTTPASGIApp(manager), manager.run


# -- stdio ----------------------------------------------------------------------------------------

def run_stdio(config: Config, agent: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin. Blocks."""
    anyio.run(serve_stdio, config, agent)


def run_server(setup: Any, *, http: bool = False, bind: str | None = None, agent: str | None = None) -> None:
    """Serve a ``ServerSetup`` (``context_harness.extensions.prepare_server``: config, extension
    agents, tools and connectors) over stdio, or Streamable HTTP + REST with ``http=True``. Blocks."""
    anyio.run(partial(serve_setup, setup, http=http, bind=bind, agent=agent))


async def serve_setup(setup: Any, *, http: bool = False, bind: str | None = None, agent: str | None = None) -> None:
    """The async form of ``run_server``."""
    if http:
        from context_harness.http_app import serve_http

        await serve_http(setup.config, bind, agent, setup=setup)
    else:
        await serve_stdio(setup.config, agent, setup=setup)


def setup_registry(harness: Any, setup: Any) -> Registry:
    """The registry for a ``ServerSetup``: its agents and extension tools next to the built-ins."""
    return build_registry(harness, agents=setup.agents, extra_tools=[tool for tool, _ in setup.extensions.tools])


async def serve_stdio(config: Config, agent: str | None = None, setup: Any = None) -> None:
    """Serve over stdio. Without ``setup``, extensions are discovered from installed entry points."""
    from mcp.server.runner import serve_dual_era_loop
    from mcp.server.stdio import stdio_server

    from context_harness.extensions import prepare_server
    from context_harness.harness import Harness

    setup = setup if setup is not None else prepare_server(config)
    async with Harness.open(config, registry=setup.connector_registry) as harness:
        server = build_server(harness, agent, setup_registry(harness, setup))
        with _claimed_stdio() as (stdin, stdout):
            async with server.lifespan(server) as state, stdio_server(stdin, stdout) as (read_stream, write_stream):
                # init_options=None: the runner asks the server at `initialize`, so the instructions are current.
                await serve_dual_era_loop(server, read_stream, write_stream, lifespan_state=state)


class _PipeLines:
    """Async lines from a pipe read on the event loop (no worker-thread hop per message)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader: Any = None

    def __aiter__(self) -> "_PipeLines":
        return self

    async def __anext__(self) -> str:
        if self.reader is None:
            import asyncio

            loop = asyncio.get_running_loop()
            self.reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
            pipe = os.fdopen(self.fd, "rb", buffering=0, closefd=False)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.reader), pipe)
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _PipeWriter:
    """Writes whole messages to a private stdout descriptor (small, so a direct write is cheapest)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self.fd, data):]
            except BlockingIOError:
                await anyio.sleep(0.001)

    async def flush(self) -> None:
        return None


@contextmanager
def _claimed_stdio() -> Iterator[tuple[Any, Any]]:
    """Serve the wire from private duplicates of fds 0/1 and point 0 at /dev/null and 1 at stderr,
    so stray output (a library's print, a child process) can never corrupt the JSON-RPC stream.

    Falls back to the SDK's own (thread-based) stdio handling when stdin is not a pipe or socket.
    """
    import stat

    try:
        mode = os.fstat(0).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            raise OSError("stdin is not a pipe")
        sys.stdout.flush()
        wire_in, wire_out = os.dup(0), os.dup(1)
    except (OSError, ValueError):
        yield None, None
        return
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    try:
        yield _PipeLines(wire_in), _PipeWriter(wire_out)
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (saved_in, saved_out, wire_out):
            os.close(fd)
        # wire_in stays open: the event loop's pipe transport owns it until the loop closes.


__all__ = [
    "DOCUMENT_TEMPLATE", "HarnessServer", "PromptArgument", "PromptSpec", "Registry", "ResourceCatalog",
    "ResourceSpec", "TemplateSpec", "ToolSpec", "build_registry", "build_server", "render_document", "run_server",
    "run_stdio", "serve_setup", "serve_stdio", "setup_registry", "streamable_http",
]
