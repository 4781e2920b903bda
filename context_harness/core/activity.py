"""What each source is doing in this process: how it is kept fresh (watched, polled, on an interval),
whether a sync is running (a first one: how far it is), and how the last one ended. ``sources``
reports it, with the ``status`` it adds up to (``source_status``: ok, degraded, failing).

In memory, but for one thing: how each whole sync ends is also handed to ``remember`` (an
``EndedSync``: the Harness stores its outcome and adds it to the sync history in the workspace), so a
process that serves nothing (``ctx sources``) still says that the last sync failed, whichever
process ran it. Written from the event loop and worker threads alike;
each field is one assignment.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from context_harness.common.timestamps import now_iso
from context_harness.errors import HarnessError
from context_harness.models import IndexingProgress, SyncSummary

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EndedSync:
    """A whole sync that ended (not a dry run, not cancelled), as ``remember`` gets it: how
    (``outcome`` "ok" or "error", with ``error``), when it started and ended (stored form), how long
    it took, and its ``summary`` (None when it failed before it had one)."""

    source: str
    outcome: str
    error: str | None
    started_at: str
    ended_at: str
    seconds: float
    summary: SyncSummary | None = None


RememberFn = Callable[[EndedSync], None]


class StoredOutcome(Protocol):
    """How the last whole sync of a source ended, as the workspace keeps it (``store.records.SyncOutcome``)."""

    @property
    def outcome(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def at(self) -> str: ...

WATCHED, POLLED, INTERVAL, OFF = "watched", "polled", "interval", "off"
OK, DEGRADED, FAILING = "ok", "degraded", "failing"
NEVER_SYNCED = ("this knowledge base was never synced, so nothing is indexed yet: run `ctx sync` (with the same "
                "--root or --config), or serve it with [server] sync_on_start")
_STORED_SKIP = re.compile(r"(?:^skipped: |, )([a-z_]+) (\d+)")  # in ``ingest.sync.skip_notes``' text


@dataclass
class SourceActivity:
    watch: str | None = None  # WATCHED, POLLED (a watcher could not run: see note), INTERVAL or OFF
    watch_note: str | None = None
    running: int = 0
    last_outcome: str | None = None  # "ok" or "error"
    last_error: str | None = None
    passes: int = 0  # syncs of this source (whole or some paths) committed by this process
    last_kind: str | None = None  # "whole" or "paths": what the last sync that ended was
    ended_at: str | None = None  # when the last sync that ended ended (ISO 8601, UTC)
    error_skips: dict[str, int] = field(default_factory=dict)  # the last sync's skips for errors, by reason
    first: bool = False  # the running sync is the source's first (nothing of it was indexed before)
    summary: SyncSummary | None = None  # the running whole sync's, once it has one (for ``remember``)
    phase: str | None = None  # the running sync: "scanning", then "indexing" (done of total items)
    done: int = 0
    total: int = 0

    def follow(self, progress: Callable[[dict[str, Any]], None] | None) -> Callable[[dict[str, Any]], None]:
        """A sync's progress callback that also records how far the sync is (``phase``, ``done`` of
        ``total``) before passing each event on to ``progress``."""
        def emit(event: dict[str, Any]) -> None:
            kind = event.get("event")
            if kind == "scan":
                self.phase, self.done, self.total = "scanning", 0, 0
            elif kind == "start":
                self.phase, self.done, self.total = "indexing", 0, int(event.get("total") or 0)
            elif kind == "progress":
                self.done = int(event.get("done") or 0)
            if progress is not None:
                progress(event)
        return emit


class Activity:
    def __init__(self, remember: RememberFn | None = None) -> None:
        self._sources: dict[str, SourceActivity] = {}
        self._remember = remember

    def of(self, label: str) -> SourceActivity:
        found = self._sources.get(label)
        if found is None:
            found = self._sources[label] = SourceActivity()
        return found

    def known(self, label: str) -> SourceActivity | None:
        return self._sources.get(label)

    def first_syncs(self) -> IndexingProgress | None:
        """How far the first syncs running now are (of sources nothing of which was indexed before),
        summed over those sources; None when there are none."""
        first = {label: state for label, state in list(self._sources.items()) if state.running and state.first}
        if not first:
            return None
        states = list(first.values())
        return IndexingProgress(sources=sorted(first), done=sum(s.done for s in states),
                                total=sum(s.total for s in states),
                                phase="indexing" if all(s.phase == "indexing" for s in states) else "scanning")

    def set_watch(self, label: str, mode: str, note: str | None = None) -> None:
        state = self.of(label)
        state.watch, state.watch_note = mode, note

    @contextmanager
    def syncing(self, label: str, kind: str = "whole", first: bool = False,
                remember: bool = True) -> Iterator[SourceActivity]:
        """Mark a sync of ``label`` running (``kind``: "whole" or "paths"; ``first``: nothing of the
        source was indexed before); record how it ended (a ``HarnessError``'s message, or a generic
        one for anything else), and for a whole sync (unless ``remember`` is False: a dry run) hand
        it to ``remember`` as an ``EndedSync`` (with the ``summary`` the block set on the state, if
        any). ``running`` drops again however the block ends."""
        state = self.of(label)
        state.running += 1
        state.first, state.summary = first, None
        started_at, clock = now_iso(), time.monotonic()
        try:
            yield state
        except HarnessError as exc:
            state.last_outcome, state.last_error = "error", exc.message
            raise
        except Exception as exc:
            state.last_outcome, state.last_error = "error", f"internal error ({exc.__class__.__name__}; see the log)"
            raise
        except BaseException:  # cancelled or interrupted: not an outcome of the source
            state.last_outcome, state.last_error = "error", "interrupted"
            remember = False
            raise
        else:
            state.last_outcome, state.last_error = "ok", None
            state.passes += 1
        finally:
            state.running -= 1
            ended_at = now_iso()
            state.last_kind, state.ended_at = kind, ended_at
            if not state.running:
                state.first, state.phase = False, None
            if remember and kind == "whole" and self._remember is not None and state.last_outcome:
                self._keep(EndedSync(label, state.last_outcome, state.last_error, started_at, ended_at,
                                     round(time.monotonic() - clock, 3), state.summary))

    def _keep(self, ended: EndedSync) -> None:
        try:
            assert self._remember is not None
            self._remember(ended)
        except Exception as exc:  # a read-only or full workspace: the sync's own outcome stands
            log.warning("%s: could not store how its sync ended (%s): %s", ended.source, ended.outcome, exc)




def source_status(healthy: bool, problem: str | None, state: SourceActivity | None, stored_notes: str | None,
                  error_reasons: frozenset[str], stored: StoredOutcome | None = None) -> tuple[str, str | None]:
    """``sources``' ``status`` and ``status_reason`` of one source. ``failing``: the connector is not
    healthy (``problem``: the root is missing, a variable unset, gone from the config) or its last
    whole sync in this process failed (or every sync did), or, when this process has not synced it,
    the last whole sync stored in the workspace (``stored``) failed. ``degraded``: it works, but not fully: the
    last live update failed after earlier syncs worked, it is polled because watching failed (or
    partly), or the last sync skipped items for errors (``error_reasons``: the connectors'
    ``ERROR_SKIP_REASONS``; from ``state`` when this process synced it, else from the stored notes of
    the last sync). ``ok`` otherwise."""
    if not healthy:
        return FAILING, problem or "the source is not available"
    if state is not None and state.last_outcome == "error" and (state.last_kind != "paths" or not state.passes):
        return FAILING, f"the last sync failed: {state.last_error}"
    if (state is None or not state.last_outcome) and stored is not None and stored.outcome == "error":
        return FAILING, f"the last sync failed ({stored.at}): {stored.error}"
    reasons = []
    if state is not None and state.last_outcome == "error":
        reasons.append(f"the last live update failed (earlier syncs worked; it is retried): {state.last_error}")
    if state is not None and state.watch == POLLED:
        reasons.append(f"polled, not watched: {state.watch_note}")
    elif state is not None and state.watch == WATCHED and state.watch_note:
        reasons.append(f"partly polled: {state.watch_note}")
    if state is not None and state.last_outcome:
        skips = state.error_skips
    else:
        skips = stored_error_skips(stored_notes, error_reasons)
    if skips:
        counts = ", ".join(f"{reason} {count}" for reason, count in sorted(skips.items()))
        reasons.append(f"the last sync skipped items for errors ({counts}); `ctx sync --json` names them")
    return (DEGRADED, "; ".join(reasons)) if reasons else (OK, None)


def indexing_notice(progress: IndexingProgress) -> str:
    """A search's ``notice`` while first syncs run: which, and how far they are."""
    far = f"{progress.done:,} of {progress.total:,} items indexed" if progress.phase == "indexing" else "scanning"
    return (f"indexing is still running (first sync of {', '.join(progress.sources)}: {far}); results may be "
            "incomplete: search again shortly")


def error_skips(summary: SyncSummary, error_reasons: frozenset[str]) -> dict[str, int]:
    """A sync's skips for errors (reasons in ``error_reasons``), by reason."""
    return {reason: count for reason, count in summary.skipped_reasons.items() if reason in error_reasons}


def stored_error_skips(notes: str | None, error_reasons: frozenset[str]) -> dict[str, int]:
    """The skips for errors (reasons in ``error_reasons``) named in the stored notes of a source's
    last sync (``ingest.sync.skip_notes``)."""
    if not notes:
        return {}
    return {m[1]: int(m[2]) for m in _STORED_SKIP.finditer(notes) if m[1] in error_reasons}


__all__ = ["DEGRADED", "FAILING", "INTERVAL", "NEVER_SYNCED", "OFF", "OK", "POLLED", "WATCHED", "Activity",
           "EndedSync", "SourceActivity", "StoredOutcome", "error_skips", "indexing_notice", "source_status",
           "stored_error_skips"]
