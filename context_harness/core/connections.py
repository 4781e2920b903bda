"""``Connections``: the Harness's calls about how documents connect: ``recent`` (the change log) and
``related`` (links both ways, resolved against the index, and nearest neighbours by meaning), and
``link_graph``, the documents and links the console's graph draws.

Links are stored at sync time (``store/connections.py``); here they are resolved: a Markdown link
names a path from the source's root (``target`` or ``target.md``) in the linking document's source;
a wikilink names a document by file stem, path, the end of its path (``[[garden-shed/permit]]``,
as Obsidian resolves it) or title (case-insensitive), in the same source first, then in any (the first
by source and path); a reST ``:ref:`` names the document that defines its label (``.. _label:``), in
the same source first; an e-mail's ``reply`` names the message it answers (its Message-ID), in any source
(the same source first). ``Harness`` inherits these calls.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from context_harness.common import timestamps
from context_harness.common.links import markdown_paths, partial_path, wikilink_names
from context_harness.errors import BadRequest, NotFound
from context_harness.models import (
    RecentChange,
    RecentRequest,
    RecentResponse,
    RelatedItem,
    RelatedRequest,
    RelatedResponse,
    UnresolvedLink,
)
from context_harness.store.backend import DocumentStorage, VectorStorage

T = TypeVar("T")
_DURATION = re.compile(r"^\s*(\d+)\s*(m|min|h|d|w)\s*$", re.IGNORECASE)
_UNITS = {"m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}
Named = dict[str, list[tuple[str, str, str]]]  # name -> [(doc_id, source, source_id)]
# A link kind that names what a row of another kind defines: a reST :ref: its label, a reply the message.
REFERS = {"ref": "label", "reply": "message"}
DEFINES = frozenset(REFERS.values())
GRAPH_MOST = 300  # documents the console's graph of the whole knowledge base draws at most


def since_bound(since: str | None, now: dt.datetime | None = None) -> str | None:
    """The stored-form lower bound for ``since``: an ISO date/time or a duration back from now."""
    if since is None or not since.strip():
        return None
    match = _DURATION.match(since)
    if match:
        delta = dt.timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})
        return timestamps.since_text((now or dt.datetime.now(timestamps.UTC)) - delta)
    try:
        return timestamps.since_text(timestamps.parse(since))
    except ValueError as exc:
        raise BadRequest(f"since: {exc}, or a duration such as 30m, 12h, 7d or 2w") from None


def _pick(candidates: list[tuple[str, str, str]], source: str) -> str | None:
    """The document a wikilink from ``source`` means among same-named ones: same source first."""
    if not candidates:
        return None
    return min(candidates, key=lambda c: (c[1] != source, c[1], c[2]))[0]


def _by_name(rows: list[tuple[str, str, str, str]]) -> Named:
    out: Named = {}
    for name, doc_id, source, source_id in rows:
        out.setdefault(name, []).append((doc_id, source, source_id))
    return out


def _lookups(keys: list[str]) -> list[str]:
    """The names to look up for wiki ``keys``: each, and for a partial path its last part (the file
    stem every document is stored under; ``_named`` keeps those whose path ends so)."""
    return sorted({*keys, *(k.rstrip("/").rsplit("/", 1)[-1] for k in keys if "/" in k)})


def _named(key: str, named: Named) -> list[tuple[str, str, str]]:
    """The documents the wiki ``key`` may mean: by a stored name, else by the end of their path."""
    if key in named:
        return named[key]
    stem = key.rstrip("/").rsplit("/", 1)[-1]
    return [c for c in named.get(stem, []) if partial_path(key, c[2])] if "/" in key else []


class _Doc(NamedTuple):
    """What resolving links needs of a document: never its body (a 50 MB one took 0.4 s to read)."""

    id: str
    source: str
    source_id: str
    title: str | None


def _markdown_keys(source_id: str) -> set[str]:
    """The Markdown link keys that name the document at ``source_id``."""
    return {source_id, source_id[:-3]} if source_id.lower().endswith(".md") else {source_id}


class Connections:
    """Mixed into ``Harness`` (which provides the store, the vectors and ``semantic``)."""

    if TYPE_CHECKING:
        store: DocumentStorage | None
        vectors: VectorStorage | None

        def semantic(self) -> Any: ...

        def embedding_now(self) -> bool: ...

        async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def recent(self, request: RecentRequest) -> RecentResponse:
        return await self.run_blocking(self.recent_sync, request)

    def recent_sync(self, request: RecentRequest) -> RecentResponse:
        """What changed, newest first: documents added, updated or deleted (the newest 10,000 kept)."""
        assert self.store is not None
        rows = self.store.changes(since_bound(request.since), request.source, request.limit)
        return RecentResponse(changes=[RecentChange(id=r[0], source=r[1], source_id=r[2], title=r[3], change=r[4],
                                                    at=r[5]) for r in rows])

    async def related(self, request: RelatedRequest) -> RelatedResponse:
        return await self.run_blocking(self.related_sync, request)

    def related_sync(self, request: RelatedRequest) -> RelatedResponse:
        """The documents ``request.id`` links to, those linking to it, and its nearest neighbours."""
        assert self.store is not None
        doc_id = request.id.strip().lower()
        row = self._doc(doc_id)
        if row is None:
            raise NotFound(f"no document with id {doc_id!r}; use an id returned by search or recent")
        targets, unresolved = self._links_to(row)
        sources = self._linked_from(row)
        similar, note = self._similar(row, request.limit)
        return RelatedResponse(
            id=row.id, title=row.title, links_to=self._items(targets[:request.limit], "links_to"),
            linked_from=self._items(sources[:request.limit], "linked_from"),
            similar=self._items(similar, "similar"), unresolved=unresolved, note=note)

    async def link_targets(self, doc_id: str) -> dict[tuple[str, str], str]:
        """Where the links of ``doc_id`` lead: ``(kind, target as written)`` -> the document's id, for each
        link that resolves (as ``related`` resolves them; the console points links at those pages)."""

        def resolve() -> dict[tuple[str, str], str]:
            assert self.store is not None
            row = self._doc(doc_id)
            return {} if row is None else {(kind, target): doc for kind, target, doc in self._resolved(row) if doc}

        return await self.run_blocking(resolve)

    async def link_graph(self, doc_id: str | None = None, most: int = GRAPH_MOST) -> dict[str, Any]:
        """The documents and the links between them, as the console's graph draws them: around
        ``doc_id`` (it, what it links to and what links to it), or the whole knowledge base when it has
        at most ``most`` documents. ``{"nodes": [{id, title, source, source_id, here}], "edges":
        [{from, to}], "note": why nodes are missing, or None}``."""
        return await self.run_blocking(self._link_graph, doc_id, most)

    def _link_graph(self, doc_id: str | None, most: int) -> dict[str, Any]:
        assert self.store is not None
        edges: set[tuple[str, str]] = set()
        note = None
        if doc_id is not None:
            row = self._doc(doc_id.strip().lower())
            if row is None:
                raise NotFound(f"no document with id {doc_id!r}; use an id returned by search or recent")
            edges |= {(row.id, doc) for _, _, doc in self._resolved(row) if doc and doc != row.id}
            edges |= {(doc, row.id) for doc, _, _ in self._linked_from(row)}
            ids = {row.id, *(d for edge in edges for d in edge)}
        else:
            total = self.store.counts()[0]
            if total > most:
                return {"nodes": [], "edges": [], "note": f"the knowledge base has {total:,} documents, more than "
                        f"the {most} the whole graph draws: open a document's neighbourhood instead"}
            ids = {entry[0] for entry in self.store.listing(None, most)}
            for doc in sorted(ids):
                found = self._doc(doc)
                if found is not None:
                    edges |= {(doc, target) for _, _, target in self._resolved(found) if target and target != doc}
        rows = self.store.summaries(sorted(ids))
        nodes = [{"id": d, "title": rows[d].title, "source": rows[d].source, "source_id": rows[d].source_id,
                  "here": d == (doc_id or "").strip().lower()} for d in sorted(rows)]
        return {"nodes": nodes, "edges": [{"from": a, "to": b} for a, b in sorted(edges) if a in rows and b in rows],
                "note": note}

    def _doc(self, doc_id: str) -> _Doc | None:
        assert self.store is not None
        found = self.store.summaries([doc_id]).get(doc_id)
        return None if found is None else _Doc(doc_id, found.source, found.source_id, found.title)

    def _resolved(self, row: _Doc) -> list[tuple[str, str, str | None]]:
        """``(kind, target as written, document id or None)`` of each link ``row`` makes."""
        assert self.store is not None
        links = self.store.links_from(row.id)
        at = self.store.at_paths(row.source, [p for kind, _, key in links if kind == "markdown"
                                              for p in markdown_paths(key)])
        named = _by_name(self.store.named(_lookups([key for kind, _, key in links if kind == "wiki"])))
        labels = self._labelled([key for kind, _, key in links if kind in REFERS])
        return [(kind, target, next((at[p] for p in markdown_paths(key) if p in at), None) if kind == "markdown"
                 else _pick(labels.get(key, []), row.source) if kind in REFERS else row.id if kind in DEFINES
                 else _pick(_named(key, named), row.source)) for kind, target, key in links]

    def _labelled(self, keys: list[str]) -> Named:
        """The documents defining each key (a reST ``label`` row: ``.. _name:``; an e-mail's ``message`` row:
        its Message-ID), as ``_pick`` takes them."""
        assert self.store is not None
        out: Named = {}
        for doc_id, source, kind, _, key in self.store.links_to(sorted(set(keys))):
            if kind in DEFINES:
                out.setdefault(key, []).append((doc_id, source, doc_id))
        return out

    def _links_to(self, row: _Doc) -> tuple[list[tuple[str, str | None, float | None]], list[UnresolvedLink]]:
        found: dict[str, tuple[str, str | None, float | None]] = {}
        unresolved = []
        for kind, target, doc in self._resolved(row):
            if doc is None:
                if kind in ("markdown", "wiki"):  # a reST :ref: to a label not indexed is not listed
                    unresolved.append(UnresolvedLink(kind=kind, target=target))  # type: ignore[arg-type]
            elif doc != row.id and doc not in found:
                found[doc] = (doc, target, None)
        return list(found.values()), unresolved

    def _linked_from(self, row: _Doc) -> list[tuple[str, str | None, float | None]]:
        assert self.store is not None
        names, paths = wikilink_names(row.source_id, row.title), _markdown_keys(row.source_id)
        labels = {key for kind, _, key in self.store.links_from(row.id) if kind in DEFINES}
        hits = self.store.links_to(sorted(names | paths | labels))
        named = _by_name(self.store.named(_lookups(sorted({h[4] for h in hits if h[2] == "wiki"}))))
        found: dict[str, tuple[str, str | None, float | None]] = {}
        for doc_id, source, kind, target, key in hits:
            if kind in REFERS or kind in DEFINES:
                linked = kind in REFERS and key in labels
            elif kind == "markdown":
                linked = source == row.source and key in paths
            else:
                linked = key in names and _pick(_named(key, named), source) == row.id
            if linked and doc_id != row.id and doc_id not in found:
                found[doc_id] = (doc_id, target, None)
        return sorted(found.values())

    def _similar(self, row: _Doc, limit: int) -> tuple[list[tuple[str, str | None, float | None]], str | None]:
        """Nearest documents to the mean of ``row``'s chunk vectors (cosine), best first."""
        assert self.store is not None
        if self.vectors is None:
            return [], "similar documents need embeddings, which are disabled ([embedding] provider)"
        import numpy as np

        stored = self.vectors.vectors_of([c.content_hash for c in self.store.chunks(row.id)])
        if not stored:
            if self.embedding_now():  # this process (a server) is embedding: say how far it is
                stats = self.vectors.stats()
                total = stats.embedded_chunks + stats.pending_chunks
                return [], (f"embedding in progress: {stats.embedded_chunks:,} of {total:,} chunks; similar "
                            "documents will appear as this document's chunks are computed")
            return [], "this document's embeddings are not computed yet (ctx sync computes them)"
        mean = np.mean(np.stack([np.asarray(v, dtype=np.float32) for v in stored.values()]), axis=0)
        norm = float(np.linalg.norm(mean))
        if norm == 0.0:
            return [], "this document's embeddings are empty"
        hits = self.semantic().index().top_documents(mean / norm, limit + 1, None)
        near: list[tuple[str, str | None, float | None]] = [
            (doc, None, round(float(score), 4)) for doc, _, score in hits if doc != row.id]
        return near[:limit], None

    def _items(self, found: list[tuple[str, str | None, float | None]], why: str) -> list[RelatedItem]:
        assert self.store is not None
        rows = self.store.summaries([f[0] for f in found])
        return [RelatedItem(id=doc, title=rows[doc].title, source=rows[doc].source, source_id=rows[doc].source_id,
                            why=why, link=link, score=score)  # type: ignore[arg-type]
                for doc, link, score in found if doc in rows]
