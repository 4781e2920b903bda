"""The HTTP adapter: Streamable HTTP MCP at ``/mcp`` plus the REST shim, over one ``Harness``.

Routes (DESIGN §4):

- ``/mcp``                        MCP Streamable HTTP (both protocol eras)
- ``GET  /tools/list[?agent=A]``  ``{"tools": [{name, description, builtin, parameters}]}``
- ``POST /tools/{name}``          a tool's structured payload (``search``, ``get``, Lua tools: ``{"result": ...}``)
- ``GET|POST /tools/sources``     ``{"sources": [...]}``
- ``GET  /agents/list``           ``{"agents": [{name, description, tools, source, arguments}]}``
- ``POST /agents/{name}/prompt``  flat arguments (or ``{"arguments": {...}}``) -> ``{system, tools, messages}``
- ``GET  /health``                ``{"status": "ok", "version": ...}`` (never needs the token)
- ``/ui/...``                     the web console (``console``), when ``[ui] enabled`` (default: loopback binds)

Each route parses the request, calls one ``Harness`` method and renders its result. Errors are
mapped once, by the exception handlers registered on the app (the error table decides the
status); every error body is ``{"error": {"code", "message"}}``. Guards: see ``server.guards``.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from context_harness import __version__
from context_harness.common.lineage import watching
from context_harness.common.validation import decode_json, plain_int
from context_harness.config import Config, ServerConfig
from context_harness.console import SecurityHeaders, console_routes, ui_enabled
from context_harness.core.face import Harness
from context_harness.errors import (
    BadRequest,
    ConfigError,
    HarnessError,
    InsufficientScope,
    NotFound,
    UnknownTool,
    as_harness_error,
    error_for_status,
)
from context_harness.server.guards import (
    BodyLimitAndAuth,
    BodyLimitExceeded,
    FramingGuard,
    HostOriginGuard,
    JsonBodies,
    error_response,
    split_host,
)
from context_harness.server.mcp import HarnessServer, build_server
from context_harness.server.oauth import open_provider
from context_harness.server.oauth.gate import OAuthGate, check_tool
from context_harness.server.oauth.routes import ENDPOINTS, OPEN_PATHS, oauth_routes
from context_harness.server.rpc import JsonRpcGuard

log = logging.getLogger(__name__)

# An idle keep-alive connection is closed after this long. Longer than clients keep theirs (httpx,
# aiohttp, browsers: 5-15 s), so a client reusing one never races the server closing it (a request
# sent as the server closes fails with a reset). uvicorn's default is 5 s.
KEEP_ALIVE_SECONDS = 20


class UnknownErrors:
    """The last line of the error mapping: an exception that is not a ``HarnessError`` is logged
    with its traceback and answered as ``internal`` (never echoed). Registered once, app-wide."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except BodyLimitExceeded:
            raise
        except ClientDisconnect:
            log.debug("%s %s: the client went away before its request was read", scope.get("method"),
                      scope.get("path"))
        except Exception as exc:
            if started:
                raise
            error = as_harness_error(exc, f"{scope.get('method')} {scope.get('path')}")
            await error_response(error)(scope, receive, send)


class ConsoleHeaders:
    """The console's security headers (``console.SECURITY_HEADERS``) on every answer under ``/ui``:
    its pages', and the ones given outside its router too (an unknown route's 404, a 405, a guard's
    refusal, an error). The outermost middleware, so nothing answers past it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headed = SecurityHeaders(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (scope["path"] == "/ui" or scope["path"].startswith("/ui/")):
            await self.headed(scope, receive, send)
        else:
            await self.app(scope, receive, send)


async def _harness_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HarnessError)
    needed = exc.needed_scope if isinstance(exc, InsufficientScope) else None  # RFC 6750 §3: say which
    challenge = {"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{needed}"'} if needed else None
    return error_response(exc, headers=challenge)


async def _http_error(request: Request, exc: Exception) -> Response:
    """The router's own errors (no route, a method the route does not take), through the error table."""
    assert isinstance(exc, HTTPException)
    path = request.url.path
    message = {405: f"{request.method} is not allowed on {path}", 404: f"no route {path}"}.get(exc.status_code)
    return error_response(error_for_status(exc.status_code, message or str(exc.detail)))


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return {}
    return decode_json(raw)


