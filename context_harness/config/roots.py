"""Where each folder source reads from, as real paths, and which of them overlap.

A folder source (``[connectors.filesystem.NAME]``) reads its ``root``; a git source
(``[connectors.git.NAME]``) its checkout, ``<data>/git/NAME``, at its ``root`` inside the repository.
Two sources overlap when one's folder is the other's or inside it (symlinks resolved): every file
there is indexed twice. Which copy counts: the more specific source's (the deeper folder), and of
two sources over the same folder the one declared first (folder sources in config order, then git
sources). ``core/reports`` says so in ``ctx sync``, ``ctx sources``, ``ctx doctor`` and the console;
``search/copies`` lists such a file once in search results.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from context_harness.config import Config


def git_checkout(config: Config, name: str) -> Path:
    """Where the git source ``name`` is cloned (``connectors/kinds.py`` clones it there)."""
    return config.data_dir / "git" / name


@dataclass(frozen=True)
class SourceRoot:
    label: str  # "filesystem:docs"
    table: str  # "[connectors.filesystem.docs]"
    path: str  # the folder it reads, symlinks resolved
    order: int  # its place among the folder and git sources of the config

    @property
    def rank(self) -> tuple[int, int]:
        """Lower wins a file two sources reach: the deeper folder, then the one declared first."""
        return -len(PurePath(self.path).parts), self.order


@dataclass(frozen=True)
class Overlap:
    kept: SourceRoot  # the source whose copy counts (deeper, or declared first)
    other: SourceRoot  # the source whose folder holds kept's (or is it)
    inside: str  # kept's folder relative to other's, "/"-separated; "" when the same folder


def source_roots(config: Config) -> list[SourceRoot]:
    """The folder and git sources of ``config`` with the real path of the folder each reads."""
    roots: list[SourceRoot] = []
    for name, entry in config.connectors.filesystem.items():
        roots.append(SourceRoot(f"filesystem:{name}", f"[connectors.filesystem.{name}]",
                                _real(entry.root), len(roots)))
    for name, git in config.connectors.git.items():
        roots.append(SourceRoot(f"git:{name}", f"[connectors.git.{name}]",
                                _real(git_checkout(config, name) / git.root), len(roots)))
    return roots


def _real(path: str | os.PathLike[str]) -> str:
    """``path`` with its symlinks resolved; as written (absolute) when it changes while being resolved
    (Python 3.11's ``realpath`` raises when a link is swapped between its steps, even not strict)."""
    try:
        return os.path.realpath(path)
    except OSError:
        return os.path.abspath(path)


def overlaps(roots: list[SourceRoot]) -> list[Overlap]:
    """Every pair of ``roots`` whose folders are the same or one inside the other, in config order."""
    found = []
    for i, first in enumerate(roots):
        for second in roots[i + 1:]:
            kept, other = sorted((first, second), key=lambda r: r.rank)
            inside = _inside(kept.path, other.path)
            if inside is not None:
                found.append(Overlap(kept, other, inside))
    return found


def most_copies(roots: list[SourceRoot]) -> int:
    """The most sources one file can be reached through (1 when no folders overlap)."""
    return max((sum(_inside(r.path, q.path) is not None for q in roots) for r in roots), default=1)


def _inside(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` ("/"-separated, "" for the same), or None when it is not inside."""
    try:
        rel = PurePath(path).relative_to(PurePath(folder))
    except ValueError:
        return None
    return "" if rel == PurePath(".") else rel.as_posix()
