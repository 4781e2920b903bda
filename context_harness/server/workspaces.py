"""``context-harness --workspaces [FILE]``: the workspaces of a registry served by one process, over
stdio or (``ctx serve --http --workspaces``) Streamable HTTP with the REST shim.

The registry (``ctx workspace add``) is opened as a ``WorkspaceSet`` (``core/workspaces.py``), which
offers the calls the MCP adapter serves a ``Harness`` by; so the adapter, the stdio wire and their
limits are the single-workspace ones, unchanged. A registry none of whose workspaces can serve is
explained to the client as a config that does not load is (``stdio.serve_problem``).

Over HTTP each workspace's ``[server] auth_token`` opens that workspace: a request sees the
workspaces without a token and those whose token it presents (``WorkspaceSet.admitted``), in its
tool calls, listings and resources alike; a token that opens none is refused (401). A workspace
without a token is served on a loopback address only (``check_bind``, as one workspace is).

OAuth is the registry's own (its ``[server]`` table: ``public_url``, ``auth_token``, ``[server.oauth]``;
grants in ``oauth_store``): a token's scopes name workspaces (``read:NAME``; ``read`` for all:
``oauth/scopes.py``), it sees only those it may read, and every request then needs a bearer. The
owner approves a client on ``/ui/oauth/authorize``, logged in with the registry's ``auth_token``.
"""

from __future__ import annotations

import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from context_harness.core.face import Harness, WorkspaceSet
from context_harness.errors import ConfigError, HarnessError, Unauthorized
from context_harness.server.sdk import defer_package_inits

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Receive, Scope, Send

    from context_harness.config.server import ServerConfig
    from context_harness.server.oauth.provider import Provider

defer_package_inits()  # before a module of this package imports the SDK: see sdk.py


def run_workspaces_stdio(file: Path) -> HarnessError | None:
    """Serve registry ``file``'s workspaces over stdio until the client closes; blocks. When none can
    serve, the client is told why and the error returned (as ``run_stdio`` does)."""
    from context_harness.server.stdio import serve_problem, serve_stdio

    parent = os.getppid()

    async def main() -> HarnessError | None:
        async with AsyncExitStack() as stack:
            try:
                served = await stack.enter_async_context(WorkspaceSet.open(file))
            except HarnessError as error:
                await stack.aclose()
                sys.stderr.write(f"error: {error.message}\n")
                sys.stderr.flush()
                if not sys.stdin.isatty():
                    await serve_problem(error, parent)
                return error
            await serve_stdio(cast(Harness, served), None, parent)  # it serves what a Harness serves
        return None

    return anyio.run(main)


# -- HTTP ------------------------------------------------------------------------------------------

VISIBLE_KEY = "context_harness.workspaces"  # the ASGI scope key: the workspaces the request's token opens
GRANTS_KEY = "context_harness.workspace_grants"  # ... and, for an OAuth token, its scopes on each


def registry_server(file: Path) -> ServerConfig | None:
    """The registry's own ``[server]`` settings when it has ``[server.oauth] enabled``, else None."""
    from pydantic import ValidationError

    from context_harness.common import redaction
    from context_harness.config import workspaces as registry
    from context_harness.config.messages import describe_validation_error
    from context_harness.config.server import ServerConfig
    from context_harness.config.variables import expand_vars

    table = registry.server_table(file)
    if not table:
        return None
    expanded = expand_vars(table, f"{file}: [server]")  # ${CTX_TOKEN}, as in a workspace's config
    redaction.remember(table, expanded)  # the token is never echoed
    try:
        settings = ServerConfig.model_validate(expanded)
    except ValidationError as exc:
        raise ConfigError(f"{file}: [server]: {describe_validation_error(exc, ServerConfig)}") from None
    return settings if settings.oauth.enabled else None


def oauth_store(file: Path) -> Path:
    """Where the grants of registry ``file``'s OAuth live: beside it (``workspaces.oauth.sqlite``)."""
    return file.with_name(f"{file.stem}.oauth.sqlite")


