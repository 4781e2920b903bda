"""The console's agents pages: every agent (all formats) and "Try it", which resolves an agent with
the given arguments through the same ``Harness.resolve_agent`` as ``POST /agents/{name}/prompt``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from context_harness.errors import HarnessError, NotFound
from context_harness.server.ui.pages import Pages, error_message

WHERE = {"markdown": "a Markdown agent file", "toml": "an [agents.NAME] table of ctx.toml",
         "lua": "a Lua agent script", "python": "a Python agent module"}


class AgentPages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages

    def routes(self) -> list[BaseRoute]:
        return [Route("/agents", self.listing, methods=["GET"]),
                Route("/agents/{name}", self.try_it, methods=["GET"])]

    async def listing(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        return self.pages.render(request, "agents.html", agents=self.pages.harness.agents(), where=WHERE)

    async def try_it(self, request: Request) -> Response:
        """The agent's argument form; with ``run=1``, its prompt resolved with the arguments given."""
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        name = request.path_params["name"]
        info = next((a for a in self.pages.harness.agents() if a.name == name), None)
        if info is None:
            return self.pages.render(request, "message.html", 404, title="No such agent",
                                     message=f"unknown agent {name!r}; the Agents page lists them")
        values = {arg.name: request.query_params.get(arg.name, "") for arg in info.arguments}
        context: dict[str, Any] = {"agent": info, "values": values, "where": WHERE}
        if request.query_params.get("run") == "1":
            given = {key: value for key, value in values.items() if value != ""}
            try:
                context["prompt"] = (await self.pages.harness.resolve_agent(name, given)).prompt
            except (HarnessError, NotFound) as exc:
                context["error"] = error_message(exc)
        return self.pages.render(request, "agent.html", **context)


__all__ = ["AgentPages"]
