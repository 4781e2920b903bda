"""The web console at ``/ui``: server-rendered pages (Jinja2, autoescaped) over one ``Harness``.

Mounted by ``server.http.build_app`` behind the API's own guards (framing, Host/Origin, body limit).
The bearer token is checked here instead of by ``BodyLimitAndAuth``: a browser cannot send an
``Authorization`` header on a link, so the login page exchanges the token for a session cookie
(``session.Sessions``). Every write is a POST carrying the session's CSRF token and is refused in
read-only mode. Responses carry a Content-Security-Policy that allows no inline script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.staticfiles import StaticFiles

from context_harness.config import Config
from context_harness.console.agents import AgentPages
from context_harness.console.graph import GraphPages
from context_harness.console.markdown import snippet
from context_harness.console.notes import NotePages
from context_harness.console.oauth import Approvals, OAuthPages
from context_harness.console.pages import Pages
from context_harness.console.runs import RunPages
from context_harness.console.session import Sessions
from context_harness.console.sources import SourcePages
from context_harness.console.tools import ToolPages
from context_harness.core.face import Harness

HERE = Path(__file__).parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
# same-origin, not no-referrer: under no-referrer a browser's form POST carries "Origin: null", which the
# Host/Origin guard refuses, so no form (the login first) could be sent from a real browser.
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


def ui_enabled(config: Config, loopback: bool) -> bool:
    """``[ui] enabled``, or when unset, whether the server binds a loopback address."""
    return loopback if config.ui.enabled is None else config.ui.enabled


def read_only(config: Config) -> bool:
    """``[ui] read_only``; always on the PostgreSQL backend, whose writer the console cannot know."""
    return config.ui.read_only or config.db.backend == "postgres"


def templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["q"] = lambda value: quote(str(value), safe="")
    env.globals["snippet"] = snippet
    return env


class SecurityHeaders:
    """Adds ``SECURITY_HEADERS`` to every response of the console (static files included)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                         if k.lower().encode() not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


def console_routes(harness: Harness, token: str | None, agent: str | None = None,
                   approvals: Approvals | None = None, workspaces: tuple[str, str, list[str]] | None = None,
                   ) -> list[BaseRoute]:
    """The ``/ui`` mount: pages, the login form and the vendored static files; ``agent``: the agent
    the server is scoped to (``ctx serve --agent``), whose tools are the only ones the console calls;
    ``approvals``: the OAuth authorization server, whose pages it adds (``[server.oauth]``);
    ``workspaces``: (this console's workspace, the switch URL, every workspace) when one server serves
    several (``--workspaces``): the header then shows a switcher."""
    env = templates()
    env.globals["oauth"] = approvals is not None
    env.globals["workspace"], env.globals["switch_url"], env.globals["workspaces"] = workspaces or (None, "", [])
    pages = Pages(harness, Sessions(token), env, read_only(harness.config))

    async def home(request: Request) -> Response:
        return RedirectResponse("/ui/search", status_code=303)

    routes: list[BaseRoute] = [
        Route("/", home, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=HERE / "static")),
        *pages.routes(),
        *SourcePages(pages).routes(),
        *NotePages(pages).routes(),
        *GraphPages(pages).routes(),
        *AgentPages(pages).routes(),
        *RunPages(pages).routes(),
        *ToolPages(pages, agent).routes(),
        *(OAuthPages(pages, approvals).routes() if approvals is not None else []),
    ]
    return [Mount("/ui", app=SecurityHeaders(Router(routes=routes)))]


__all__ = ["CSP", "console_routes", "read_only", "ui_enabled"]
