"""The HTTP adapter: Streamable HTTP MCP at ``/mcp`` plus the REST shim, from one ``Harness``.

The only module that imports Starlette. Routes (DESIGN §4):

- ``/mcp``                        MCP Streamable HTTP (both protocol eras)
- ``GET  /tools/list[?agent=A]``  ``{"tools": [{name, description, builtin, parameters}]}``
- ``POST /tools/{name}``          a tool's structured payload (``search``, ``get``, Lua tools: ``{"result": ...}``)
- ``GET|POST /tools/sources``     ``{"sources": [...]}``
- ``GET  /agents/list``           ``{"agents": [{name, description, tools, source, arguments}]}``
- ``POST /agents/{name}/prompt``  flat arguments (or ``{"arguments": {...}}``) -> ``{system, tools, messages}``
- ``GET  /health``                ``{"status": "ok", "version": ...}`` (never needs the token)

Every request passes the guards in this order: Host/Origin (DNS rebinding), CORS (only when
``[server] cors_origins`` lists origins), body size limit, bearer token. Every error body is
``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import hmac
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from context_harness import __version__
from context_harness.config import Config, ServerConfig
from context_harness.errors import BadRequest, HarnessError, NotFound, outcome
from context_harness.mcp_agents import resolve as resolve_agent
from context_harness.mcp_server import Registry, build_server, error_payload, setup_registry, streamable_http

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("0.0.0.0", "::", "[::]", "")


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def harness_error_response(error: HarnessError) -> JSONResponse:
    return JSONResponse(error.to_dict(), status_code=outcome(error).http_status)


async def _send_json(scope: Scope, receive: Receive, send: Send, response: Response) -> None:
    await response(scope, receive, send)


# -- guards (pure ASGI) ---------------------------------------------------------------------------

def _split_host(value: str) -> tuple[str, str | None]:
    """``host[:port]`` -> (host, port); IPv6 hosts keep their brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        host, rest = value[:end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else None
    host, sep, port = value.rpartition(":")
    return (host, port) if sep else (value, None)


class HostOriginGuard:
    """Reject a foreign ``Host`` (421) or ``Origin`` (403): the DNS-rebinding defence.

    Allowed hosts: loopback names on any port, the bind address when it is not a wildcard, and
    ``[server] allowed_hosts`` (``"name"`` or ``"name:*"`` = any port, ``"name:port"`` exact, ``"*"`` = any).
    Allowed origins: none sent, loopback origins, ``[server] allowed_origins`` and ``cors_origins``.
    """

    def __init__(self, app: ASGIApp, settings: ServerConfig, bind_host: str | None = None) -> None:
        self.app = app
        self.any_host = "*" in settings.allowed_hosts
        self.host_names = {h for h in LOOPBACK_HOSTS}
        self.host_exact: set[str] = set()
        for entry in settings.allowed_hosts:
            host, port = _split_host(entry)
            if port in (None, "*"):
                self.host_names.add(host)
            else:
                self.host_exact.add(f"{host}:{port}")
        if bind_host and bind_host not in WILDCARD_BINDS:
            self.host_names.add(f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host)
        self.any_origin = "*" in settings.allowed_origins
        self.origins = {o.rstrip("/").lower() for o in [*settings.allowed_origins, *settings.cors_origins]}

    def host_ok(self, value: str | None) -> bool:
        if self.any_host:
            return True
        if not value:
            return False
        host, port = _split_host(value)
        return host in self.host_names or f"{host}:{port}" in self.host_exact

    def origin_ok(self, value: str | None) -> bool:
        if value is None or self.any_origin:
            return True
        origin = value.rstrip("/").lower()
        if origin in self.origins:
            return True
        scheme, sep, rest = origin.partition("://")
        if not sep or scheme not in ("http", "https"):
            return False
        host, _ = _split_host(rest)
        return host in LOOPBACK_HOSTS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if not self.host_ok(headers.get("host")):
            log.warning("rejected a request for Host %r (not in [server] allowed_hosts)", headers.get("host"))
            response = error_response(421, "forbidden", "this Host is not allowed; add it to [server] allowed_hosts")
            await response(scope, receive, send)
            return
        if not self.origin_ok(headers.get("origin")):
            log.warning("rejected a request from Origin %r (not in [server] allowed_origins)", headers.get("origin"))
            response = error_response(403, "forbidden", "this Origin is not allowed; add it to [server] allowed_origins")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyLimitAndAuth:
    """Enforce ``[server] max_body_bytes`` and, when ``auth_token`` is set, a bearer token on
    every route except ``/health`` (and CORS preflights, which never carry credentials)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, token: str | None, open_paths: tuple[str, ...] = ("/health",)):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.token = token.encode() if token else None
        self.open_paths = open_paths

    def _authorized(self, headers: dict[str, str]) -> bool:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token or b"")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if self.token is not None and scope["path"] not in self.open_paths and scope["method"] != "OPTIONS":
            if not self._authorized(headers):
                response = error_response(401, "unauthorized", "missing or wrong bearer token "
                                          "(send Authorization: Bearer <[server] auth_token>)",
                                          headers={"WWW-Authenticate": 'Bearer realm="context-harness"'})
                await response(scope, receive, send)
                return
        too_large = error_response(413, "bad_request", f"request body is larger than {self.max_body_bytes} bytes "
                                   "([server] max_body_bytes)")
        declared = headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_body_bytes:
            await too_large(scope, receive, send)
            return
        received = 0
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _BodyTooLarge()
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not response_started:
                await too_large(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


# -- REST shim ------------------------------------------------------------------------------------

Handler = Callable[[Request], Awaitable[Response]]


def _guarded(fn: Handler) -> Handler:
    """Map errors to the one table; unknown exceptions are logged and never echoed."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except _BodyTooLarge:
            raise
        except Exception as exc:
            return harness_error_response(error_payload(exc, f"{request.method} {request.url.path}"))

    return endpoint


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("the request body is not valid JSON") from None


def build_app(harness: Any, agent: str | None = None, registry: Registry | None = None,
              bind_host: str | None = None) -> Starlette:
    """The HTTP app over an open ``harness`` (``/mcp`` + REST shim + ``/health``), guards included."""
    settings: ServerConfig = harness.config.server
    server = build_server(harness, agent, registry)
    registry = server.registry
    mcp_app, mcp_run = streamable_http(server, max_body_bytes=settings.max_body_bytes)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__})

    async def tools_list(request: Request) -> Response:
        scope_agent = request.query_params.get("agent") or agent
        if agent is not None and scope_agent != agent:
            raise NotFound(f"unknown agent {scope_agent!r}: this server serves agent {agent!r} only")
        tools = [{"name": s.name, "description": s.description, "builtin": s.builtin, "parameters": s.input_schema}
                 for s in registry.tools(scope_agent)]
        return JSONResponse({"tools": tools})

    async def call_tool(request: Request) -> Response:
        name = request.path_params["name"]
        spec = registry.tool(name, agent)
        if spec is None:
            raise NotFound(f"unknown tool {name!r}; GET /tools/list shows the available tools")
        if request.method == "GET":
            if name != "sources":
                raise BadRequest(f"use POST /tools/{name} with a JSON body")
            arguments: Any = {}
        else:
            arguments = await _json_body(request)
        if not isinstance(arguments, dict):
            raise BadRequest("the request body must be a JSON object")
        return JSONResponse(await spec.call(arguments))

    async def agents_list(request: Request) -> Response:
        agents = registry.agents
        infos = agents.list() if agents is not None else []
        return JSONResponse({"agents": [info.model_dump(mode="json") for info in infos]})

    async def agent_prompt(request: Request) -> Response:
        name = request.path_params["name"]
        agents = registry.agents
        if agents is None or agents.find(name) is None:
            known = ", ".join(agents.names()) if agents is not None else ""
            raise NotFound(f"unknown agent {name!r}; GET /agents/list shows the agents"
                           + (f" ({known})" if known and len(known) < 200 else ""))
        body = await _json_body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object of arguments")
        if set(body) == {"arguments"} and isinstance(body["arguments"], dict):
            body = body["arguments"]
        prompt = await resolve_agent(agents, harness, name, body)
        return JSONResponse(prompt.model_dump(mode="json"))

    async def not_found(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            return error_response(405, "bad_request", f"{request.method} is not allowed on {request.url.path}")
        if exc.status_code == 404:
            return error_response(404, "not_found", f"no route {request.url.path}")
        return error_response(exc.status_code, "bad_request", str(exc.detail))

    routes = [
        Route("/health", _guarded(health), methods=["GET"]),
        Route("/tools/list", _guarded(tools_list), methods=["GET"]),
        Route("/tools/{name}", _guarded(call_tool), methods=["GET", "POST"]),
        Route("/agents/list", _guarded(agents_list), methods=["GET"]),
        Route("/agents/{name}/prompt", _guarded(agent_prompt), methods=["POST"]),
        Route("/mcp", mcp_app),
    ]
    middleware = [Middleware(HostOriginGuard, settings=settings, bind_host=bind_host)]
    if settings.cors_origins:
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["*"], expose_headers=["Mcp-Session-Id", "Mcp-Protocol-Version"], max_age=600))
    token = settings.auth_token or None
    middleware.append(Middleware(BodyLimitAndAuth, max_body_bytes=settings.max_body_bytes, token=token))

    app = Starlette(routes=routes, middleware=middleware, lifespan=lambda _app: mcp_run(),
                    exception_handlers={HTTPException: not_found})
    app.state.server = server
    return app


