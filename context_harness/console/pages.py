"""The console's pages: login, search (with the explain chart) and a document at a hit's section
(rendered Markdown, with its links, backlinks, nearest neighbours and history); the other pages
(sources, notes, graph, agents, tools) build on ``Pages``. Each handler checks the session, calls
the ``Harness`` and renders a template; writes also check the CSRF token and read-only mode."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from context_harness.common import timestamps
from context_harness.common.validation import plain_int
from context_harness.console.markdown import Section, render, render_plain
from context_harness.console.session import Sessions, new_session_id, set_cookie
from context_harness.core.face import Harness
from context_harness.errors import BadRequest, HarnessError
from context_harness.models import (
    DocumentOut,
    GetRequest,
    RecentChange,
    RecentRequest,
    RelatedRequest,
    RelatedResponse,
    SearchFilters,
    SearchMode,
    SearchRequest,
    SearchResponse,
)

MODES: tuple[SearchMode, ...] = ("hybrid", "keyword", "semantic")
PAGE_CHARS = 8000  # characters of a document a page shows
TOC_REACH = 200  # the table of contents lists the headings of the chunks this far before and after the page
PAGE_RESULTS = 20  # results a search shows, and how many more "More results" adds
MAX_RESULTS = 100  # the search tool's most
RELATED = 20  # links, backlinks and neighbours listed beside a document
HISTORY_SCAN = 200  # the newest changes of a document's source looked through for its history


def sections_of(doc: DocumentOut) -> list[Section]:
    """Where each chunk of the window begins in its text, so the page can anchor every section
    (``#chunk-N``) and a hit's link scrolls to it; none when the starts are unknown."""
    base = doc.range.start if doc.range else 0
    starts = [Section(c.index, max(0, c.start - base)) for c in doc.chunks if c.start is not None]
    return starts if len(starts) == len(doc.chunks) else []


def contents_of(first: int, headings: list[str], here: int | None) -> list[tuple[int, str, bool]]:
    """The table of contents around the part shown, from the heading paths of the chunks from position
    ``first`` on: ``(first chunk index, heading, holds here)`` for each run of chunks under one heading
    (a long section is split into several chunks)."""
    entries: list[tuple[int, str, bool]] = []
    for index, heading in enumerate(headings, start=first):
        heading = heading or ("(start)" if index == 0 else f"section {index}")
        if entries and entries[-1][1] == heading:
            start, _, holds = entries[-1]
            entries[-1] = (start, heading, holds or index == here)
        else:
            entries.append((index, heading, index == here))
    return entries


class Pages:
    def __init__(self, harness: Harness, sessions: Sessions, env: Environment, read_only: bool) -> None:
        self.harness = harness
        self.sessions = sessions
        self.env = env
        self.read_only = read_only

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/search", self.search, methods=["GET"]),
            Route("/doc", self.document, methods=["GET"]),
        ]

    # -- rendering and checks --------------------------------------------------------------------

    def render(self, request: Request, name: str, status: int = 200, **values: Any) -> Response:
        sid = self.sessions.session_id(request)
        fresh = sid is None
        sid = sid or new_session_id()
        page = self.env.get_template(name).render(
            csrf=self.sessions.csrf(sid), read_only=self.read_only, needs_login=self.sessions.needs_login,
            page=name.removesuffix(".html"), can_write=self.writable(), **values)
        response = HTMLResponse(page, status_code=status)
        if fresh:
            set_cookie(response, sid, request)
        return response

    def login_redirect(self, request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/ui/login?next={_quote(target)}", status_code=303)

    async def refused_write(self, request: Request) -> Response | None:
        """A response refusing this write, or None when it may go ahead."""
        if not self.sessions.logged_in(request):
            return self.render(request, "message.html", 401, title="Log in first",
                               message="This action needs you to log in with the server's token.")
        form = await request.form()
        if not self.sessions.csrf_ok(request, _text(form.get("csrf"))):
            return self.render(request, "message.html", 403, title="Refused",
                               message="The form's CSRF token is missing or stale: reload the page and try again.")
        if self.read_only:
            return self.render(request, "message.html", 403, title="Read-only",
                               message="This console is read-only ([ui] read_only, or the PostgreSQL backend).")
        return None

    # -- login -----------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        target = _local(request.query_params.get("next"))
        if request.method == "GET":
            return self.render(request, "login.html", target=target)
        form = await request.form()
        if not self.sessions.csrf_ok(request, _text(form.get("csrf"))):
            return self.render(request, "login.html", 403, target=target,
                               error="The form's CSRF token is missing or stale: reload the page.")
        if not self.sessions.needs_login:
            return RedirectResponse(target, status_code=303)
        if not self.sessions.token_ok(_text(form.get("token"))):
            return self.render(request, "login.html", 401, target=target,
                               error="Wrong token: give the server's [server] auth_token.")
        response = RedirectResponse(target, status_code=303)
        self.sessions.log_in(request, response)
        return response

    async def logout(self, request: Request) -> Response:
        form = await request.form()
        if self.sessions.csrf_ok(request, _text(form.get("csrf"))):
            self.sessions.log_out(request)
        return RedirectResponse("/ui/login", status_code=303)

    # -- reading ---------------------------------------------------------------------------------

    async def search(self, request: Request) -> Response:
        if not self.sessions.logged_in(request):
            return self.login_redirect(request)
        # The model and the vector index start loading while the user types (the first hybrid search
        # waited ~0.9 s for them otherwise); once per server, as a client's first MCP request does.
        self.harness.request_warm_up()
        params = request.query_params
        query = params.get("q", "").strip()
        mode = next((m for m in MODES if m == params.get("mode")), None)
        source = params.get("source") or None
        explain = params.get("explain") == "1"
        tag, since, until = (params.get(key, "").strip() for key in ("tag", "since", "until"))
        fragment = request.headers.get("hx-request") == "true"  # htmx swaps the results only
        limit = min(max(plain_int(params.get("limit")) or PAGE_RESULTS, 1), MAX_RESULTS)
        values: dict[str, Any] = {"query": query, "mode": mode or "", "source": source or "", "explain": explain,
                                  "tag": tag, "since": since, "until": until, "limit": limit}
        if not fragment:
            values["sources"] = [s.name for s in (await self.harness.sources()).sources]
        if query:
            try:
                request_model = SearchRequest(query=query, mode=mode, source=source, explain=explain, limit=limit,
                                              filters=search_filters(tag, since, until))
                values["response"] = await self.harness.search(request_model)
                values["best"] = best_scores(values["response"])
                if len(values["response"].results) == limit < MAX_RESULTS:
                    values["more"] = f"{request.url.path}?{_with_limit(request, limit + PAGE_RESULTS)}"
            except (HarnessError, ValidationError) as exc:
                values["error"] = error_message(exc)
        return self.render(request, "results.html" if fragment else "search.html", **values)

    async def document(self, request: Request) -> Response:
        if not self.sessions.logged_in(request):
            return self.login_redirect(request)
        params = request.query_params
        chunk = params.get("chunk", "")
        offset = params.get("offset", "")
        try:
            at_chunk = plain_int(chunk)
            get = GetRequest(id=params.get("id", ""), chunk=at_chunk,
                             offset=plain_int(offset) if at_chunk is None else None,
                             max_chars=PAGE_CHARS)
            doc = await self.harness.get(get)
        except (HarnessError, ValidationError) as exc:
            return self.render(request, "message.html", 404, title="Not found", message=error_message(exc))
        here = get.chunk
        around = here if here is not None else doc.chunks[0].index if doc.chunks else 0
        near = await self.harness.document_headings(doc.id, around, TOC_REACH)
        last = near.first + len(near.headings) - 1
        targets = await self.harness.link_targets(doc.id)
        if doc.content_type == "text/markdown":
            body = render(doc.body, lambda kind, target: targets.get((kind, target)), sections_of(doc), here)
        else:
            body = render_plain(doc.body, sections_of(doc), here)
        return self.render(request, "document.html", doc=doc, here=here, body=body,
                           toc=contents_of(near.first, near.headings, here),
                           earlier=near.first - 1 if near.first > 0 else None,
                           later=last + 1 if last + 1 < near.count else None,
                           related=await self._related(doc.id), history=await self._history(doc),
                           writable=self.writable(doc.source))

    async def _related(self, doc_id: str) -> RelatedResponse | None:
        try:
            return await self.harness.related(RelatedRequest(id=doc_id, limit=RELATED))
        except HarnessError:
            return None

    async def _history(self, doc: DocumentOut) -> list[RecentChange]:
        """The document's changes among the newest ``HISTORY_SCAN`` of its source, newest first."""
        changes = (await self.harness.recent(RecentRequest(source=doc.source, limit=HISTORY_SCAN))).changes
        return [change for change in changes if change.id == doc.id]

    def writable(self, source: str | None = None) -> bool:
        """Whether the console may write notes (in ``source``, when given)."""
        labels = self.harness.writable_sources()
        return not self.read_only and bool(labels) and (source is None or source in labels)

def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _local(target: str | None) -> str:
    """A redirect target inside the console only (no open redirect to another site)."""
    if target and target.startswith("/ui/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui/search"


def _with_limit(request: Request, limit: int) -> str:
    """The request's query string with ``limit`` set (the other fields kept)."""
    from urllib.parse import urlencode

    kept = [(k, v) for k, v in request.query_params.multi_items() if k != "limit"]
    return urlencode([*kept, ("limit", str(min(limit, MAX_RESULTS)))])


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="/")


def search_filters(tag: str, since: str, until: str) -> SearchFilters | None:
    """The search form's tag and date fields as the ``search`` tool's filters (``tags``, ``since``,
    ``until``, where a bare date counts the whole day, as in the tool). ``BadRequest`` for a bad date."""
    for label, value in (("since", since), ("until", until)):
        try:
            if value:
                timestamps.parse(value)
        except ValueError as exc:
            raise BadRequest(f"{label}: {exc}") from None
    tags = [t.strip() for t in tag.split(",") if t.strip()]
    if not (tags or since or until):
        return None
    return SearchFilters(tags=tags or None, since=since or None, until=until or None)


def best_scores(response: SearchResponse) -> dict[str, float]:
    """The best keyword and semantic score among the results: the explain chart draws each mode's bar
    against its own mode's best (a BM25 score and a cosine are not on one scale)."""
    explained = [hit.explain for hit in response.results if hit.explain is not None]
    return {mode: max([getattr(e, f"{mode}_score") or 0.0 for e in explained] + [0.0]) or 1.0
            for mode in ("keyword", "semantic")}


def error_message(exc: Exception) -> str:
    if isinstance(exc, HarnessError):
        return str(exc.to_dict()["error"]["message"])
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return str(exc)


__all__ = ["Pages", "error_message"]
