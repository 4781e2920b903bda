"""``Harness``: the one core service. MCP, REST and the CLI call it and render what it returns.

It knows nothing of MCP, HTTP or the command line. Open it with ``async with Harness.open(config)``
(``extensions``: agents, tools and connectors from code or entry points, see ``extensions``);
blocking work (SQLite, Tantivy, file reads) runs in worker threads through ``run_blocking``.

Documents: ``search``, ``get``, ``sources``, ``stats``, ``sync``, ``embed``; the live index's writes
``sync_paths`` and ``embed_new``. Tools and agents (the ``Catalog``, built on first use): ``tools``,
``call_tool``, ``agents`` ... (``Offering``). While serving: ``async with harness.serving()`` runs the
background services (sync on start, the live index, reloads, warm-up); ``subscribe`` tells a rim what
tools, prompts or resources changed, ``subscribe_documents`` which documents a sync changed. Writes
take turns with other threads and processes on the same workspace: ``async with
harness.writing(operation)`` (``index_lock``, ``embed_lock``; see ``store/writer_lock.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio

from context_harness import __version__
from context_harness.config import Config
from context_harness.connectors.base import ERROR_SKIP_REASONS, Connector, runnable, settings_of
from context_harness.core.activity import NEVER_SYNCED, Activity, error_skips, indexing_notice
from context_harness.core.authoring import Authoring
from context_harness.core.connections import Connections
from context_harness.core.offering import Offering
from context_harness.core.reports import Reports
from context_harness.core.running import Running
from context_harness.core.writeback import WriteBack
from context_harness.embedding import priority as embedding_priority
from context_harness.embedding.base import Embedder, EmbedderIdentity, Warming
from context_harness.errors import BadRequest, HarnessError, NotConfigured, embeddings_disabled
from context_harness.extensions import Extensions, collect_extensions
from context_harness.models import (
    MAX_GET_CHARS,
    CheckReport,
    DocumentEntry,
    DocumentListing,
    DocumentOut,
    EmbedSummary,
    GetRequest,
    MigrationReport,
    SearchRequest,
    SearchResponse,
    SyncReport,
    SyncSummary,
)
from context_harness.registries.apply import apply as apply_registries
from context_harness.search.engine import SearchEngine, SemanticBackend
from context_harness.store.backend import Backend, DocumentStorage, KeywordRanking, VectorStorage, flush_index
from context_harness.store.faults import fault_of, is_panic
from context_harness.store.opening import migrate_to_postgres, open_backend
from context_harness.store.writer_lock import WAIT_SECONDS, WriterLock

if TYPE_CHECKING:  # the catalog (tools, agents, Lua) and the sync are imported where they are first used, so a
    # knowledge base opened to search (`ctx search`) imports neither (issue 50)
    from context_harness.core.catalog import Catalog, Listener
    from context_harness.core.services import Services
    from context_harness.ingest.reembed import VectorSets  # what a model switch needs of the store
    from context_harness.ingest.sync import DocumentChanges, ProgressFn
    from context_harness.search.windows import Headings
    from context_harness.store.vectors import VectorStore  # what ``embed_pending`` is typed for

log = logging.getLogger(__name__)

REBUILD_PROBE = "context-harness checks that the embedder works before a rebuild"

T = TypeVar("T")
DocumentListener = Callable[["DocumentChanges"], None]
"""Called (on the event loop) with the ids of the documents a committed sync added, updated, deleted."""


class Harness(Reports, Offering, WriteBack, Connections, Authoring, Running):
    def __init__(self, config: Config, extensions: Extensions | None = None,
                 limiter: anyio.CapacityLimiter | None = None) -> None:
        self.config = apply_registries(config)  # registry tools and agents, and every registry script's grant
        self.extensions = extensions or Extensions()
        self.connectors: list[Connector] = self.extensions.connector_kinds().build(config)
        self.backend: Backend | None = None
        self.store: DocumentStorage | None = None
        self.index: KeywordRanking | None = None
        self.vectors: VectorStorage | None = None
        self.engine: SearchEngine | None = None
        self._semantic: SemanticBackend | None = None
        self._semantic_lock = threading.Lock()
        self._limiter = limiter or anyio.CapacityLimiter(4)  # shared by the workspaces of one server
        self._sync_lock = anyio.Lock()
        self._catalog: Catalog | None = None
        self._catalog_lock = threading.Lock()
        self._services: Services | None = None
        # One writer per workspace across processes (see store/writer_lock.py): syncs and other writes
        # of documents and the keyword index take ``index_lock``; embedding runs take ``embed_lock``, so
        # a long embed never holds up a sync.
        data = config.db.path.parent
        self.index_lock = WriterLock(data / "writer.lock", "the documents and keyword index")
        self.embed_lock = WriterLock(data / "embedder.lock", "the embeddings")
        self._background_embed = anyio.Lock()
        self._embed_failure: str | None = None
        self._document_listeners: list[DocumentListener] = []
        self.activity = Activity(self._remember_sync)  # outcome and sync history (core/reports.py)

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def open(cls, config: Config, extensions: Extensions | None = None,
                   limiter: anyio.CapacityLimiter | None = None) -> AsyncIterator[Harness]:
        """The knowledge base of ``config``, open for the block; ``limiter``: the worker threads it
        shares with others (the workspaces of one server, ``core/workspaces.py``), else its own four."""
        harness = cls(config, extensions, limiter)
        await harness.run_blocking(harness.open_stores)
        try:
            yield harness
        finally:
            await harness.run_blocking(harness.close)

    @classmethod
    def installed(cls, config: Config) -> AbstractAsyncContextManager[Harness]:
        """``open`` with the extensions installed packages declare (entry points), as ``ctx`` opens it."""
        return cls.open(config, collect_extensions())

    @asynccontextmanager
    async def serving(self, reload_interval: float | None = None) -> AsyncIterator[Services]:
        """Run the services of a serving knowledge base (sync on start, the live index, reloads of
        tools, config and agents, warm-up on request) until the block ends. Builds the catalog first, so a Lua tool
        or agent that cannot load fails here, at start, with its ``ConfigError``. ``reload_interval``: seconds
        between checks for changed files (default ``services.RELOAD_INTERVAL``)."""
        from context_harness.core.services import RELOAD_INTERVAL, Services

        await self.run_blocking(lambda: self.catalog)
        async with anyio.create_task_group() as tg:
            services = Services(self, tg, RELOAD_INTERVAL if reload_interval is None else reload_interval)
            self._services = services
            services.start()
            try:
                yield services
            finally:
                self._services = None
                services.stop()
                tg.cancel_scope.cancel()

    @asynccontextmanager
    async def writing(self, operation: str, *, embeddings: bool = False,
                      wait: float = WAIT_SECONDS) -> AsyncIterator[None]:
        """Hold the workspace's writer lock for the block: ``index_lock``, or ``embed_lock`` for
        ``embeddings``. Waits (cancellably) while another thread or process writes, logging once whom
        for; ``StoreBusy`` after ``wait`` seconds. Not reentrant: take it once around a whole write.
        Blocking code holds the same locks with ``harness.index_lock.hold(operation)``."""
        lock = self.embed_lock if embeddings else self.index_lock
        for pause in lock.attempts(operation, wait):
            await anyio.sleep(pause)
        try:
            yield
        finally:
            lock.release()

    def request_warm_up(self) -> None:
        """Ask the serving services to load the vector index and the model soon (once); a no-op
        when not serving. The rims call it on a client's first request."""
        if self._services is not None:
            self._services.warm_up_soon()

    def open_stores(self) -> None:
        """Open the storage backend the config selects (``store/opening.py``) and the search engine over it."""
        self.backend = open_backend(self.config, self.index_lock)
        if self.backend.locks is not None:  # the database's own (replicas on several hosts take turns)
            self.index_lock, self.embed_lock = self.backend.locks
        self.store, self.index, self.vectors = self.backend.documents, self.backend.keyword, self.backend.vectors
        self.engine = SearchEngine(self.config, self.store, self.index,
                                   self.semantic if self.vectors is not None else None)
        self._hold_roots()

    def semantic(self) -> SemanticBackend:
        """The embedder and vector index, created on first use (the model loads on first embed)."""
        with self._semantic_lock:
            if self._semantic is None:
                from context_harness.embedding import build_embedder

                assert self.vectors is not None
                self._semantic = SemanticBackend(self.vectors, build_embedder(self.config.embedding),
                                                 self._embedder_for_set)
            return self._semantic

    def _embedder_for_set(self, identity: EmbedderIdentity) -> Embedder | None:
        """The embedder of a vector set the config no longer selects (during a model switch)."""
        from context_harness.embedding.providers import embedder_for

        assert self.vectors is not None
        return embedder_for(self.config.embedding, identity,
                            cast("VectorSets", self.vectors).embedder_config(identity))

    def warm_up(self) -> bool:
        """Load what a first search would otherwise wait for (~1.5 s with the bundled model): the
        vector index and the query embedder, when searches default to using them (vectors exist and
        ``retrieval.default_mode`` is not ``keyword``). Blocking; True when it loaded them."""
        if self.vectors is None or self.config.retrieval.default_mode == "keyword":
            return False
        backend = self.semantic()
        if not backend.has_vectors():
            return False
        embedder = backend.embedder_for(backend.index().identity)  # during a model switch, the stored vectors'
        if isinstance(embedder, Warming):
            embedder.warm()
        return True

    def close(self) -> None:
        self._release_roots()
        if self.backend is not None:
            self.backend.close()

    async def run_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn`` in a worker thread; a fault of the workspace's files becomes a ``StorageFault``."""
        try:
            return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), limiter=self._limiter)
        except BaseException as exc:  # a Rust panic in Tantivy is a BaseException
            fault = fault_of(exc, self.config.db.path.parent) if isinstance(exc, Exception) or is_panic(exc) else None
            if fault is None or fault is exc:
                raise
            raise fault from exc

    @property
    def version(self) -> str:
        return __version__

    # -- tools and agents ----------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """The tools and agents, composed on first use (blocking: loads Lua scripts and agent files)."""
        with self._catalog_lock:
            if self._catalog is None:
                from context_harness.core.catalog import Catalog

                self._catalog = Catalog(self.config, self, agents=[a for a, _ in self.extensions.agents],
                                        tools=[t for t, _ in self.extensions.tools])
            return self._catalog

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(kind)`` when tools, prompts, resources or the instructions change."""
        return self.catalog.subscribe(listener)

    def subscribe_documents(self, listener: DocumentListener) -> Callable[[], None]:
        """Call ``listener(changes)`` after every committed sync in this process that changed documents
        (live updates, interval syncs, sync on start, ``sync``); returns the unsubscribe function."""
        self._document_listeners.append(listener)
        return lambda: self._document_listeners.remove(listener) if listener in self._document_listeners else None

    def _documents_changed(self, changes: DocumentChanges) -> None:
        if not changes:
            return
        for listener in list(self._document_listeners):
            try:
                listener(changes)
            except Exception:
                log.exception("document listener failed")

    # -- search ------------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> SearchResponse:
        return await self.run_blocking(self.search_sync, request)

    def search_sync(self, request: SearchRequest) -> SearchResponse:
        assert self.engine is not None
        response = self.engine.search(request)
        self._say_if_incomplete(response)
        if request.max_tokens is not None:  # the whole answer, its text block too (search/budget.py)
            from context_harness.search import budget
            from context_harness.tools.render import render_search

            response = budget.fit_search(response, request.max_tokens, budget.answer_tokens(render_search))
        return response

    def _say_if_incomplete(self, response: SearchResponse) -> None:
        """Add a ``notice`` when the answer may miss documents: while the first sync of some sources
        runs in this process (with how far it is: ``indexing``), or, with no results, when the
        knowledge base was never synced at all."""
        response.indexing = self.activity.first_syncs()
        if response.indexing is not None:
            response.notice = indexing_notice(response.indexing)
        elif not response.results and self.connectors:
            assert self.store is not None
            if not any(last_sync for last_sync, _ in self.store.source_rows().values()):
                response.notice = NEVER_SYNCED

    # -- documents ---------------------------------------------------------------------------

    async def get(self, request: GetRequest | str) -> DocumentOut:
        """A document, or the window of it ``request`` asks for (a bare id: the default window)."""
        if isinstance(request, str):
            request = GetRequest(id=request)
        return await self.run_blocking(self.get_sync, request.id, request)

    def get_sync(self, doc_id: str, request: GetRequest | None = None) -> DocumentOut:
        """Without ``request`` (Lua's and agents' ``context.get``: scripts) the whole document, with one
        the window it names (``max_chars`` default ``[server] get_max_chars``; cut to fit ``max_tokens``:
        ``search.budget``); at most ``MAX_GET_CHARS`` characters either way (``windows.read``)."""
        from context_harness.search import budget, windows
        from context_harness.tools.render import render_document

        assert self.store is not None
        default = MAX_GET_CHARS if request is None else self.config.server.get_max_chars
        doc = windows.read(self.store, doc_id.strip().lower(), request, default, self.config.chunking.overlap_tokens)
        if request is None or request.max_tokens is None:
            return doc
        return budget.fit_document(doc, request.max_tokens, budget.answer_tokens(render_document), request.chunk)

    async def document_headings(self, doc_id: str, around: int, reach: int) -> Headings:
        """The headings of the chunks near chunk ``around`` (the console's table of contents)."""
        from context_harness.search import windows

        assert self.store is not None
        return await self.run_blocking(windows.headings_near, self.store, doc_id.strip().lower(), around, reach)

    async def document_listing(self, cursor: str | None = None, limit: int = 100) -> DocumentListing:
        return await self.run_blocking(self.document_listing_sync, cursor, limit)

    def document_listing_sync(self, cursor: str | None = None, limit: int = 100) -> DocumentListing:
        """One page of the documents, ordered by id (what MCP ``resources/list`` shows after the agent
        catalog); ``cursor`` is the ``next_cursor`` of the previous page."""
        assert self.store is not None
        if limit < 1:
            raise BadRequest("limit must be at least 1")
        rows = self.store.listing(cursor, limit + 1)
        entries = [DocumentEntry(id=r[0], title=r[1], source=r[2], updated_at=r[3]) for r in rows[:limit]]
        return DocumentListing(documents=entries, next_cursor=entries[-1].id if len(rows) > limit else None)

    async def check(self, repair: bool = False) -> CheckReport:
        """``ctx check``: whether SQLite, the keyword index and the vectors agree (``ingest/check.py``);
        ``repair`` fixes what it can, holding the workspace's writer locks."""
        if not repair:
            return await self.run_blocking(self._check_blocking, False)
        async with self._sync_lock, self.writing("check --repair"), self.writing("check --repair", embeddings=True):
            return await self.run_blocking(self._check_blocking, True)

    def _check_blocking(self, repair: bool) -> CheckReport:
        from context_harness.ingest.check import check as check_store

        assert self.store is not None and self.index is not None
        problems = check_store(self.store, self.index, self.vectors, self.config.chunking, repair)
        if repair and self._semantic is not None:
            self._semantic.mark_stale()
        documents, chunks = self.store.counts()
        return CheckReport(consistent=all(p.repaired for p in problems), documents=documents, chunks=chunks,
                           vectors=self.vectors.count() if self.vectors is not None else 0, problems=problems)

    async def migrate_to_postgres(self, url: str) -> MigrationReport:
        """``ctx db migrate --to postgres``: copy this embedded workspace into the empty PostgreSQL
        database at ``url`` (``store/opening.py``), holding the workspace's writer locks meanwhile."""
        assert self.backend is not None
        async with self._sync_lock, self.writing("db migrate"), self.writing("db migrate", embeddings=True):
            return await self.run_blocking(migrate_to_postgres, self.backend, url, self.config)

    def embedding_status(self) -> dict[str, Any]:
        """Embedded and pending chunks, the embedder the config selects and the one the stored vectors
        were made by, and whether they differ (``ingest/embed.py``)."""
        from context_harness.ingest.embed import embedding_status

        return embedding_status(self.config.embedding.provider, cast("VectorStore | None", self.vectors),
                                lambda: self.semantic().embedder.identity.key)

    # -- sync --------------------------------------------------------------------------------

    def reconfigured_connectors(self, config: Config) -> list[Connector]:
        """Take the settings of ``config`` (a changed config file) for the configured connectors
        whose settings differ; returns those connectors, made anew. Connectors added to or removed
        from the file are left as they are (a restart takes them), and logged."""
        fresh = {c.label: c for c in self.extensions.connector_kinds().build(apply_registries(config))}
        current = {c.label: c for c in self.connectors}
        if set(fresh) != set(current):
            log.warning("the config adds or removes sources (%s); restart to serve them",
                        ", ".join(sorted(set(fresh) ^ set(current))))
        changed = [c for label, c in fresh.items()
                   if label in current and settings_of(c) != settings_of(current[label])]
        by_label = {c.label: c for c in changed}
        self.connectors = [by_label.get(c.label, c) for c in self.connectors]
        return changed

    def select(self, target: str) -> list[Connector]:
        target = (target or "all").strip()
        if not self.connectors:
            raise NotConfigured(
                "no connectors are configured; add a [connectors.filesystem.NAME] section with a root folder"
            )
        if target == "all":  # passing by those set aside for unset variables (``sources`` says which)
            return [c for c in self.connectors if runnable(c)]
        chosen = [c for c in self.connectors if c.label == target or c.type == target]
        if not chosen:
            known = ", ".join(["all", *sorted({c.type for c in self.connectors}), *(c.label for c in self.connectors)])
            raise BadRequest(f"unknown sync target {target!r}; choose one of: {known}")
        return chosen

    async def sync(self, target: str = "all", *, full: bool = False, dry_run: bool = False,
                   limit: int | None = None, progress: ProgressFn | None = None, embed: bool = True) -> SyncReport:
        """Sync connectors, then (unless ``embed`` is False or embeddings are disabled) embed new chunks."""
        if limit is not None and limit < 1:
            raise BadRequest("--limit must be a positive number")
        from context_harness.ingest.sync import DocumentChanges

        connectors = self.select(target)
        async with self._sync_lock:
            changes = DocumentChanges()
            try:
                if dry_run:  # writes nothing
                    report = await self.run_blocking(self._sync_blocking, connectors, target, full, dry_run, limit,
                                                     progress, changes)
                else:
                    async with self.writing(f"sync {target}"):
                        report = await self.run_blocking(self._sync_blocking, connectors, target, full, dry_run,
                                                         limit, progress, changes)
            finally:
                self._documents_changed(changes)
            if embed and not dry_run and self.vectors is not None:
                self._keyword_ready(progress)
                try:
                    async with self.writing("embed pending", embeddings=True):
                        report.embedding = await self.run_blocking(self._embed_blocking, None, None, progress,
                                                                   False)
                except HarnessError as exc:  # the sync itself stands: say what failed, keep the summary
                    report.embedding_error = exc.to_dict()["error"]
            return report

    async def embed(self, *, limit: int | None = None, batch_size: int | None = None, rebuild: bool = False,
                    progress: ProgressFn | None = None) -> EmbedSummary:
        """Embed pending chunks (``ctx embed pending``), or every chunk anew (``rebuild``)."""
        if self.vectors is None:
            raise embeddings_disabled()
        if limit is not None and limit < 1:
            raise BadRequest("--limit must be a positive number")
        async with self._sync_lock, self.writing("embed rebuild" if rebuild else "embed pending", embeddings=True):
            return await self.run_blocking(self._embed_blocking, limit, batch_size, progress, rebuild)

    def _embed_blocking(self, limit: int | None, batch_size: int | None, progress: ProgressFn | None,
                        rebuild: bool) -> EmbedSummary:
        from context_harness.embedding.providers import settings_of
        from context_harness.ingest.reembed import embed_configured

        assert self.vectors is not None
        backend = self.semantic()
        if rebuild:
            # The new embedder must work before the old vectors go: a model that cannot be
            # downloaded, or an endpoint giving other dims than configured, fails here instead.
            backend.embedder.embed_documents([REBUILD_PROBE])
            self.vectors.clear()
        else:
            self.vectors.delete_orphans()
        stored = self.vectors.identity()  # a model switch embeds into a next set meanwhile (ingest/reembed.py)
        report = embed_configured(cast("VectorSets", self.vectors), backend.embedder,
                                  settings_of(self.config.embedding), lambda: backend.embedder_for(stored),
                                  batch_size=batch_size or self.config.embedding.batch_size, limit=limit,
                                  progress=progress)
        backend.mark_stale()
        if report.embedded:
            backend.prepare_graph(progress)  # a large index: update its saved graph now, not in a search
        return EmbedSummary(embedded=report.embedded, pending=report.pending, seconds=report.seconds,
                            embedder=report.identity)

    def _keyword_ready(self, progress: ProgressFn | None) -> None:
        """Tell a sync's watcher that keyword search works now, before embedding starts (when any is due)."""
        assert self.store is not None and self.vectors is not None
        pending = self.vectors.stats().pending_chunks
        if progress is not None and pending:
            progress({"event": "keyword_ready", "documents": self.store.counts()[0], "pending_chunks": pending})

    async def sync_paths(self, label: str, rel_paths: list[str]) -> SyncSummary:
        """Sync only what changed at or under ``rel_paths`` of source ``label`` (the live index's
        write): re-read those paths by the connector's rules, delete what is gone, commit once.
        Embeds nothing (the live index embeds in the background afterwards)."""
        connector = next((c for c in self.connectors if c.label == label), None)
        if connector is None:
            raise BadRequest(f"unknown source {label!r}")
        from context_harness.ingest.sync import DocumentChanges

        async with self._sync_lock:
            changes = DocumentChanges()
            try:
                async with self.writing(f"sync {label} (live)"):
                    return await self.run_blocking(self._sync_paths_blocking, connector, rel_paths, changes)
            finally:
                self._documents_changed(changes)

    def _sync_paths_blocking(self, connector: Connector, rel_paths: list[str], changes: DocumentChanges) -> SyncSummary:
        from context_harness.ingest.sync import Syncer

        assert self.store is not None and self.index is not None
        syncer = Syncer(self.store, self.index, self.config.chunking, self.config.formats)
        with self.activity.syncing(connector.label, "paths") as state:
            try:
                summary = syncer.sync_paths(connector, rel_paths, changes)
            except FileNotFoundError as exc:
                raise NotConfigured(f"{connector.label}: {exc}; fix its root in the config") from None
            state.error_skips |= error_skips(summary, ERROR_SKIP_REASONS)  # a whole sync's still stand
            return summary

    async def embed_new(self) -> EmbedSummary | None:
        """Embed pending chunks in the background of a serving knowledge base: not under the sync
        lock (keyword updates never wait for it), one run at a time. None when embeddings are
        disabled or it failed (logged once until it works again; the chunks stay pending)."""
        if self.vectors is None:
            return None
        async with self._background_embed:
            try:
                async with self.writing("embed new chunks", embeddings=True):
                    with embedding_priority.background():  # answers first (embedding/priority.py)
                        summary = await self.run_blocking(self._embed_blocking, None, None, None, False)
            except Exception as exc:
                message = exc.message if isinstance(exc, HarnessError) else f"{exc.__class__.__name__}: {exc}"
                if self._embed_failure is None:  # once, until embedding works again
                    log.warning("embedding new chunks failed; they stay pending (`ctx embed pending`): %s", message)
                else:
                    log.debug("embedding new chunks failed again: %s", message)
                self._embed_failure = message
                return None
            if self._embed_failure is not None:
                log.warning("embedding new chunks works again")
            self._embed_failure = None
            return summary

    def _sync_blocking(self, connectors: list[Connector], target: str, full: bool, dry_run: bool,
                       limit: int | None, progress: ProgressFn | None,
                       changes: DocumentChanges | None = None) -> SyncReport:
        from context_harness.ingest.sync import Syncer, SyncOptions, passed_by

        assert self.store is not None and self.index is not None
        syncer = Syncer(self.store, self.index, self.config.chunking, self.config.formats)
        options = SyncOptions(full=full, dry_run=dry_run, limit=limit)
        budget = [limit] if limit is not None else None
        summaries = []
        synced = self.store.source_rows()
        for connector in connectors:
            first = synced.get(connector.label, (None, None))[0] is None
            with self.activity.syncing(connector.label, first=first, remember=not dry_run) as state:
                try:
                    summary = syncer.sync(connector, options, state.follow(progress), budget, changes)
                except FileNotFoundError as exc:
                    raise NotConfigured(f"{connector.label}: {exc}; fix its root in the config") from None
                if not dry_run:
                    state.error_skips, state.summary = error_skips(summary, ERROR_SKIP_REASONS), summary
                summaries.append(summary)
        if target == "all" and not dry_run:
            summaries.extend(self._prune_unconfigured(changes))
        return SyncReport(sources=summaries, set_aside=passed_by(target, self.connectors, self.config.unavailable),
                          overlaps=self._source_overlaps())

    def _prune_unconfigured(self, changes: DocumentChanges | None = None) -> list[SyncSummary]:
        assert self.store is not None and self.index is not None
        configured = {c.label for c in self.connectors}
        out = []
        for label in sorted(set(self.store.source_counts()) - configured):
            doc_ids = [doc_id for doc_id, _, _ in self.store.fingerprints(label).values()]
            self.store.apply(label, [], doc_ids)
            if changes is not None:
                changes.deleted.update(doc_ids)
            out.append(SyncSummary(source=label, deleted=len(doc_ids)))
        if out:
            flush_index(self.store, self.index)
        return out
