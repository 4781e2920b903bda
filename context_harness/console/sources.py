"""The console's sources dashboard (``/ui/sources``): the knowledge base in figures, then per source
its status, how it is kept fresh, documents, chunks, the size of its text, embedding progress and
how its last sync ended and when (a failed sync shows its own time beside "error", and when the
last successful one was), with a *Sync* button; below, each source's last whole syncs (the sync
history the workspace keeps: when each ended, ok or the error, its counts and how long it took) and
its newest changes (``recent``). Sources whose folders overlap (``sources``' ``overlaps``: the same
files indexed twice) are named at the top, each with the fix.

The figures and the table follow the sources through server-sent events
(``/ui/sources/events``: ``sources`` with the rows, ``overview`` with the figures, each sent when it
changed); the sizes (which read every document's length) and the files' sizes on disk are read
again only when a source's documents or sync changed, not as its chunks get embedded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from context_harness.console.pages import Pages, error_message
from context_harness.core.face import SourceDetail
from context_harness.errors import HarnessError
from context_harness.models import RecentChange, RecentRequest, SourceOut, SourcesResponse

EVENT_SECONDS = 1.0  # how often the sources stream looks for a change
EVENT_TICKS = 600  # then it ends; the browser's EventSource reconnects
RECENT = 8  # changes listed per source
SYNCS = 10  # syncs of the sync history listed per source (the workspace keeps 50)
EMBEDDING_NOTES = (" awaiting embeddings (", " being embedded now")  # said in the embeddings column instead


class SourcePages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.harness = pages.harness

    def routes(self) -> list[BaseRoute]:
        return [Route("/sources", self.dashboard, methods=["GET"]),
                Route("/sources/events", self.events, methods=["GET"]),
                Route("/sources/sync", self.sync, methods=["POST"]),
                Route("/sources/embed", self.embed, methods=["POST"])]

    async def dashboard(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        listing = await self.harness.sources()
        stats = await self.harness.stats()
        recent = {s.name: await self._recent(s.name) for s in listing.sources}
        syncs = {s.name: await self.harness.sync_history(s.name, SYNCS) for s in listing.sources}
        values = rows(listing, await self.harness.source_details(), self.harness.embedding_now(),
                      (stats.db_bytes, stats.index_bytes))
        return self.pages.render(request, "sources.html", **values, recent=recent, recent_most=RECENT,
                                 syncs=syncs, syncs_most=SYNCS, took=took_text,
                                 done=request.query_params.get("done", ""))

    async def _recent(self, label: str) -> list[RecentChange]:
        return (await self.harness.recent(RecentRequest(source=label, limit=RECENT))).changes

    async def events(self, request: Request) -> Response:
        """Server-sent events: the sources table's rows (event ``sources``) each time they change,
        so a sync's progress shows while it runs; a comment line on the ticks between."""
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        csrf = self.pages.sessions.csrf(self.pages.sessions.session_id(request) or "")
        templates = {event: self.pages.env.get_template(name)
                     for event, name in (("sources", "source_rows.html"), ("overview", "source_overview.html"))}

        async def stream() -> AsyncIterator[str]:
            measured: list[tuple[Any, ...]] | None = None
            details: dict[str, SourceDetail] = {}
            disk = (0, 0)
            last = dict.fromkeys(templates, "")
            for _ in range(EVENT_TICKS):
                listing = await self.harness.sources()
                if (key := documents_key(listing)) != measured:
                    stats = await self.harness.stats()
                    measured, details, disk = key, await self.harness.source_details(), (stats.db_bytes,
                                                                                          stats.index_bytes)
                values = rows(listing, details, self.harness.embedding_now(), disk)
                sent = False
                for event, template in templates.items():
                    html = template.render(**values, csrf=csrf, read_only=self.pages.read_only)
                    if html != last[event]:
                        last[event], sent = html, True
                        yield f"event: {event}\n" + "".join(f"data: {line}\n" for line in html.splitlines()) + "\n"
                if not sent:
                    yield ": unchanged\n\n"
                await anyio.sleep(EVENT_SECONDS)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})

    async def sync(self, request: Request) -> Response:
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        label = (await request.form()).get("source")
        label = label if isinstance(label, str) and label else "all"
        try:
            await self.harness.sync(label)
        except HarnessError as exc:
            return self.pages.render(request, "message.html", 400, title="Sync failed", message=error_message(exc))
        return RedirectResponse(f"/ui/sources?done={_quote('synced ' + label)}", status_code=303)

    async def embed(self, request: Request) -> Response:
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        try:
            summary = await self.harness.embed()
        except HarnessError as exc:
            return self.pages.render(request, "message.html", 400, title="Embedding failed",
                                     message=error_message(exc))
        done = f"embedded {summary.embedded} chunk{'s' if summary.embedded != 1 else ''}"
        return RedirectResponse(f"/ui/sources?done={_quote(done)}", status_code=303)


def rows(listing: SourcesResponse, details: dict[str, SourceDetail], embedding_now: bool,
         disk: tuple[int, int]) -> dict[str, Any]:
    """What ``source_rows.html`` and ``source_overview.html`` render: the listing and its totals, each
    source's ``SourceDetail``, the database's and keyword index's bytes on disk, whether this process
    is embedding now, whether semantic search is on, and each source's notes without the embedding
    sentence (the embeddings column says it)."""
    totals = {"documents": sum(s.document_count for s in listing.sources),
              "chunks": sum(s.chunk_count for s in listing.sources), "sources": len(listing.sources)}
    return {"listing": listing, "details": details, "embedding_now": embedding_now, "totals": totals, "disk": disk,
            "semantic": listing.embedding.get("provider") != "disabled",
            "notes": {s.name: other_notes(s) for s in listing.sources}, "size": size_text}


def documents_key(listing: SourcesResponse) -> list[tuple[Any, ...]]:
    """What ``source_details`` depends on: each source's documents and syncs (not its embeddings)."""
    return [(s.name, s.document_count, s.chunk_count, s.last_sync, s.syncing, s.last_outcome, s.sync_passes, s.status)
            for s in listing.sources]


def other_notes(source: SourceOut) -> str:
    """The source's notes without the part about pending embeddings."""
    parts = [part for part in (source.notes or "").split("; ") if not any(n in part for n in EMBEDDING_NOTES)]
    return "; ".join(part for part in parts if part)


def size_text(size: int | None) -> str:
    """Bytes for people: 930 bytes, 12.4 kB, 3.1 MB (powers of 1000, as ``ctx stats``)."""
    value = float(size or 0)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{int(value):,} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def took_text(seconds: float) -> str:
    """How long a sync took, for people: under 0.1 s, 0.4 s, 12 s, 3 min 5 s, 2 h 10 min."""
    if seconds < 0.05:
        return "under 0.1 s"
    if seconds < 9.95:  # what rounds to 10.0 reads "10 s"
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="/")


__all__ = ["SourcePages", "documents_key", "other_notes", "rows", "size_text", "took_text"]