def open_registry_provider(served: WorkspaceSet) -> tuple[Provider, ServerConfig] | None:
    """The authorization server of ``served``'s registry, or None when its ``[server.oauth]`` is off."""
    owner = registry_server(served.file)
    if owner is None or owner.public_url is None:
        return None
    from context_harness.core.face import GrantStore
    from context_harness.server.oauth.provider import Provider

    provider = Provider(GrantStore(oauth_store(served.file)), owner.oauth, owner.public_url,
                        [w.name for w in served.served])
    return provider, owner


def run_workspaces_http(file: Path, bind: str | None = None) -> None:
    """Serve registry ``file``'s workspaces over HTTP until interrupted; blocks. ``ConfigError`` when
    none can serve, the address cannot be had, or a workspace without a token would be public."""

    async def main() -> None:
        async with WorkspaceSet.open(file) as served:
            await serve_workspaces_http(served, bind)

    anyio.run(main)


async def serve_workspaces_http(served: WorkspaceSet, bind: str | None = None) -> None:
    import uvicorn

    from context_harness.common.lineage import watching
    from context_harness.server.http import KEEP_ALIVE_SECONDS, check_bind, listening_socket, parse_bind
    from context_harness.server.limits import protocol_class

    settings = served.config.server
    host, port = parse_bind(bind or settings.bind)
    oauth = registry_server(served.file)
    for workspace in served.served:  # each workspace by its own [server] settings: a token, or loopback
        if workspace.harness.config.server.oauth.enabled:
            raise ConfigError(f"workspace {workspace.name}: its [server.oauth] is not used with --workspaces: set "
                              f"[server] public_url, auth_token and [server.oauth] in the registry ({served.file})")
        if oauth is None:  # with OAuth every request needs a bearer
            check_bind(workspace.harness.config, host)
    shown = f"[{host}]" if ":" in host else host
    with listening_socket(host, port) as sock:
        async with served.serving():
            app = build_workspaces_app(served, host)
            server = uvicorn.Server(uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="on", server_header=False,
                timeout_keep_alive=KEEP_ALIVE_SECONDS, http=protocol_class(settings.header_timeout,
                                                                           settings.max_connections)))
            url = f"http://{shown}:{sock.getsockname()[1]}"
            names = ", ".join(w.name for w in served.served)
            sys.stderr.write(f"MCP server listening on {url}, serving {len(served.served)} workspaces ({names})\n"
                             f"  MCP endpoint: {url}/mcp\n  REST: {url}/tools/* (Ctrl-C to stop)\n"
                             + (f"  OAuth: clients sign in at {oauth.public_url} (authorized clients: "
                                f"{oauth.public_url}/ui/oauth/clients)\n" if oauth is not None else ""))
            sys.stderr.flush()
            with watching(settings.exit_with_parent is True, None, lambda _: setattr(server, "should_exit", True)):
                await server.serve(sockets=[sock])


