"""``Reports``: what the knowledge base holds and how each source stands (``sources``, ``stats``,
``source_details`` and ``sync_history`` for the console's sources dashboard, and ``describe`` for
the MCP server's instructions), which sources' folders overlap (``_source_overlaps``: ``sources``
and each sync's report carry them), and how a whole sync that ended is stored (``_remember_sync``,
the ``Activity``'s ``remember``). Mixed into ``Harness``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pathspec

from context_harness.config.roots import Overlap, overlaps, source_roots
from context_harness.config.variables import set_aside_listing
from context_harness.connectors.base import ERROR_SKIP_REASONS, HealthReporting
from context_harness.connectors.filesystem import ALWAYS_SKIPPED_DIRS, GITIGNORE_LIMIT, Globs
from context_harness.connectors.reading import Skip, read_regular
from context_harness.core.activity import FAILING, source_status
from context_harness.models import SourceOut, SourceOverlap, SourcesResponse, StatsOut
from context_harness.store.records import SyncEntry

if TYPE_CHECKING:
    from collections.abc import Callable

    from context_harness.config import Config
    from context_harness.connectors.base import Connector
    from context_harness.core.activity import Activity, EndedSync
    from context_harness.store.backend import Backend, DocumentStorage, KeywordRanking, VectorStorage
    from context_harness.store.writer_lock import WriterLock


#: Documents whose language is detected for ``_language_advice`` (spread over all of them), and the
#: characters of each read (the detector reads a bounded prefix anyway).
LANGUAGE_SAMPLE = 100
LANGUAGE_CHARS = 400


@dataclass(frozen=True)
class SourceDetail:
    """What the sources dashboard shows of a source beside ``sources``: the bytes of its documents'
    text, and how its last sync ended (``outcome``: "ok" or "error", with ``error``) and when
    (``ended_at``): this process's last sync of it, else the last whole sync stored in the workspace."""

    text_bytes: int = 0
    outcome: str | None = None
    ended_at: str | None = None
    error: str | None = None


