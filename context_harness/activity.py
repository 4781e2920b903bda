"""What each source is doing in this process: how it is kept fresh (watched, polled, on an interval),
whether a sync is running, and how the last one ended. ``sources`` reports it.

In memory only: a process that serves nothing (``ctx sources``) knows none of it, and says so with
empty fields. Written from the event loop and worker threads alike; each field is one assignment.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from context_harness.errors import HarnessError

WATCHED, POLLED, INTERVAL, OFF = "watched", "polled", "interval", "off"


@dataclass
class SourceActivity:
    watch: str | None = None  # WATCHED, POLLED (a watcher could not run: see note), INTERVAL or OFF
    watch_note: str | None = None
    running: int = 0
    last_outcome: str | None = None  # "ok" or "error"
    last_error: str | None = None
    passes: int = 0  # syncs of this source (whole or some paths) committed by this process


class Activity:
    def __init__(self) -> None:
        self._sources: dict[str, SourceActivity] = {}

    def of(self, label: str) -> SourceActivity:
        found = self._sources.get(label)
        if found is None:
            found = self._sources[label] = SourceActivity()
        return found

    def known(self, label: str) -> SourceActivity | None:
        return self._sources.get(label)

    def set_watch(self, label: str, mode: str, note: str | None = None) -> None:
        state = self.of(label)
        state.watch, state.watch_note = mode, note

    @contextmanager
    def syncing(self, label: str) -> Iterator[SourceActivity]:
        """Mark a sync of ``label`` running; record how it ended (a ``HarnessError``'s message, or a
        generic one for anything else)."""
        state = self.of(label)
        state.running += 1
        try:
            yield state
        except HarnessError as exc:
            state.last_outcome, state.last_error = "error", exc.message
            raise
        except Exception as exc:
            state.last_outcome, state.last_error = "error", f"internal error ({exc.__class__.__name__}; see the log)"
            raise
        else:
            state.last_outcome, state.last_error = "ok", None
            state.passes += 1
        finally:
            state.running -= 1


__all__ = ["INTERVAL", "OFF", "POLLED", "WATCHED", "Activity", "SourceActivity"]
