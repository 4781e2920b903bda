"""The root folder of a folder source, held open: opened once (``O_DIRECTORY | O_NOFOLLOW`` on its
resolved path) when the knowledge base opens, or at the source's first sync, and walked from for the
life of the source. A sync lists and reads the folder through that descriptor, never through the root's
path again, so a root swapped for a symlink to another folder (or for another folder) is never read:
each sync, and each file read, first checks that the root's path still names the held folder, and a
sync of a swapped root fails naming what happened and the fix, reading nothing and deleting nothing.

A writable source shares the root the note tools hold (``notes.roots``, handed in as a ``Holder``),
so what the note tools change and what the index reads stay one folder. A root configured as a
symlink is resolved once, when it is held. A root folder that was deleted (its held descriptor names a
removed folder) and made again at the same place, without a symlink at the root, is held anew: removing
a folder and cloning it again is not a swap."""

from __future__ import annotations

import logging
import os
import stat
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from context_harness.errors import Conflict

log = logging.getLogger(__name__)
FLAGS = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
         | getattr(os, "O_CLOEXEC", 0))


class HeldRoot(Protocol):
    """A root folder held open: ``path`` as configured, ``real`` as resolved when opened, ``fd``."""

    @property
    def path(self) -> Path: ...

    @property
    def real(self) -> Path: ...

    @property
    def fd(self) -> int: ...

    @property
    def identity(self) -> tuple[int, int]: ...


Holder = Callable[[], HeldRoot]
"""Holds the root (``notes.roots.Roots.hold``), the same object each time; ``OSError`` when it cannot."""


class OwnRoot:
    """A root held by the connector itself (a read-only source, a checkout, a source configured anew)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(os.path.abspath(path))
        self.real = Path(os.path.realpath(self.path))
        self.fd = os.open(self.real, FLAGS)
        self._close = weakref.finalize(self, os.close, self.fd)
        info = os.fstat(self.fd)
        self.identity = (info.st_dev, info.st_ino)


def _now(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:  # gone, or a dangling or looping link
        return None


def _open(root: HeldRoot) -> bool:
    """Whether the root's descriptor is still open on the held folder."""
    try:
        info = os.fstat(root.fd)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == root.identity


def names(root: HeldRoot) -> bool:
    """Whether the root's path still names the held folder."""
    now = _now(root.path)
    return now is not None and stat.S_ISDIR(now.st_mode) and (now.st_dev, now.st_ino) == root.identity


def _what_happened(root: HeldRoot, was_link: bool) -> str:
    try:
        target = os.path.realpath(root.path)
    except OSError:  # changing as it is looked at
        return "was replaced"
    if not was_link and os.path.islink(root.path):
        return f"was replaced by a symlink to {target}"
    if was_link and Path(target) != root.real:
        return f"is a symlink that now leads to another folder ({target})"
    if os.path.islink(root.real):
        return f"was replaced by a symlink to {target}"
    return "was replaced by another folder"


class RootGuard:
    """The held root of one folder source, checked before each sync and each read."""

    def __init__(self, path: Path, label: str) -> None:
        self.path = Path(os.path.abspath(path))
        self.label = label
        self.was_link = os.path.islink(self.path)
        self._holder: Holder | None = None
        self._root: HeldRoot | None = None
        self._retired: list[HeldRoot] = []

    def hold(self, holder: Holder | None = None) -> None:
        """Hold the root now (at the knowledge base's start), through ``holder`` when given (a
        writable source's, shared with the note tools); a root missing now is held at its first sync."""
        self._holder = holder
        self._root = None
        if self.path.is_dir():
            self._take()

    def _take(self) -> HeldRoot | None:
        self.was_link = os.path.islink(self.path)
        try:
            self._root = self._holder() if self._holder is not None else OwnRoot(self.path)
        except OSError as exc:  # swapped or removed at this very moment: refused at the sync
            log.warning("%s: could not hold the folder %s: %s", self.label, self.path, exc)
        return self._root

    def current(self) -> HeldRoot:
        """The held root, at the start of a sync: held now if it was not; held anew if the held folder
        was deleted and a folder (not a symlink to one) stands at the same place; ``FileNotFoundError``
        when there is no folder at the path; ``Conflict`` when the path names another folder."""
        if not self.path.is_dir() and not (os.path.islink(self.path) and not self.was_link):
            raise FileNotFoundError(f"root folder {self.path} does not exist or is not a folder")
        root = self._root or self._take()
        if root is None:
            raise self._swapped(None)
        if not _open(root):  # its descriptor was closed (the knowledge base closed): the same folder again
            root = self._reopen(root)
        if not names(root) and self._remade(root):
            log.warning("%s: the folder %s was deleted and made again; indexing the new one", self.label, self.path)
            self._retired.append(root)  # its descriptor stays open: a scan running now may still use it
            self._root = None
            try:
                self._root = root = OwnRoot(self.path)
            except OSError:
                raise self._swapped(root) from None
        self.check(root)
        return root

    def _reopen(self, root: HeldRoot) -> HeldRoot:
        try:
            again = OwnRoot(self.path)
        except OSError:
            raise self._swapped(root) from None
        if again.identity != root.identity:
            raise self._swapped(root)
        self._root = again
        return again

    def _remade(self, root: HeldRoot) -> bool:
        try:
            gone = os.fstat(root.fd).st_nlink == 0
        except OSError:
            return False
        return (gone and os.path.realpath(self.path) == os.fspath(root.real)
                and (self.was_link or not os.path.islink(self.path)))

    def check(self, root: HeldRoot | None = None) -> None:
        """``Conflict`` unless the root's path still names the held folder (before each read)."""
        root = root or self._root
        if root is None or not names(root):
            raise self._swapped(root)

    def failure(self) -> str | None:
        """Why a sync of this source would fail now (``health``), or None."""
        root = self._root
        if root is None or names(root):
            return None
        return self._swapped(root).message

    def _swapped(self, root: HeldRoot | None) -> Conflict:
        if root is None:
            what = "changed while it was being opened (a symlink or no folder in its place)"
        elif not os.path.lexists(root.path):
            what = "is missing (removed or renamed)"
        else:
            what = _what_happened(root, self.was_link)
        return Conflict(f"the folder of source {self.label!r} ({self.path}) {what} since it was opened: a sync never "
                        "follows a swapped root, so nothing was read from it and nothing was deleted from the index; "
                        "put the folder back, or restart to index what is there now")


__all__ = ["FLAGS", "HeldRoot", "Holder", "OwnRoot", "RootGuard", "names"]
