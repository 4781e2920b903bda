"""The console's graph of notes and their links (``/ui/graph``): the whole knowledge base up to
``MOST`` documents (past it the page says so and offers a document's neighbourhood), or one
document's neighbourhood. ``source`` and ``folder`` narrow it and ``orphans=hide`` leaves out the
notes without a link among those shown, on the page and in ``/ui/graph.json`` alike. The page lists
the notes and links as HTML (the text alternative, and all a browser without JavaScript shows);
``graph.js`` lays them out with the vendored d3-force and draws them on a canvas."""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from context_harness.console.pages import Pages, error_message
from context_harness.errors import HarnessError

MOST = 5000  # notes the whole graph draws at most: d3-force lays 5,000 out in seconds on 2 cores


def folder_of(source_id: str) -> str:
    """The folder a note sits in, from its source's root ("" at the root)."""
    return source_id.rsplit("/", 1)[0] if "/" in source_id else ""


def folders_of(source_ids: list[str]) -> list[str]:
    """Every folder holding a note, its parents included, sorted."""
    found: set[str] = set()
    for source_id in source_ids:
        parts = folder_of(source_id).split("/")
        found |= {"/".join(parts[:n]) for n in range(1, len(parts) + 1) if parts[0]}
    return sorted(found)


def narrowed(graph: dict[str, Any], source: str, folder: str, hide_orphans: bool) -> dict[str, Any]:
    """``graph`` with only the notes of ``source`` under ``folder`` (each "" for all) and the links
    between them, each note with its ``links`` among them; the choices the whole graph offers in
    ``sources`` and ``folders``, and how many notes it had in ``total``."""
    nodes = graph["nodes"]
    sources = sorted({n["source"] for n in nodes})
    folders = folders_of([n["source_id"] for n in nodes])
    prefix = folder.strip("/") + "/" if folder.strip("/") else ""
    kept = {n["id"] for n in nodes if (not source or n["source"] == source) and n["source_id"].startswith(prefix)}
    edges = [e for e in graph["edges"] if e["from"] in kept and e["to"] in kept]
    degree = Counter([e["from"] for e in edges] + [e["to"] for e in edges])
    if hide_orphans:
        kept = {d for d in kept if degree[d]}
    return {**graph, "nodes": [{**n, "links": degree[n["id"]]} for n in nodes if n["id"] in kept], "edges": edges,
            "total": len(nodes), "sources": sources, "folders": folders}


class GraphPages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages

    def routes(self) -> list[BaseRoute]:
        return [Route("/graph", self.page, methods=["GET"]), Route("/graph.json", self.data, methods=["GET"])]

    async def graph(self, request: Request) -> dict[str, Any]:
        """The graph the query asks for (``id``, ``source``, ``folder``, ``orphans``); raises HarnessError."""
        query = request.query_params
        whole = await self.pages.harness.link_graph(query.get("id") or None, most=MOST)
        return narrowed(whole, query.get("source", ""), query.get("folder", ""), query.get("orphans") == "hide")

    async def page(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        try:
            graph = await self.graph(request)
        except HarnessError as exc:
            return self.pages.render(request, "message.html", 404, title="Not found", message=error_message(exc))
        titles = {n["id"]: n["title"] or n["source_id"] for n in graph["nodes"]}
        here = next((n for n in graph["nodes"] if n["here"]), None)
        query = request.query_params
        chosen = {"id": query.get("id", ""), "source": query.get("source", ""), "folder": query.get("folder", ""),
                  "orphans": query.get("orphans", "")}
        asked = urlencode({k: v for k, v in chosen.items() if v})
        src = "/ui/graph.json" + ("?" + asked if asked else "")
        return self.pages.render(request, "graph.html", graph=graph, titles=titles, here=here, chosen=chosen,
                                 orphans=sum(1 for n in graph["nodes"] if not n["links"]), src=src)

    async def data(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return JSONResponse({"error": "log in first"}, status_code=401)
        try:
            return JSONResponse(await self.graph(request))
        except HarnessError as exc:
            return JSONResponse({"error": error_message(exc)}, status_code=404)


__all__ = ["GraphPages", "MOST", "folders_of", "narrowed"]
