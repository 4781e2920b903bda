"""Approximate nearest neighbours for large vector indexes: a faiss HNSW graph over float16 vectors.

``AnnGraph`` answers "the best ``fetch`` positions for this query among the allowed ones" in well
under a millisecond at 100k vectors, where the exact scan takes ~6 ms (and ~60 ms at 1M). Graph ids
are the ``VectorIndex`` positions: vectors are only ever appended, deleted positions are excluded by
the filter, and the owner rebuilds the graph when it compacts.

The choice (measured on this 2-core machine, 100k x 384 bag-of-words vectors, M=32,
efConstruction=40; see the README): faiss HNSW with float16 storage gives the recall of float32
(0.982 at efSearch 128) at half the memory; int8 storage lost 2 points of recall, usearch's int8 13
points, and hnswlib ships no wheel. faiss also takes a filter into the graph walk, so filters still
apply before the top-k cut.

``save``/``load`` persist the graph with the position maps beside the SQLite file; a snapshot is a set
of files named by one token and published by replacing ``ann.json`` last, so a crash leaves either
the old snapshot or the new one, never a mix. A loaded graph maps its float16 vectors from the file
(faiss' ``IO_FLAG_MMAP_IFC``) instead of reading them: opening 1M vectors takes 0.2 s, not 1.6 s. A
mapped graph cannot grow, so the first ``add`` reads it whole from the file handle kept open since
the load (snapshot files are never rewritten, only replaced by new ones and unlinked, which leaves an
open handle and a mapping readable).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

log = logging.getLogger(__name__)

LINKS = 32  # HNSW M: neighbours per node
BUILD_EFFORT = 40  # efConstruction
#: efSearch (at least; more when more results are wanted) by graph size: (vectors from, efSearch).
#: Measured on benchmarks/scale.py's vectors (exact recall@10, p50 in process, 2 idle cores):
#: 100k 0.96 at 256; 300k 0.937 / 0.953 / 0.965 at 256 / 384 / 512 (1.3 / 1.9 / 2.3 ms);
#: 1M 0.930 / 0.944 / 0.954 at 512 / 768 / 1024 (3.7 / 5.4 / 6.9 ms).
SEARCH_EFFORT = ((0, 256), (200_000, 512), (500_000, 1024))
ADD_BATCH = 2048  # vectors added per graph lock hold: searches wait at most one batch
EXACT_BELOW = 20_000  # allowed positions below which a filtered search scores them exactly
FORMAT = 1
MANIFEST = "ann.json"


def search_effort(n: int) -> int:
    """efSearch for a graph of ``n`` vectors (``SEARCH_EFFORT``)."""
    return max(effort for start, effort in SEARCH_EFFORT if n >= start)


def _faiss() -> Any:
    import faiss  # a compiled library: imported only when an index grows large enough to need it

    return faiss


class AnnGraph:
    """An HNSW graph over unit vectors (inner product = cosine), ids 0..n-1 in order of ``add``.

    Thread-safe: ``add`` and ``search`` take one lock (faiss does not allow a search during an add),
    and ``add`` holds it for at most ``ADD_BATCH`` vectors at a time.
    """

    def __init__(self, dims: int, index: Any = None, source: BinaryIO | None = None) -> None:
        """A new empty graph, or ``index`` (a loaded one; ``source``: the open file its vectors are
        mapped from, closed with the graph)."""
        faiss = _faiss()
        if index is None:
            index = faiss.IndexHNSWSQ(dims, faiss.ScalarQuantizer.QT_fp16, LINKS, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = BUILD_EFFORT
            index.train(np.zeros((1, dims), np.float32))  # float16 needs no training data
        self.dims = dims
        self._index = index
        self._lock = threading.Lock()
        self._source = source
        if source is not None:
            weakref.finalize(self, source.close)

    @property
    def mapped(self) -> bool:
        """True while the vectors are mapped from the snapshot file (until the first ``add``)."""
        return self._source is not None

    def _own(self) -> None:
        """Read a mapped graph whole into memory (faiss aborts the process on growing a mapped one).
        Call with the lock held."""
        if self._source is None:
            return
        faiss = _faiss()
        self._source.seek(0)
        self._index = faiss.read_index(faiss.PyCallbackIOReader(self._source.read, 1 << 24))
        self._source.close()
        self._source = None

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def nbytes(self) -> int:
        """Approximate memory held: float16 vectors plus the level-0 links."""
        return len(self) * (2 * self.dims + 2 * LINKS * 4)

    def add(self, vectors: np.ndarray) -> None:
        """Append rows of ``vectors`` (unit float32) as the next ids."""
        block = np.ascontiguousarray(vectors, dtype=np.float32)
        for start in range(0, len(block), ADD_BATCH):
            with self._lock:
                self._own()
                self._index.add(block[start : start + ADD_BATCH])

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of ``ids`` (as float32, float16 precision)."""
        if len(ids) == 0:
            return np.zeros((0, self.dims), np.float32)
        with self._lock:
            return np.asarray(self._index.reconstruct_batch(np.asarray(ids, dtype=np.int64)), dtype=np.float32)

    def search(self, q: np.ndarray, fetch: int, mask: np.ndarray | None,
               n: int) -> tuple[np.ndarray, np.ndarray]:
        """The best ``fetch`` ids below ``n`` (by inner product with ``q``) among those where ``mask``
        is True (all when None): ``(ids, scores)``, best first. Few allowed ids are scored exactly;
        otherwise the filter goes into the graph walk, and a walk that comes back short is redone
        exactly. Ids from ``n`` on (added since the caller's snapshot) are never returned."""
        if mask is None and len(self) > n:
            mask = np.ones(n, dtype=bool)
        allowed = n if mask is None else int(np.count_nonzero(mask[:n]))
        fetch = min(fetch, allowed)
        if fetch <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if mask is not None and allowed <= max(EXACT_BELOW, 4 * fetch):
            return self._exact(q, np.flatnonzero(mask[:n]), fetch)
        faiss = _faiss()
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(search_effort(n), fetch)
        bits = None
        if mask is not None:
            bits = np.packbits(mask[:n], bitorder="little")  # ids from n on fall outside: not selected
            params.sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
        with self._lock:
            scores, ids = self._index.search(q.reshape(1, -1), fetch, params=params)
        del bits  # the selector pointed into it until here
        found = ids[0] >= 0
        if mask is not None and int(np.count_nonzero(found)) < fetch:
            return self._exact(q, np.flatnonzero(mask[:n]), fetch)
        return ids[0][found].astype(np.int64), scores[0][found]

    def _exact(self, q: np.ndarray, ids: np.ndarray, fetch: int) -> tuple[np.ndarray, np.ndarray]:
        scores = np.empty(len(ids), np.float32)
        for start in range(0, len(ids), 65536):  # bounded float32 copies
            part = ids[start : start + 65536]
            scores[start : start + len(part)] = self.vectors(part) @ q
        best = np.argpartition(-scores, fetch - 1)[:fetch] if fetch < len(ids) else np.arange(len(ids))
        best = best[np.lexsort((ids[best], -scores[best]))]
        return ids[best], scores[best]

    # -- persistence ----------------------------------------------------------------------------

    def save(self, folder: Path, arrays: Mapping[str, np.ndarray], marker: Mapping[str, Any]) -> None:
        """Write the graph and ``arrays`` as one snapshot, then publish it with ``marker`` (what the
        snapshot reflects, compared by the loader) and remove older snapshots."""
        faiss = _faiss()
        folder.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(6)
        graph_file, arrays_file = folder / f"ann-{token}.faiss", folder / f"ann-{token}.npz"
        with self._lock:
            faiss.write_index(self._index, str(graph_file))
        with open(arrays_file, "wb") as out:
            np.savez(out, **dict(arrays))  # type: ignore[arg-type]
        for path in (graph_file, arrays_file):
            _fsync(path)
        manifest = {"format": FORMAT, "token": token, "dims": self.dims, "count": len(self), **marker}
        _replace_text(folder / MANIFEST, json.dumps(manifest))
        for old in folder.glob("ann-*"):
            if token not in old.name:
                old.unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: Path,
             required: Mapping[str, Any]) -> tuple[AnnGraph, dict[str, np.ndarray], dict[str, Any]] | None:
        """The snapshot in ``folder`` with its marker, if the marker has the ``required`` values (else
        None: made by another embedder, damaged or missing; the caller rebuilds from the database)."""
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
            if manifest.get("format") != FORMAT or any(manifest.get(k) != v for k, v in required.items()):
                return None
            token = manifest["token"]
            faiss = _faiss()
            graph_file = folder / f"ann-{token}.faiss"
            source = open(graph_file, "rb")  # kept open by the graph: see ``_own``
            try:
                index = faiss.read_index(str(graph_file), faiss.IO_FLAG_MMAP_IFC)
            except BaseException:
                source.close()
                raise
            graph = cls(int(manifest["dims"]), index, source)
            with np.load(folder / f"ann-{token}.npz") as stored:
                arrays = {name: stored[name] for name in stored.files}
            if len(graph) != manifest["count"] or graph.dims != index.d:
                return None
            return graph, arrays, manifest
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
            log.warning("vector graph in %s is unreadable (%s); rebuilding it from the database", folder, exc)
            return None


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_text(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    temp.write_text(text)
    _fsync(temp)
    os.replace(temp, path)
