"""The roots of writable sources, held open: each root folder is opened once (``O_DIRECTORY |
O_NOFOLLOW`` on its resolved path) when the knowledge base opens, or when it first appears, and kept
for the life of the source. Every note operation walks from that descriptor (``notes.folder.walk``),
never from the root's path again, so a root swapped for a symlink (or for another folder) cannot send
a write, a move, a delete or a restore anywhere else; and ``check`` refuses a root whose path no longer
names the held folder, with an error that says what happened and the fix, so what the user sees at the
path and what the note tools change stay one folder."""

from __future__ import annotations

import os
import stat
import threading
import weakref
from pathlib import Path

from context_harness.errors import Conflict
from context_harness.notes.folder import CLOEXEC, DIRECTORY, NOFOLLOW

FLAGS = os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC


class Root:
    """A source's root folder held open: ``path`` as configured, ``real`` as resolved when opened."""

    def __init__(self, path: Path, label: str = "") -> None:
        self.path = Path(os.path.abspath(path))
        self.label = label
        self.was_link = os.path.islink(self.path)
        self.real = Path(os.path.realpath(self.path))
        self.fd = os.open(self.real, FLAGS)
        self._close = weakref.finalize(self, os.close, self.fd)
        info = os.fstat(self.fd)
        self.identity = (info.st_dev, info.st_ino)

    def check(self) -> None:
        """``Conflict`` unless the root's path still names the folder held open."""
        try:
            now: os.stat_result | None = os.stat(self.path)
        except OSError:  # gone, or a dangling or looping link
            now = None
        if now is not None and stat.S_ISDIR(now.st_mode) and (now.st_dev, now.st_ino) == self.identity:
            return
        source = f"source {self.label!r}" if self.label else "this source"
        raise Conflict(f"the folder of {source} ({self.path}) {self._what_happened(now)} while the server runs: it "
                       "is no longer the folder the server opened, and note tools never follow a swapped root; put "
                       "the folder back, or restart the server to serve what is there now")

    def _what_happened(self, now: os.stat_result | None) -> str:
        if now is None:
            return "is missing (removed or renamed)"
        try:
            target = os.path.realpath(self.path)
        except OSError:  # changing as it is looked at
            return "was replaced"
        if os.path.islink(self.real) or (not self.was_link and os.path.islink(self.path)):
            return f"was replaced by a symlink to {target}"
        if self.was_link and Path(target) != self.real:
            return f"is a symlink that now leads to another folder ({target})"
        return "was replaced by another folder"

    def open(self) -> int:
        """A new descriptor of the held folder (its own offset, for listing), to close after use."""
        return os.open(".", FLAGS, dir_fd=self.fd)

    def close(self) -> None:
        self._close()


class Roots:
    """The held roots of a knowledge base, by configured path (thread-safe)."""

    def __init__(self) -> None:
        self._held: dict[str, Root] = {}
        self._lock = threading.Lock()

    def hold(self, path: Path, label: str = "") -> Root:
        """The root at ``path``, opened now if it was not held yet (``OSError`` when it cannot be)."""
        key = os.path.abspath(path)
        with self._lock:
            root = self._held.get(key)
            if root is None:
                root = self._held[key] = Root(Path(key), label)
            return root

    def held(self, path: Path) -> Root | None:
        with self._lock:
            return self._held.get(os.path.abspath(path))

    def close(self) -> None:
        with self._lock:
            for root in self._held.values():
                root.close()
            self._held.clear()


__all__ = ["Root", "Roots"]