def build_workspaces_app(served: WorkspaceSet, bind_host: str | None = None) -> Starlette:
    """``/mcp``, the REST shim's tool and agent routes and ``/health`` over ``served``, with the single
    workspace's guards (Host and Origin, framing, body limits) and each workspace's token."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.routing import Mount, Route

    from context_harness.server.guards import BodyLimitAndAuth, FramingGuard, HostOriginGuard, JsonBodies
    from context_harness.server.http import (
        ConsoleHeaders,
        RestShim,
        UnknownErrors,
        _harness_error,
        _http_error,
        streamable_http,
    )
    from context_harness.server.oauth.routes import ENDPOINTS, OPEN_PATHS, oauth_routes

    settings = served.config.server
    harness = cast(Harness, served)  # it serves what a Harness serves
    server = scoped_server(harness)
    mcp_app, mcp_run = streamable_http(server, settings)
    oauth = open_registry_provider(served)
    consoles = workspace_consoles(served, bind_host, oauth[1].auth_token if oauth else None)
    owner = owner_console(served, *oauth) if oauth is not None else None
    own_auth = ("/ui",) if consoles or owner else ()
    endpoints = ENDPOINTS if oauth else ()
    middleware = [Middleware(ConsoleHeaders)] if consoles or owner else []
    middleware += [Middleware(FramingGuard), Middleware(HostOriginGuard, settings=settings, bind_host=bind_host,
                                                        any_origin_paths=endpoints),
                   Middleware(BodyLimitAndAuth, max_body_bytes=settings.max_body_bytes, token=None),
                   Middleware(WorkspaceTokens, served=served, own_auth=own_auth, oauth=oauth,
                              open_paths=OPEN_PATHS if oauth else ()),
                   Middleware(JsonBodies, form_paths=(*own_auth, *endpoints)), Middleware(UnknownErrors)]
    routes: list[Any] = [*RestShim(harness, None).routes(), Route("/mcp", mcp_app)]
    if oauth is not None:
        routes += oauth_routes(oauth[0])
    if consoles or owner:
        routes.append(Mount("/ui", app=ConsoleSwitch(consoles, owner)))
    app = Starlette(routes=routes, middleware=middleware,
                    lifespan=lambda _app: mcp_run(),
                    exception_handlers={HarnessError: _harness_error, HTTPException: _http_error})
    app.state.server = server
    return app


class WorkspaceTokens:
    """Which workspaces a request may use, from its bearer token (``WorkspaceSet.admitted``): kept in
    the ASGI scope (``VISIBLE_KEY``) for the MCP handlers and set as ``VISIBLE`` for the REST routes.
    A token that opens no workspace, or none where every workspace needs one, is refused. With the
    registry's OAuth (``oauth``) every request needs a bearer: the registry's ``auth_token`` (every
    workspace, every scope), a workspace's, or an OAuth access token (the workspaces it may read)."""

    def __init__(self, app: ASGIApp, served: WorkspaceSet, own_auth: tuple[str, ...] = (),
                 oauth: tuple[Provider, ServerConfig] | None = None, open_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.served = served
        self.own_auth = own_auth  # the console: each workspace's console checks its own token (a cookie session)
        self.oauth = oauth
        self.open_paths = ("/health", *open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from context_harness.server.guards import error_response

        path = scope.get("path", "")
        if (scope["type"] != "http" or path in self.open_paths or scope["method"] == "OPTIONS"
                or any(path == p or path.startswith(p + "/") for p in self.own_auth)):
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        kind, _, value = header.partition(" ")
        token = value.strip() if kind.lower() == "bearer" and value.strip() else None
        if self.oauth is not None:
            await self._oauth(scope, receive, send, token)
            return
        opened = self.served.admitted(token)
        if not opened:
            why = ("a bearer token that opens no workspace" if token else "no bearer token, and every workspace "
                   "needs its [server] auth_token")
            refusal = Unauthorized(f"{why}: send Authorization: Bearer <the [server] auth_token of a workspace>")
            await error_response(refusal, headers={"WWW-Authenticate": 'Bearer realm="context-harness"'})(
                scope, receive, send)
            return
        scope[VISIBLE_KEY] = opened
        with self.served.seeing(opened):
            await self.app(scope, receive, send)


    async def _oauth(self, scope: Scope, receive: Receive, send: Send, token: str | None) -> None:
        """The bearer check with the registry's OAuth on."""
        import hmac

        from mcp.server.auth.provider import AccessToken

        from context_harness.server.oauth.scopes import ALL_SCOPES, GRANTED, workspace_grants

        assert self.oauth is not None
        provider, owner = self.oauth
        if token is not None and owner.auth_token and hmac.compare_digest(token.encode(), owner.auth_token.encode()):
            scope[GRANTED] = ALL_SCOPES
            await self.app(scope, receive, send)
            return
        mine = {w.name for w in self.served.served if token is not None and w.harness.config.server.auth_token
                and hmac.compare_digest(token.encode(), w.harness.config.server.auth_token.encode())}
        if mine:
            opened = self.served.admitted(token)
            scope[VISIBLE_KEY] = opened
            with self.served.seeing(opened):
                await self.app(scope, receive, send)
            return
        verdict = await provider.verify(token) if token is not None else None
        if not isinstance(verdict, AccessToken):
            await self._challenge(scope, receive, send, provider, getattr(verdict, "reason", None))
            return
        grants = workspace_grants(verdict.scopes, [w.name for w in self.served.served])
        if not grants:
            await self._challenge(scope, receive, send, provider, "this token may read no workspace served here",
                                  insufficient=True)
            return
        visible = frozenset(grants)
        scope[GRANTED], scope[VISIBLE_KEY], scope[GRANTS_KEY] = frozenset(verdict.scopes), visible, grants
        with self.served.seeing(visible, grants):
            await self.app(scope, receive, send)

    @staticmethod
    async def _challenge(scope: Scope, receive: Receive, send: Send, provider: Provider, reason: str | None,
                         insufficient: bool = False) -> None:
        """401 (403 for a token reading no workspace) with the RFC 6750/9728 challenge, as one workspace's."""
        from context_harness.server.oauth.gate import refuse
        from context_harness.server.oauth.routes import RESOURCE_METADATA

        await refuse(f"{provider.resource}{RESOURCE_METADATA}", reason, insufficient)(scope, receive, send)


def owner_console(served: WorkspaceSet, provider: Provider, owner: ServerConfig) -> ASGIApp:
    """The console the owner approves OAuth clients in (``/ui/oauth/*``), logged in with the
    registry's ``auth_token``: the first workspace's pages, with the OAuth ones added."""
    from context_harness.console import console_routes

    mount = console_routes(served.served[0].harness, owner.auth_token or None, approvals=provider)[0]
    return mount.app  # type: ignore[attr-defined]  # the Mount's own app, mounted again


# -- the console: each workspace's own, and a switcher ---------------------------------------------

SWITCH_COOKIE = "ctx_workspace"


def workspace_consoles(served: WorkspaceSet, bind_host: str | None, owner_token: str | None = None
                       ) -> dict[str, ASGIApp]:
    """Each workspace's web console (where its ``[ui]`` has it on: by default on a loopback bind), with
    its own token and read-only setting, and a switcher naming them all; by workspace name. With the
    registry's OAuth (``owner_token``: its ``auth_token``) a workspace without a token of its own has
    the owner log in: a public_url reaches the loopback bind too."""
    from context_harness.console import console_routes, ui_enabled
    from context_harness.server.http import is_loopback

    loopback = bind_host is None or is_loopback(bind_host)
    shown = [w for w in served.served if ui_enabled(w.harness.config, loopback)]
    names = [w.name for w in shown]
    consoles: dict[str, ASGIApp] = {}
    for workspace in shown:
        mount = console_routes(workspace.harness, workspace.harness.config.server.auth_token or owner_token or None,
                               workspaces=(workspace.name, "/ui/switch", names))[0]
        consoles[workspace.name] = mount.app  # type: ignore[attr-defined]  # the Mount's own app, mounted again
    return consoles


class ConsoleSwitch:
    """``/ui``: the console of the workspace the ``ctx_workspace`` cookie names (else the first);
    ``/ui/switch?to=NAME`` sets the cookie and opens that workspace's search page. ``owner``: the
    OAuth pages' console (``/ui/oauth/*``, and the login on the way to them)."""

    def __init__(self, consoles: dict[str, ASGIApp], owner: ASGIApp | None = None) -> None:
        self.consoles = consoles
        self.owner = owner

    def _owner_route(self, route: str, query: str) -> bool:
        from urllib.parse import parse_qs

        if self.owner is None:
            return False
        if route.startswith(("/oauth/", "/ui/oauth/")):
            return True
        following = (parse_qs(query).get("next") or [""])[0]
        return route in ("/login", "/ui/login") and following.startswith("/ui/oauth/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from http.cookies import SimpleCookie
        from urllib.parse import parse_qs

        from starlette.responses import RedirectResponse

        from context_harness.errors import NotFound
        from context_harness.server.guards import error_response

        path, root = scope.get("path", ""), scope.get("root_path", "")
        route = path[len(root):] if root and path.startswith(root) else path
        if self.owner is not None and (self._owner_route(route, scope.get("query_string", b"").decode("latin-1"))
                                       or not self.consoles):
            await self.owner(scope, receive, send)
            return
        if route in ("/switch", "/ui/switch"):
            wanted = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("to") or [""])[0]
            if wanted not in self.consoles:
                known = ", ".join(self.consoles)
                await error_response(NotFound(f"no console for workspace {wanted!r}; the workspaces are: {known}"))(
                    scope, receive, send)
                return
            response = RedirectResponse("/ui/search", status_code=303)
            response.set_cookie(SWITCH_COOKIE, wanted, path="/ui", httponly=True, samesite="strict")
            await response(scope, receive, send)
            return
        cookie: SimpleCookie = SimpleCookie(dict(scope.get("headers") or []).get(b"cookie", b"").decode("latin-1"))
        chosen = cookie[SWITCH_COOKIE].value if SWITCH_COOKIE in cookie else ""
        app = self.consoles.get(chosen) or next(iter(self.consoles.values()))
        await app(scope, receive, send)


def _opened(ctx: Any) -> tuple[frozenset[str] | None, dict[str, frozenset[str]] | None]:
    scope = getattr(ctx.request, "scope", None)
    value = scope.get(VISIBLE_KEY) if isinstance(scope, dict) else None
    grants = scope.get(GRANTS_KEY) if isinstance(scope, dict) else None
    return (value if isinstance(value, frozenset) else None), (grants if isinstance(grants, dict) else None)


def _scoped(handler: Any, served: WorkspaceSet) -> Any:
    """``handler`` seeing the workspaces its request's token opens, with its OAuth scopes on each (from
    the request's ASGI scope: an MCP session's handlers run in the session's task, not the HTTP request's)."""
    async def run(ctx: Any, params: Any) -> Any:
        with served.seeing(*_opened(ctx)):
            return await handler(ctx, params)

    return run


def _scoped_server() -> type:
    import mcp.types as t

    from context_harness.server.mcp import HarnessServer, document_arguments

    class Scoped(HarnessServer):
        """The MCP adapter over a ``WorkspaceSet`` whose handlers see the request's workspaces only."""

        async def _admit(self, ctx: Any, uris: list[str]) -> None:
            """A document may be watched only by a token that may read it: one it cannot is refused as its
            read would be (``not_found`` naming only the workspaces it sees), so no update leaks."""
            for uri in uris:
                if document_arguments(uri) is not None:
                    await self._read_resource(ctx, t.ReadResourceRequestParams(uri=uri))  # scoped, raises

        def describe(self) -> str:  # a token may see only some workspaces: the instructions name none
            return cast(WorkspaceSet, self.harness).describe(named=False)

        def __init__(self, harness: Harness) -> None:
            for name in ("_list_tools", "_call_tool", "_list_prompts", "_get_prompt", "_complete", "_list_resources",
                         "_read_resource"):
                setattr(self, name, _scoped(getattr(self, name), cast(WorkspaceSet, harness)))
            super().__init__(harness)

    return Scoped


def scoped_server(harness: Harness) -> Any:
    """The MCP adapter for ``build_workspaces_app`` (its class made on first use: the SDK loads late)."""
    return _scoped_server()(harness)


__all__ = ["GRANTS_KEY", "SWITCH_COOKIE", "VISIBLE_KEY", "ConsoleSwitch", "WorkspaceTokens", "build_workspaces_app",
           "oauth_store", "owner_console", "registry_server", "run_workspaces_http", "run_workspaces_stdio",
           "serve_workspaces_http", "workspace_consoles"]
