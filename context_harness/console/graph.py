"""The console's graph of notes and their links (``/ui/graph``): a document's neighbourhood, or the
whole knowledge base when it is small. The page lists the nodes and links as HTML (readable without
JavaScript) and ``graph.js`` draws them with the vendored Cytoscape.js from ``/ui/graph.json``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from context_harness.console.pages import Pages, error_message
from context_harness.errors import HarnessError


class GraphPages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages

    def routes(self) -> list[BaseRoute]:
        return [Route("/graph", self.page, methods=["GET"]), Route("/graph.json", self.data, methods=["GET"])]

    async def page(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        doc_id = request.query_params.get("id") or None
        try:
            graph = await self.pages.harness.link_graph(doc_id)
        except HarnessError as exc:
            return self.pages.render(request, "message.html", 404, title="Not found", message=error_message(exc))
        titles = {n["id"]: n["title"] or n["source_id"] for n in graph["nodes"]}
        here = next((n for n in graph["nodes"] if n["here"]), None)
        return self.pages.render(request, "graph.html", graph=graph, titles=titles, here=here, doc_id=doc_id or "")

    async def data(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return JSONResponse({"error": "log in first"}, status_code=401)
        try:
            return JSONResponse(await self.pages.harness.link_graph(request.query_params.get("id") or None))
        except HarnessError as exc:
            return JSONResponse({"error": error_message(exc)}, status_code=404)


__all__ = ["GraphPages"]
