"""Watching a few folders by listing them, where OS events cannot serve: the live index's watcher of
the folders holding names that are not UTF-8 (any OS event naming one stops ``watchfiles``' OS
watcher for good).

Each entry is compared by inode, size, modification and change time (in nanoseconds) and mode, so
a write within the file system's timestamp tick, a ``chmod`` and a swapped symlink are all seen, and
a mere read never is. (``watchfiles``' own polling watcher compares modification times only: a note
rewritten twice within one tick, or made readable again, went unseen for good.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

ADDED, MODIFIED, DELETED = 1, 2, 3  # watchfiles' ``Change`` values
Listing = dict[str, tuple[int, int, int, int, int]]  # path -> (inode, size, mtime ns, ctime ns, mode)


def listing(folder: str) -> Listing:
    """What ``folder`` holds (without its subfolders' contents); empty when it is gone or unreadable."""
    out: Listing = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                out[entry.path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    except OSError:
        pass
    return out


def differences(before: Listing, after: Listing) -> set[tuple[int, str]]:
    """The ``(change, path)`` pairs that turn ``before`` into ``after``."""
    changes = {(DELETED, path) for path in before.keys() - after.keys()}
    changes |= {(ADDED, path) for path in after.keys() - before.keys()}
    changes |= {(MODIFIED, path) for path in before.keys() & after.keys() if before[path] != after[path]}
    return changes


class ListingPoller:
    """A watcher of ``folders`` (each without its subfolders) with the ``watch``/``close`` of
    ``watchfiles``' ``RustNotify``: it lists them every ``interval`` seconds and reports what differs."""

    def __init__(self, folders: Iterable[str], interval: float) -> None:
        self.interval = interval
        self._seen = {folder: listing(folder) for folder in folders}
        self._listed_at = time.monotonic()

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop: Any) -> set[tuple[int, str]] | str:
        """The changes found by the next listing due within ``timeout_ms``, else ``"timeout"``
        (``"stop"`` once ``stop`` is set). ``debounce_ms`` and ``step_ms`` are not needed: one
        listing is one batch."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if stop is not None and stop.is_set():
                return "stop"
            now = time.monotonic()
            if now - self._listed_at >= self.interval:
                changes = self._list()
                if changes:
                    return changes
                now = time.monotonic()
            if now >= deadline:
                return "timeout"
            time.sleep(max(0.001, min(deadline, self._listed_at + self.interval) - now))

    def close(self) -> None:
        self._seen = {}

    def _list(self) -> set[tuple[int, str]]:
        self._listed_at = time.monotonic()
        changes: set[tuple[int, str]] = set()
        for folder, before in self._seen.items():
            after = listing(folder)
            changes |= differences(before, after)
            self._seen[folder] = after
        return changes