class RestShim:
    """The REST routes over ``harness``; ``agent`` scopes the tools as ``ctx serve --agent`` does."""

    def __init__(self, harness: Harness, agent: str | None) -> None:
        self.harness = harness
        self.agent = agent

    def routes(self) -> list[Route]:
        return [
            Route("/health", self.health, methods=["GET"]),
            Route("/tools/list", self.tools_list, methods=["GET"]),
            Route("/tools/{name}", self.call_tool, methods=["GET", "POST"]),
            Route("/agents/list", self.agents_list, methods=["GET"]),
            Route("/agents/{name}/prompt", self.agent_prompt, methods=["POST"]),
        ]

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__})

    async def tools_list(self, request: Request) -> Response:
        scope_agent = request.query_params.get("agent") or self.agent
        if self.agent is not None and scope_agent != self.agent:
            raise NotFound(f"unknown agent {scope_agent!r}: this server serves agent {self.agent!r} only")
        return JSONResponse(self.harness.tool_listing(scope_agent))

    async def call_tool(self, request: Request) -> Response:
        name = request.path_params["name"]
        if request.method == "GET" and name != "sources":
            raise BadRequest(f"use POST /tools/{name} with a JSON body")
        arguments = await _json_body(request) if request.method == "POST" else {}
        if not isinstance(arguments, dict):
            raise BadRequest("the request body must be a JSON object")
        check_tool(self.harness, name, self.agent, request.scope)
        try:
            result = await self.harness.call_tool(name, arguments, self.agent)
        except UnknownTool:
            raise UnknownTool(f"unknown tool {name!r}; GET /tools/list shows the available tools") from None
        return JSONResponse(result.payload)

    async def agents_list(self, request: Request) -> Response:
        return JSONResponse({"agents": [info.model_dump(mode="json") for info in self.harness.agents()]})

    async def agent_prompt(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            self.harness.agent(name)  # NotConfigured for an agent set aside for an unset variable
        except NotFound:
            listed = ", ".join(info.name for info in self.harness.agents())
            raise NotFound(f"unknown agent {name!r}; GET /agents/list shows the agents"
                           + (f" ({listed})" if listed and len(listed) < 200 else "")) from None
        body = await _json_body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object of arguments")
        if set(body) == {"arguments"} and isinstance(body["arguments"], dict):
            body = body["arguments"]
        resolution = await self.harness.resolve_agent(name, body)
        return JSONResponse(resolution.prompt.model_dump(mode="json"))


def build_app(harness: Harness, agent: str | None = None, bind_host: str | None = None) -> Starlette:
    """The HTTP app over an open ``harness`` (``/mcp`` + REST shim + ``/health``), guards included.
    The app's lifespan runs the MCP session manager; the caller runs ``harness.serving()``."""
    settings = harness.config.server
    server = build_server(harness, agent)
    mcp_app, mcp_run = streamable_http(server, settings)
    console = ui_enabled(harness.config, bind_host is None or is_loopback(bind_host))
    provider = open_provider(harness.config)
    if provider is not None and not console:
        raise ConfigError("[server.oauth] enabled = true needs the web console, where the owner approves each "
                          "client: set [ui] enabled = true")
    middleware = [Middleware(ConsoleHeaders)] if console else []
    middleware += [Middleware(FramingGuard), Middleware(HostOriginGuard, settings=settings, bind_host=bind_host,
                                                        any_origin_paths=ENDPOINTS if provider else ())]
    if settings.cors_origins:
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["*"], expose_headers=["Mcp-Session-Id", "Mcp-Protocol-Version"], max_age=600))
    own_auth = ("/ui",) if console else ()
    middleware.append(Middleware(BodyLimitAndAuth, max_body_bytes=settings.max_body_bytes,
                                 token=None if provider else settings.auth_token or None, own_auth=own_auth))
    if provider is not None:
        middleware.append(Middleware(OAuthGate, provider=provider, token=settings.auth_token,
                                     open_paths=("/health", *OPEN_PATHS), own_auth=own_auth))
    middleware.append(Middleware(JsonBodies, form_paths=(*own_auth, *(ENDPOINTS if provider else ()))))
    middleware.append(Middleware(UnknownErrors))
    routes: list[BaseRoute] = [*RestShim(harness, agent).routes(), Route("/mcp", mcp_app)]
    if provider is not None:
        routes += oauth_routes(provider)
    if console:
        routes += console_routes(harness, settings.auth_token or None, agent, approvals=provider)
    app = Starlette(routes=routes, middleware=middleware,
                    lifespan=lambda _app: mcp_run(),
                    exception_handlers={HarnessError: _harness_error, HTTPException: _http_error})
    app.state.server = server
    return app


def streamable_http(server: HarnessServer, settings: ServerConfig) -> tuple[Any, Any]:
    """The Streamable HTTP endpoint for ``server``: ``(asgi_app, run)``.

    ``run()`` is the async context manager the HTTP app's lifespan must enter (it enters the server
    lifespan once). Host/Origin checks, auth and CORS are the HTTP app's job, so the SDK's own
    DNS-rebinding check is left off here; the SDK still enforces the JSON Content-Type and the
    body limit. Sessions are kept (stateful) so 2025-era clients get list_changed notifications;
    idle ones close after ``[server] session_idle_timeout``, at most ``max_sessions`` are open, and
    ``JsonRpcGuard`` checks ids first (``server.rpc``).
    """
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

    manager = StreamableHTTPSessionManager(app=server, json_response=False, stateless=False,
                                           max_request_body_size=settings.max_body_bytes,
                                           session_idle_timeout=settings.session_idle_timeout,
                                           max_sessions=settings.max_sessions)
    # The session table has no public accessor in mcp 2.3.0; the guard falls back to the SDK's own limit.
    guard = JsonRpcGuard(StreamableHTTPASGIApp(manager), max_sessions=settings.max_sessions,
                         open_sessions=lambda: manager._server_instances,
                         handshake_versions=frozenset(HANDSHAKE_PROTOCOL_VERSIONS))
    return guard, manager.run