class Reports:
    """Mixed into ``Harness`` (which provides what the ``TYPE_CHECKING`` block declares)."""

    # (documents, model, provider) -> the language advice for them (``_language_advice``)
    _language_advice_kept: tuple[tuple[Any, ...], dict[str, Any] | None] | None = None

    if TYPE_CHECKING:
        config: Config
        connectors: list[Connector]
        activity: Activity
        backend: Backend | None
        store: DocumentStorage | None
        index: KeywordRanking | None
        vectors: VectorStorage | None
        embed_lock: WriterLock

        async def run_blocking(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

        def embedding_status(self) -> dict[str, Any]: ...

    async def sources(self) -> SourcesResponse:
        return await self.run_blocking(self.sources_sync)

    def sources_sync(self) -> SourcesResponse:
        assert self.store is not None
        counts = self.store.source_counts()
        synced, stored = self.store.source_rows(), self.store.outcomes()  # stored: how the last syncs ended
        out = []
        configured = {c.label: c for c in self.connectors}
        embedding = self.vectors.embedding_by_source() if self.vectors is not None else {}
        for label in sorted(set(configured) | set(counts)):
            connector = configured.get(label)
            docs, chunks = counts.get(label, (0, 0))
            last_sync, notes = synced.get(label, (None, None))
            healthy = connector is not None
            if connector is None:
                notes = "no longer in the config; `ctx sync all` removes its documents"
            else:
                if isinstance(connector, HealthReporting):
                    healthy, problem = connector.health()
                    notes = problem or notes
                if last_sync is None and healthy:
                    notes = notes or "never synced; run `ctx sync`"
            trouble = None if healthy else notes
            embedded, pending = embedding.get(label, (0, 0))
            if pending:
                count = f"{pending} chunk{'s' if pending != 1 else ''}"
                waiting = (f"{count} being embedded now" if self.embed_lock.held  # by this process, e.g. serving
                           else f"{count} awaiting embeddings (`ctx embed pending`)")
                notes = f"{notes}; {waiting}" if notes else waiting
            activity = self.activity.known(label)
            live: dict[str, Any] = {}
            if activity is not None:
                live = {"watch": activity.watch, "watch_note": activity.watch_note, "syncing": activity.running > 0,
                        "last_outcome": activity.last_outcome, "last_error": activity.last_error,
                        "sync_passes": activity.passes}
            live["status"], live["status_reason"] = source_status(healthy, trouble, activity,
                                                                  synced.get(label, (None, None))[1],
                                                                  ERROR_SKIP_REASONS, stored.get(label))
            healthy = live["status"] != FAILING
            out.append(SourceOut(name=label, configured=connector is not None, healthy=healthy, notes=notes,
                                 document_count=docs, chunk_count=chunks, last_sync=last_sync,
                                 embedded_chunks=embedded, pending_chunks=pending, **live,
                                 origin=self.config.extension_origins.get(label.replace("script:", "connectors/", 1))))
        status = self.embedding_status()
        advice = self._language_advice(sum(docs for docs, _ in counts.values()))
        if advice is not None:  # most documents in languages the model does not read: ctx sources, doctor, console
            status["language_advice"] = advice
        return SourcesResponse(sources=out, overlaps=self._source_overlaps(), embedding=status,
                               set_aside=set_aside_listing(self.config.unavailable))

    def _language_advice(self, documents: int | None = None) -> dict[str, Any] | None:
        """When most documents are in languages the configured embedding model does not cover (the
        bundled MiniLM: English only), what to say and the config line that fixes it
        (``embedding/catalog.py``); None otherwise. The languages of up to ``LANGUAGE_SAMPLE``
        documents spread over the ids (``detect_language``), remembered until the count of documents
        or the ``[embedding]`` settings change. Blocking."""
        from context_harness.embedding.catalog import card_of, language_advice

        if self.store is None or card_of(self.config.embedding) is None:
            return None
        if documents is None:
            documents = self.store.counts()[0]
        key = (documents, self.config.embedding.model, self.config.embedding.provider)
        kept = self._language_advice_kept
        if kept is None or kept[0] != key:
            advice = language_advice(self.config.embedding, self._document_languages())
            kept = self._language_advice_kept = (key, advice.as_dict() if advice else None)
        return dict(kept[1]) if kept[1] else None

    def _document_languages(self) -> dict[str, int]:
        """Documents by language, over a sample spread evenly over the sorted ids: the language of
        their source where ``[connectors.*] language`` sets one, else detected."""
        from context_harness.common.analysis import AUTO, resolve_language

        assert self.store is not None
        configured = self.config.connectors.languages()
        ids = sorted(self.store.all_ids())
        step = max(1, -(-len(ids) // LANGUAGE_SAMPLE))
        counts: dict[str, int] = {}
        for row in self.store.documents(ids[::step][:LANGUAGE_SAMPLE]).values():
            language = resolve_language(f"{row.title or ''}\n{row.body[:LANGUAGE_CHARS]}",
                                        configured.get(row.source, AUTO))
            counts[language] = counts.get(language, 0) + 1
        return counts

    def _source_overlaps(self) -> list[SourceOverlap]:
        """The folder and git sources whose folders overlap (``config/roots.py``), leaving out a folder
        the outer source never reaches (``.git``, ``.ctx``, ``node_modules`` ..., its exclude_globs or a
        .gitignore on the way): the same files indexed twice, each pair with the fix. Blocking (it reads
        the .gitignore files on the way)."""
        return [overlap_out(found) for found in overlaps(source_roots(self.config)) if self._reaches(found)]

    def _reaches(self, found: Overlap) -> bool:
        """Whether ``found.other``'s scan walks into ``found.kept``'s folder, by its own rules."""
        kind, _, name = found.other.label.partition(":")
        entry = self.config.connectors.filesystem[name] if kind == "filesystem" else self.config.connectors.git[name]
        globs = Globs(entry.include_globs, entry.exclude_globs)
        gitignore = getattr(entry, "respect_gitignore", True)  # a git source's scan honours them
        ignores: list[tuple[str, pathspec.PathSpec]] = []
        rel = ""
        for part in found.inside.split("/") if found.inside else []:
            if gitignore:
                ignores += _gitignore(found.other.path, rel)
            rel = f"{rel}/{part}" if rel else part
            if part in ALWAYS_SKIPPED_DIRS or globs.excluded((rel + "/",)):
                return False
            if any(spec.match_file(rel[len(base) + 1:] + "/" if base else rel + "/") for base, spec in ignores):
                return False
        return True

    async def source_details(self) -> dict[str, SourceDetail]:
        """``SourceDetail`` by source label (configured or holding documents). Reads every document's
        size: once per page, not per second."""
        return await self.run_blocking(self._source_details)

    def _source_details(self) -> dict[str, SourceDetail]:
        assert self.store is not None
        sizes, stored = self.store.source_bytes(), self.store.outcomes()
        out = {}
        for label in sorted({c.label for c in self.connectors} | set(sizes) | set(stored)):
            state, kept = self.activity.known(label), stored.get(label)
            size = int(sizes.get(label) or 0)
            if state is not None and state.last_outcome:
                out[label] = SourceDetail(size, state.last_outcome, state.ended_at, state.last_error)
            elif kept is not None:
                out[label] = SourceDetail(size, kept.outcome, kept.at, kept.error)
            else:
                out[label] = SourceDetail(size)
        return out

    async def sync_history(self, source: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """The last whole syncs (of ``source`` only, when given), newest first: ``source``,
        ``outcome`` ("ok" or "error", with ``error``), ``started_at``, ``ended_at``, ``seconds`` and the
        counts (``added``, ``updated``, ``deleted``, ``unchanged``, ``skipped``; None for a sync that
        failed before it had them). The workspace keeps each source's last 50."""
        assert self.store is not None
        store = self.store
        entries = await self.run_blocking(lambda: store.sync_history(source, limit))
        return [asdict(entry) for entry in entries]

    def _remember_sync(self, ended: EndedSync) -> None:
        """Store how a whole sync ended (``outcomes``) and add it to the sync history."""
        if self.store is None:
            return
        self.store.record_outcome(ended.source, ended.outcome, ended.error, ended.ended_at)
        done = ended.summary
        counts = (done.added, done.updated, done.deleted, done.unchanged, done.skipped) if done else (None,) * 5
        self.store.record_history(SyncEntry(ended.source, ended.outcome, ended.error, ended.started_at,
                                            ended.ended_at, ended.seconds, *counts))

    def embedding_now(self) -> bool:
        """Whether this process is embedding chunks now (it holds the embeddings' writer lock), so
        pending chunks need no ``ctx embed pending``."""
        return self.embed_lock.held

    async def stats(self) -> StatsOut:
        return await self.run_blocking(self.stats_sync)

    def stats_sync(self) -> StatsOut:
        assert self.store is not None and self.index is not None
        assert self.backend is not None
        documents, chunks = self.store.counts()
        db_bytes, index_bytes = self.backend.byte_sizes()
        last = [t for t, _ in self.store.source_rows().values() if t]
        return StatsOut(
            documents=documents, chunks=chunks, sources=len(self.store.source_counts()),
            db_path=self.backend.location,
            db_bytes=db_bytes, index_bytes=index_bytes, schema_version=self.store.schema_version,
            last_sync=max(last) if last else None,
            embedding=self.embedding_status(),
        )

    def describe(self) -> str:
        """A short, truthful description of the knowledge base, for MCP server instructions."""
        assert self.store is not None
        # Counts only: no connector health checks and no embedder (a fastembed model's identity
        # imports fastembed, ~0.6 s), as this runs when the MCP server starts.
        # No join over the chunks either: at a million chunks that held the first answer 15 s.
        counts = self.store.document_counts()
        labels = sorted({c.label for c in self.connectors} | set(counts))
        parts = [f"A local knowledge base of {sum(counts.values())} documents"]
        if labels:
            parts.append(" from " + ", ".join(f"{label} ({counts.get(label, 0)})" for label in labels))
        if self.vectors is None:
            modes = "keyword search; semantic search is disabled in the config"
        else:
            modes = f"keyword, semantic and hybrid search; {self.vectors.count()} chunk texts embedded"
        parts.append(f". Use `search` to find documents ({modes}), then `get` with a result's id and chunk to "
                     "read that section; long documents come a window at a time (page on with `next_offset`). "
                     "`sources` lists where documents come from.")
        return "".join(parts)


def overlap_out(found: Overlap) -> SourceOverlap:
    """An overlap in words: both sources, the folder, which copy search lists, and the fix."""
    kept, other = found.kept, found.other
    if not found.inside:
        said = (f"{other.label} overlaps {kept.label}: both index {kept.path}, so every file there is indexed "
                f"twice (search lists each once, from {kept.label}); keep one source per folder: remove "
                f"{other.table} and put the keys you need from it (such as writable = true) in {kept.table}")
    else:
        said = (f"{kept.label} overlaps {other.label}: its folder {kept.path} is inside {other.label}'s "
                f"{other.path}, so every file there is indexed twice (search lists each once, from {kept.label}); "
                f'add "{found.inside}/**" to exclude_globs in {other.table}, or remove one of the two')
    return SourceOverlap(sources=[kept.label, other.label], folder=kept.path, message=said)


def _gitignore(root: str, rel: str) -> list[tuple[str, pathspec.PathSpec]]:
    """The ``.gitignore`` of the folder ``rel`` under ``root`` as (folder, patterns); [] when there is
    none or it cannot be read (a FIFO or a folder there never blocks: ``read_regular``)."""
    try:
        raw = read_regular(root, f"{rel}/.gitignore" if rel else ".gitignore", GITIGNORE_LIMIT)
    except (OSError, Skip):
        return []
    return [(rel, pathspec.GitIgnoreSpec.from_lines(raw.decode("utf-8", errors="replace").splitlines()))]
