"""The services that run while a knowledge base is served: sync on start, the live index (watchers,
interval syncs, background embedding: ``live``), reloads, warm-up and the local socket that answers
``ctx search``, ``get`` and ``sources`` run beside it (``local_reads``).

``Harness.serving()`` enters them; stdio, HTTP, ``ctx watch`` and tests enter it the same way, and
the rims only hear about their effects (``Catalog`` listeners: ``tools``, ``prompts``, ``resources``,
``instructions``; ``Harness.subscribe_documents``: the documents a sync changed).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.abc

from context_harness.common.memory import limit_malloc_arenas
from context_harness.config import Config
from context_harness.core.live import LiveHost, LiveIndex
from context_harness.core.local_reads import Reads, serve_reads
from context_harness.errors import HarnessError, NotConfigured
from context_harness.models import SyncReport

if TYPE_CHECKING:  # built on first use (Harness.catalog): ctx search never builds it
    from context_harness.core.catalog import Catalog

log = logging.getLogger(__name__)

RELOAD_INTERVAL = 1.0  # seconds between checks of the config file, the Lua tool scripts and agent files


class ServedHarness(LiveHost, Reads, Protocol):
    """``LiveHost`` plus what the other serving services need of ``Harness``: the catalog they reload,
    the sync on start, the search warm-up and the reads the local socket answers."""

    config: Config

    @property
    def catalog(self) -> Catalog: ...

    async def sync(self, target: str = "all", *, embed: bool = True) -> SyncReport: ...

    def warm_up(self) -> bool: ...


class Services:
    """Background work of one serving Harness, in one task group (cancelled when serving ends)."""

    def __init__(self, harness: ServedHarness, task_group: anyio.abc.TaskGroup,
                 reload_interval: float = RELOAD_INTERVAL) -> None:
        self.harness = harness
        self.task_group = task_group
        self.reload_interval = reload_interval
        self._warming = False
        self.live = LiveIndex(harness, task_group, watch=harness.config.server.watch)

    def start(self) -> None:
        limit_malloc_arenas()  # a long-running process: keep its memory flat (see memory.py)
        for missing in self.harness.config.unavailable:  # the rest serves; say what is left out
            log.warning("%s is unavailable: %s", missing.label, missing.message)
        self.task_group.start_soon(self._reload_forever)
        self.task_group.start_soon(serve_reads, self.harness)  # ctx search beside this process asks it
        self.live.start()  # watchers first: what changes during the sync on start is seen too
        if self.harness.config.server.sync_on_start:
            self.task_group.start_soon(self.sync_on_start)

    def stop(self) -> None:
        """Serving ends: let the watcher threads return now (the task group then cancels the rest)."""
        self.live.stop()

    async def _reload_forever(self) -> None:
        """Reload changed tools, config and agents every ``reload_interval`` seconds."""
        while True:
            await anyio.sleep(self.reload_interval)
            await self.harness.catalog.reload()

    async def sync_on_start(self) -> None:
        """``[server] sync_on_start``: bring stale sources up to date while serving, then embed their
        new chunks in the background; log to stderr."""
        try:
            report = await self.harness.sync("all", embed=False)
        except NotConfigured as exc:
            log.info("sync on start skipped: %s", exc.message)
            return
        except HarnessError as exc:
            log.warning("sync on start failed: %s", exc.message)
            return
        except Exception:
            log.exception("sync on start failed")
            return
        changed = report.total("added") + report.total("updated") + report.total("deleted")
        log.info("sync on start: %d documents changed", changed)
        self.live.embed_soon()
        self.harness.catalog.changed("instructions")

    def warm_up_soon(self) -> None:
        """Start loading what a first search would wait for (~1.5 s with the bundled model), once.
        The rims call this on a client's first request, so it does not slow the cold start."""
        if not self._warming:
            self._warming = True
            self.task_group.start_soon(self._warm_up)

    async def _warm_up(self) -> None:
        try:
            if await anyio.to_thread.run_sync(self.harness.warm_up, abandon_on_cancel=True):
                log.info("search warmed up: vector index and embedding model loaded")
        except Exception as exc:  # the first search will report it properly
            log.info("search warm-up skipped: %s", exc)


__all__ = ["RELOAD_INTERVAL", "Services"]