# -- running --------------------------------------------------------------------------------------

def parse_bind(value: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port``, ``:port`` or ``port`` -> (host, port); the host defaults to 127.0.0.1."""
    text = value.strip()
    if (alone := plain_int(text)) is not None:
        return "127.0.0.1", alone
    host, port = split_host(text)
    number = plain_int(port)
    if number is None or not 0 <= number <= 65535:
        raise BadRequest(f"--bind {value!r}: expected HOST:PORT such as 127.0.0.1:7331")
    host = host.strip("[]") or "127.0.0.1"
    return host, number


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name other than localhost may resolve to anything
        return False


def check_bind(config: Config, host: str) -> None:
    """Refuse a non-loopback address without ``[server] auth_token`` (unless ``allow_unauthenticated``,
    then say so loudly); warn about an empty token."""
    if config.server.auth_token == "":
        log.warning("[server] auth_token is empty: no token is required")
    if is_loopback(host) or config.server.auth_token:
        return
    if not config.server.allow_unauthenticated:
        raise ConfigError(
            f"refusing to serve on {host} without a token: set [server] auth_token (e.g. auth_token = "
            '"${CTX_TOKEN}") and send "Authorization: Bearer <token>", bind 127.0.0.1, or set [server] '
            "allow_unauthenticated = true to serve it to anyone who can reach it")
    log.warning("SERVING %s WITHOUT AUTHENTICATION ([server] allow_unauthenticated = true): anyone who can "
                "reach it can read the whole index and call every tool", host)


async def serve_http(harness: Harness, bind: str | None = None, agent: str | None = None) -> None:
    """Serve ``harness`` over HTTP until interrupted, with the core's services running. The address
    is taken before anything starts, so a busy one is a one-line ``ConfigError``."""
    import uvicorn

    from context_harness.server.limits import protocol_class

    settings = harness.config.server
    host, port = parse_bind(bind or settings.bind)
    check_bind(harness.config, host)
    shown = f"[{host}]" if ":" in host else host
    with listening_socket(host, port) as sock:
        async with harness.serving():
            app = build_app(harness, agent, bind_host=host)
            server = uvicorn.Server(uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="on", server_header=False,
                timeout_keep_alive=KEEP_ALIVE_SECONDS, http=protocol_class(settings.header_timeout,
                                                                           settings.max_connections)))
            url = f"http://{shown}:{sock.getsockname()[1]}"
            console = ui_enabled(harness.config, is_loopback(host))
            sys.stderr.write("".join(line + "\n" for line in startup_lines(harness, url, agent, console)))
            sys.stderr.flush()
            # Daemonised on purpose is legitimate: only `[server] exit_with_parent = true` ends it with its parent.
            with watching(settings.exit_with_parent is True, None, lambda _: setattr(server, "should_exit", True)):
                await server.serve(sockets=[sock])


@contextmanager
def listening_socket(host: str, port: int) -> Iterator[socket.socket]:
    """A TCP socket bound to ``host:port`` and listening, closed on exit; ``ConfigError`` naming the
    address and ``--bind`` when it cannot be had (in use, not this machine's, no permission)."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn chooses it
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on connections whose socket says TCP (proto 0 did not),
    # and without it each answer's body after a connection's first waited 40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "the address is already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise ConfigError(f"cannot listen on {shown}: {reason}; stop the other server or pick another port "
                          "with --bind HOST:PORT (or [server] bind)") from None
    with sock:
        yield sock


def startup_lines(harness: Harness, url: str, agent: str | None = None, console: bool = False) -> list[str]:
    """What ``ctx serve --http`` prints to stderr on start, as the original's ``ctx serve mcp`` does:
    the Lua tools with their routes (and those set aside for unset variables), then the addresses
    (the web console's too when it is on)."""
    listing = harness.tool_listing(agent)
    lua = [tool for tool in listing["tools"] if not tool["builtin"]]
    lines = [f"Loaded {len(lua)} Lua tool(s):"] if lua else []
    lines += [f"  POST /tools/{tool['name']} — {tool['description']}" for tool in lua]
    lines += [f"  unavailable: {u['name']} — {u['message']}" for u in listing.get("unavailable", [])]
    lines += [f"MCP server listening on {url}", f"  MCP endpoint: {url}/mcp"]
    lines += [f"  Web console: {url}/ui/"] if console else []
    public = harness.config.server.public_url
    if harness.config.server.oauth.enabled and public:
        lines += [f"  OAuth: clients sign in at {public} (authorized clients: {public}/ui/oauth/clients)"]
    return [*lines, f"  REST: {url}/tools/* and {url}/agents/* (Ctrl-C to stop)"]


__all__ = ["RestShim", "UnknownErrors", "build_app", "check_bind", "is_loopback", "listening_socket", "parse_bind",
           "serve_http", "startup_lines", "streamable_http"]
