"""Approximate nearest neighbours for large vector indexes: faiss HNSW graphs over float16 vectors.

``AnnGraph`` answers "the best ``fetch`` positions for this query among the allowed ones" in well
under a millisecond at 100k vectors, where the exact scan takes ~6 ms (and ~60 ms at 1M). Graph ids
are the ``VectorIndex`` positions: vectors are only ever appended, deleted positions are excluded by
the filter, and the owner rebuilds the graph when it compacts.

The choice (measured on this 2-core machine, 100k x 384 bag-of-words vectors, M=32,
efConstruction=40; see docs/benchmarks.md): faiss HNSW with float16 storage gives the recall of float32
(0.982 at efSearch 128) at half the memory; int8 storage lost 2 points of recall, usearch's int8 13
points, and hnswlib ships no wheel. faiss also takes a filter into the graph walk, so filters still
apply before the top-k cut.

An index of more than ``SHARD_SIZE`` vectors is several graphs of consecutive ids (shards), searched
at once on as many threads and their best merged: on two cores a million vectors answer in the time
of half a million, at the recall of a half-million graph.

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
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

log = logging.getLogger(__name__)

LINKS = 32  # HNSW M: neighbours per node
BUILD_EFFORT = 40  # efConstruction
#: efSearch (at least; more when more results are wanted) by shard size: (vectors from, efSearch).
#: Measured on benchmarks/scale.py's vectors (exact recall@10, p50 in process, 2 idle cores):
#: 100k 0.96 at 256; 300k 0.937 / 0.953 / 0.965 at 256 / 384 / 512 (1.3 / 1.9 / 2.3 ms);
#: 1M in two shards 0.947 / 0.9585 / 0.9625 / 0.965 / 0.9735 at 512 / 640 / 704 / 768 / 1024
#: (3.2 / 3.7-3.9 / 4.0-4.4 / 4.2-4.3 / 4.4-5.4 ms); one 1M graph needed 1024 for 0.954 (6.9 ms).
SEARCH_EFFORT = ((0, 256), (200_000, 512), (400_000, 640))
ADD_BATCH = 2048  # vectors added per graph lock hold: searches wait at most one batch
SHARD_SIZE = 500_000  # vectors per graph; a larger index is several graphs, searched at once
EXACT_BELOW = 20_000  # allowed positions below which a filtered search scores them exactly
FORMAT = 1
MANIFEST = "ann.json"


def search_effort(n: int) -> int:
    """efSearch for a graph (shard) of ``n`` vectors (``SEARCH_EFFORT``)."""
    return max(effort for start, effort in SEARCH_EFFORT if n >= start)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """Threads that walk the shards after the first (the caller's thread walks the first): one per
    core, so concurrent searches do not queue behind one helper (threads start only when needed)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(os.cpu_count() or 2, thread_name_prefix="ann-shard")
        return _POOL


def _faiss() -> Any:
    import faiss  # a compiled library: imported only when an index grows large enough to need it

    return faiss


class _Shard:
    """One faiss graph: the ids ``start`` .. ``start + len - 1`` of the whole ``AnnGraph``."""

    def __init__(self, start: int, index: Any, source: BinaryIO | None = None) -> None:
        self.start = start
        self.index = index
        self.lock = threading.Lock()  # faiss does not allow a search during an add
        self.source = source  # the open snapshot file the vectors are mapped from, if any
        if source is not None:
            weakref.finalize(self, source.close)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def own(self) -> None:
        """Read a mapped graph whole into memory (faiss aborts the process on growing a mapped one).
        Call with the lock held."""
        if self.source is None:
            return
        faiss = _faiss()
        self.source.seek(0)
        self.index = faiss.read_index(faiss.PyCallbackIOReader(self.source.read, 1 << 24))
        self.source.close()
        self.source = None


class AnnGraph:
    """HNSW graphs over unit vectors (inner product = cosine), ids 0..n-1 in order of ``add``.

    The ids are split into shards of ``SHARD_SIZE`` consecutive ids, one faiss graph each; a search
    walks the shards at once on as many threads (faiss releases the GIL), so a million vectors are
    searched in the time of half a million. Only the last shard grows.

    Thread-safe: each shard has a lock that ``add`` and ``search`` take, and ``add`` holds it for at
    most ``ADD_BATCH`` vectors at a time.
    """

    def __init__(self, dims: int, indexes: Sequence[tuple[Any, BinaryIO | None]] = ()) -> None:
        """A new empty graph, or loaded shards (faiss indexes in id order, each with the open file
        its vectors are mapped from, closed with the graph)."""
        self.dims = dims
        self._shards: list[_Shard] = []
        start = 0
        for index, source in indexes:
            self._shards.append(_Shard(start, index, source))
            start += int(index.ntotal)
        if not self._shards:
            self._shards.append(_Shard(0, self._new_index()))

    def _new_index(self) -> Any:
        faiss = _faiss()
        index = faiss.IndexHNSWSQ(self.dims, faiss.ScalarQuantizer.QT_fp16, LINKS, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = BUILD_EFFORT
        index.train(np.zeros((1, self.dims), np.float32))  # float16 needs no training data
        return index

    @property
    def mapped(self) -> bool:
        """True while the vectors of the last shard (the one that grows) are mapped from the snapshot
        file (until the first ``add``); full shards stay mapped."""
        return self._shards[-1].source is not None

    @property
    def shards(self) -> int:
        return len(self._shards)

    def __len__(self) -> int:
        last = self._shards[-1]
        return last.start + len(last)

    @property
    def nbytes(self) -> int:
        """Approximate memory held: float16 vectors plus the level-0 links."""
        return len(self) * (2 * self.dims + 2 * LINKS * 4)

    def add(self, vectors: np.ndarray) -> None:
        """Append rows of ``vectors`` (unit float32) as the next ids."""
        block = np.ascontiguousarray(vectors, dtype=np.float32)
        done = 0
        while done < len(block):
            shard = self._shards[-1]
            if len(shard) >= SHARD_SIZE:
                shard = _Shard(shard.start + len(shard), self._new_index())
                self._shards.append(shard)
            take = min(ADD_BATCH, SHARD_SIZE - len(shard), len(block) - done)
            with shard.lock:
                shard.own()
                shard.index.add(block[done : done + take])
            done += take

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of ``ids`` (as float32, float16 precision)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.zeros((len(ids), self.dims), np.float32)
        shards = list(self._shards)
        which = np.searchsorted([s.start for s in shards], ids, side="right") - 1
        for number in np.unique(which).tolist():
            at = np.flatnonzero(which == number)
            shard = shards[number]
            with shard.lock:
                out[at] = shard.index.reconstruct_batch(ids[at] - shard.start)
        return out

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
        shards = [s for s in self._shards if s.start < n]
        if len(shards) == 1:
            return self._search_shard(shards[0], q, fetch, mask, n)
        pool = _pool()
        others = [pool.submit(self._search_shard, shard, q, fetch, mask, n) for shard in shards[1:]]
        parts = [self._search_shard(shards[0], q, fetch, mask, n), *(f.result() for f in others)]
        ids = np.concatenate([p[0] for p in parts])
        scores = np.concatenate([p[1] for p in parts])
        best = np.lexsort((ids, -scores))[:fetch]
        return ids[best], scores[best]

    def _search_shard(self, shard: _Shard, q: np.ndarray, fetch: int, mask: np.ndarray | None,
                      n: int) -> tuple[np.ndarray, np.ndarray]:
        """``search`` within one shard: global ids and scores, best first."""
        end = min(n, shard.start + len(shard))
        part = None if mask is None else mask[shard.start : end]
        if part is not None:
            allowed = int(np.count_nonzero(part))
            fetch = min(fetch, allowed)
            if fetch <= 0:
                return np.zeros(0, np.int64), np.zeros(0, np.float32)
            if allowed <= max(EXACT_BELOW, 4 * fetch):
                return self._exact(q, shard.start + np.flatnonzero(part), fetch)
        faiss = _faiss()
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(search_effort(len(shard)), fetch)
        bits = None
        if part is not None:
            bits = np.packbits(part, bitorder="little")  # ids from n on fall outside: not selected
            params.sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
        with shard.lock:
            scores, ids = shard.index.search(q.reshape(1, -1), fetch, params=params)
        del bits  # the selector pointed into it until here
        found = ids[0] >= 0
        if part is not None and int(np.count_nonzero(found)) < fetch:
            return self._exact(q, shard.start + np.flatnonzero(part), fetch)
        return ids[0][found].astype(np.int64) + shard.start, scores[0][found]

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
        """Write the graph's shards and ``arrays`` as one snapshot, then publish it with ``marker``
        (what the snapshot reflects, compared by the loader) and remove older snapshots."""
        faiss = _faiss()
        folder.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(6)
        graph_files = []
        for number, shard in enumerate(list(self._shards)):
            graph_files.append(folder / f"ann-{token}-{number}.faiss")
            with shard.lock:
                faiss.write_index(shard.index, str(graph_files[-1]))
        arrays_file = folder / f"ann-{token}.npz"
        with open(arrays_file, "wb") as out:
            np.savez(out, **dict(arrays))  # type: ignore[arg-type]
        for path in (*graph_files, arrays_file):
            _fsync(path)
        manifest = {"format": FORMAT, "token": token, "dims": self.dims, "count": len(self),
                    "graphs": [path.name for path in graph_files], **marker}
        _replace_text(folder / MANIFEST, json.dumps(manifest))
        for old in folder.glob("ann-*"):
            if token not in old.name:
                old.unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: Path,
             required: Mapping[str, Any]) -> tuple[AnnGraph, dict[str, np.ndarray], dict[str, Any]] | None:
        """The snapshot in ``folder`` with its marker, if the marker has the ``required`` values and
        its shards the sizes ``add`` makes (else None: made by another embedder or version, damaged or
        missing; the caller rebuilds from the database)."""
        indexes: list[tuple[Any, BinaryIO | None]] = []
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
            if manifest.get("format") != FORMAT or any(manifest.get(k) != v for k, v in required.items()):
                return None
            token = manifest["token"]
            faiss = _faiss()
            for name in manifest.get("graphs", [f"ann-{token}.faiss"]):  # one unsharded file before shards
                graph_file = folder / Path(name).name
                source = open(graph_file, "rb")  # kept open by the graph: see ``_Shard.own``
                try:
                    indexes.append((faiss.read_index(str(graph_file), faiss.IO_FLAG_MMAP_IFC), source))
                except BaseException:
                    source.close()
                    raise
            sizes = [int(index.ntotal) for index, _ in indexes]
            if any(size != SHARD_SIZE for size in sizes[:-1]) or sizes[-1] > SHARD_SIZE:
                log.info("vector graph in %s has shards of another size; rebuilding it", folder)
                return None
            dims = int(manifest["dims"])
            if any(index.d != dims for index, _ in indexes):
                return None
            graph, indexes = cls(dims, indexes), []
            with np.load(folder / f"ann-{token}.npz") as stored:
                arrays = {name: stored[name] for name in stored.files}
            if len(graph) != manifest["count"]:
                return None
            return graph, arrays, manifest
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError, RuntimeError) as exc:
            log.warning("vector graph in %s is unreadable (%s); rebuilding it from the database", folder, exc)
            return None
        finally:
            for _, unused in indexes:  # not handed to a graph
                if unused is not None:
                    unused.close()


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
