"""One result per file when sources overlap (``config/roots.py``): a file two sources reach is two
documents, with the same text and scores; a search lists it once, as the document of the source
that wins it (the deeper folder, else the one declared first), at the place of its better copy.

The retrievers are asked for ``most`` times the results wanted (``most``: the most sources one file
can be reached through), so the list stays full after the copies go. A file's identity is its
source's real folder joined with its ``source_id`` (the path as listed under that folder). With no
overlapping sources there is no ``Copies`` and searches do nothing more; with some, one read of the
candidates' sources and paths (no bodies) per search.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from context_harness.config import Config
from context_harness.config.roots import SourceRoot, most_copies, overlaps, source_roots
from context_harness.store.backend import DocumentStorage


class HasDocId(Protocol):
    @property
    def doc_id(self) -> str: ...


T = TypeVar("T", bound=HasDocId)


class Copies:
    def __init__(self, roots: list[SourceRoot]) -> None:
        self.roots = {root.label: root for root in roots}
        self.most = most_copies(roots)

    @classmethod
    def of(cls, config: Config) -> Copies | None:
        """The sources of ``config`` whose folders overlap; None when none do."""
        found = overlaps(source_roots(config))
        if not found:
            return None
        return cls([root for overlap in found for root in (overlap.kept, overlap.other)])

    def distinct(self, items: list[T], store: DocumentStorage) -> list[T]:
        """``items`` (best first) with each file once: its winning source's copy, at the place of the
        first copy listed."""
        ids = [item.doc_id for item in items]
        rows = store.summaries(ids)
        keys: list[str | None] = []
        best: dict[str, tuple[tuple[int, int], int]] = {}  # file -> (rank, position) of its winning copy
        for at, doc in enumerate(ids):
            row = rows.get(doc)
            root = self.roots.get(row.source) if row is not None else None
            if row is None or root is None:
                keys.append(None)
                continue
            key = f"{root.path.rstrip('/')}/{row.source_id}"
            keys.append(key)
            if key not in best or root.rank < best[key][0]:
                best[key] = (root.rank, at)
        out: list[T] = []
        placed: set[str] = set()
        for at, found in enumerate(keys):
            if found is None:
                out.append(items[at])
            elif found not in placed:
                placed.add(found)
                out.append(items[best[found][1]])
        return out