# -- running --------------------------------------------------------------------------------------

def parse_bind(value: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port``, ``:port`` or ``port`` -> (host, port); the host defaults to 127.0.0.1."""
    text = value.strip()
    if text.isdigit():
        return "127.0.0.1", int(text)
    host, port = _split_host(text)
    if port is None or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BadRequest(f"--bind {value!r}: expected HOST:PORT such as 127.0.0.1:7331")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def run_http(config: Config, bind: str | None = None, agent: str | None = None) -> None:
    """Serve ``/mcp`` and the REST shim until interrupted. Blocks."""
    anyio.run(serve_http, config, bind, agent)


async def serve_http(config: Config, bind: str | None = None, agent: str | None = None, setup: Any = None) -> None:
    """Serve until interrupted. ``setup`` is a ``ServerSetup`` (extensions registered in code); without
    it, extensions are discovered from installed entry points."""
    import uvicorn

    from context_harness.extensions import prepare_server
    from context_harness.harness import Harness

    host, port = parse_bind(bind or config.server.bind)
    if config.server.auth_token == "":
        log.warning("[server] auth_token is empty: no token is required")
    if host not in ("127.0.0.1", "localhost", "::1") and not config.server.auth_token:
        log.warning("serving on %s without [server] auth_token: anyone who can reach it can read the index", host)
    setup = setup if setup is not None else prepare_server(config)
    async with Harness.open(config, registry=setup.connector_registry) as harness:
        app = build_app(harness, agent, setup_registry(harness, setup), bind_host=host)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                               lifespan="on", server_header=False))
        shown = f"[{host}]" if ":" in host else host
        sys.stderr.write(f"context-harness: serving MCP at http://{shown}:{port}/mcp and REST at "
                         f"http://{shown}:{port}/tools/* (Ctrl-C to stop)\n")
        sys.stderr.flush()
        await server.serve()


__all__ = ["BodyLimitAndAuth", "HostOriginGuard", "build_app", "parse_bind", "run_http", "serve_http"]
