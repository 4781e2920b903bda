"""The in-memory search index over the stored vectors: exact cosine top-k in numpy, or an
approximate graph (``ann.AnnGraph``) once the index holds ``ANN_FROM`` vectors.

``VectorIndex`` holds the vectors of the current chunks, one position per chunk (position -> chunk
id, doc id): in one float32 matrix while small, in an HNSW graph of float16 vectors when large (the
graph and the position maps are then saved beside the database, so opening a large index reads two
files instead of every vector). ``refresh()`` applies chunk/vector changes incrementally, and filters
are applied before the top-k cut. It reads through its ``VectorStore`` and runs no SQL.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from context_harness.embedding.base import EmbedderIdentity, EmbedderMismatch
from context_harness.store.ann import AnnGraph
from context_harness.store.chunk_scores import document_score


class VectorSource(Protocol):
    """What the index reads from its ``VectorStore`` (kept as a protocol: the store imports the index)."""

    def identity(self) -> EmbedderIdentity | None: ...

    def generation(self) -> int: ...

    def snapshot(self) -> AbstractContextManager[Any]: ...

    def vector_batches(self) -> Iterator[list[tuple[str, bytes]]]: ...

    def chunk_batches(self) -> Iterator[list[tuple[str, str, str]]]: ...

    def chunk_map(self) -> dict[str, tuple[str, str]]: ...

    def vectors_of(self, hashes: Iterable[str]) -> dict[str, np.ndarray]: ...

    def count(self) -> int: ...

    def marker(self) -> dict[str, Any]: ...

log = logging.getLogger(__name__)

_COMPACT_FRACTION = 0.2  # compact the matrix when this share of rows is dead
_GROWTH = 1.1  # capacity growth on append (keeps memory within ~1.1x the live vectors)
_GATHER_FRACTION = 0.02  # at most this share of positions allowed: score only those (a column gather is slow)
_MAX_RUNS = 256  # allowed rows in at most this many contiguous runs: score the runs as slices
ANN_FROM = 20_000  # vectors from which the index is an approximate graph (below, the exact scan is as fast)
_SAVE_SHARE = 0.01  # save the graph after a refresh once this share of positions changed since the last save

RowFilter = np.ndarray | Collection[str] | None
Hit = tuple[str, str, float]  # (chunk_id, doc_id, cosine score)


class VectorIndex:
    """The vectors of the current chunks in one float32 matrix, for exact top-k by cosine.

    The matrix is stored dims x capacity, a column per chunk: scoring is then one ``q @ M``, which
    BLAS runs about 1.5x faster than ``M @ q`` over row vectors (both are bound by memory reads).
    "Rows" below are chunk positions, i.e. columns. Positions map to ``(chunk_id, doc_id)``;
    deleted positions are tombstoned and compacted away once they exceed a fifth of the matrix.
    Thread-safe: searches read a consistent snapshot.
    """

    def __init__(self, store: VectorSource, folder: Path | None = None) -> None:
        self.store = store
        self.folder = folder  # where a large index saves its graph (None: kept in memory only)
        self.dims = 0
        self.identity: EmbedderIdentity | None = None
        self._generation = -1
        self._loading: tuple[EmbedderIdentity | None, int] = (None, -1)  # what ``_load`` reads, until installed
        self._lock = threading.Lock()  # guards the arrays (short critical sections)
        self._update_lock = threading.Lock()  # one load/refresh at a time
        self._columns = np.zeros((0, 0), dtype=np.float32)  # dims x capacity
        self._n = 0  # positions in use (live or dead)
        self._live = np.zeros(0, dtype=bool)
        self._dead = 0
        self._chunk_ids = np.zeros(0, dtype="S32")  # ASCII ids as fixed-width bytes: far smaller than str objects
        self._doc_codes = np.zeros(0, dtype=np.int32)
        self._hash_keys = np.zeros(0, dtype=np.int64)
        self._docs: list[str] = []
        self._doc_index: dict[str, int] = {}
        self._embedded_docs: frozenset[str] | None = None  # doc_ids(), until the next change
        self._graph: AnnGraph | None = None  # the approximate index, once large (then no matrix)
        self._unsaved = 0  # positions changed since the graph was last saved

    # -- size and memory ----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n - self._dead

    @property
    def approximate(self) -> bool:
        """Whether searches walk the approximate graph (the index holds ``ANN_FROM`` vectors or more)."""
        return self._graph is not None

    @property
    def nbytes(self) -> int:
        """Bytes held by the vectors (matrix or graph) and the numpy position maps (not the document
        id strings)."""
        graph = self._graph.nbytes if self._graph is not None else 0
        return (self._columns.nbytes + graph + self._live.nbytes + self._doc_codes.nbytes
                + self._hash_keys.nbytes + self._chunk_ids.nbytes)

    def doc_ids(self) -> frozenset[str]:
        """Documents with at least one embedded chunk in the index (kept until the index changes:
        every hybrid search asks)."""
        with self._lock:
            if self._embedded_docs is None:
                codes = np.unique(self._doc_codes[: self._n][self._live[: self._n]])
                self._embedded_docs = frozenset(self._docs[c] for c in codes.tolist())
            return self._embedded_docs

    # -- loading ------------------------------------------------------------------------------

    def load(self) -> None:
        """(Re)build the matrix from the database."""
        with self._update_lock:
            self._load()

    def _load(self) -> None:
        identity = self.store.identity()
        self._loading = (identity, self.store.generation())  # installed with the arrays (``_install``)
        dims = identity.dims if identity else 0
        docs: list[str] = []
        doc_index: dict[str, int] = {}
        if not dims:
            self._install(np.zeros((dims, 0), np.float32), np.zeros(0, "S32"), np.zeros(0, np.int32),
                          np.zeros(0, np.int64), docs, doc_index)
            return
        started = time.monotonic()
        if self._load_saved(dims):
            log.info("vector graph opened: %d chunks x %d dims (%.1f MB) in %.2f s", len(self), dims,
                     self.nbytes / 1e6, time.monotonic() - started)
            return
        with self.store.snapshot():
            # Two sequential scans matched in numpy beat one SQL join (two B-tree lookups per chunk),
            # and both stream in batches, so no Python object per chunk outlives its batch (memory).
            graph = AnnGraph(dims) if self.store.count() >= ANN_FROM else None
            marker = self.store.marker() if graph is not None else {}
            chunk_ids, chunk_codes, chunk_keys = self._scan_chunks(docs, doc_index)
            columns, placed = self._scan_vectors(chunk_keys, dims, graph)
        chunks = np.concatenate(placed) if placed else np.zeros(0, np.int64)
        self._install(columns, chunk_ids[chunks], chunk_codes[chunks], chunk_keys[chunks], docs, doc_index, graph)
        log.info("vector index %s: %d chunks x %d dims (%.1f MB) in %.1f s", "built" if graph else "loaded",
                 len(chunks), dims, self.nbytes / 1e6, time.monotonic() - started)
        if graph is not None:
            self._save(marker)

    def _identity_marker(self) -> dict[str, Any]:
        """What a saved graph must match to be used at all (else it is rebuilt)."""
        identity, generation = self._loading  # the installed ones, or those being loaded
        return {"identity": identity.key if identity else None, "generation": generation}

    def _load_saved(self, dims: int) -> bool:
        """Open the saved graph if it was made by this embedder and generation; a graph saved before
        later changes is brought up to date incrementally. False when there is none to use."""
        if self.folder is None:
            return False
        loaded = AnnGraph.load(self.folder, {**self._identity_marker(), "dims": dims})
        if loaded is None:
            return False
        graph, arrays, saved = loaded
        try:
            docs = arrays["docs"].astype(str).tolist()
            chunk_ids, codes, keys, live = arrays["chunk_ids"], arrays["codes"], arrays["keys"], arrays["live"]
            if not len(chunk_ids) == len(codes) == len(keys) == len(live) == len(graph):
                raise ValueError("position maps and graph differ in length")
        except (KeyError, ValueError) as exc:
            log.warning("saved vector graph in %s is inconsistent (%s); rebuilding it", self.folder, exc)
            return False
        self._install(np.zeros((dims, 0), np.float32), chunk_ids, codes.astype(np.int32), keys.astype(np.int64),
                      docs, {doc: i for i, doc in enumerate(docs)}, graph, live.astype(bool))
        if any(saved.get(key) != value for key, value in self.store.marker().items()):
            self._apply_changes()  # saved before the last writes: catch up
        return True

    def _save(self, marker: dict[str, Any] | None = None) -> None:
        """Save the graph and position maps (``marker``: the store state they reflect, read before
        them; default: now). A failure is logged: the next open rebuilds from the database."""
        graph = self._graph
        if graph is None or self.folder is None:
            return
        marker = marker if marker is not None else self.store.marker()
        with self._lock:
            n = self._n
            arrays = {"chunk_ids": self._chunk_ids[:n], "codes": self._doc_codes[:n], "keys": self._hash_keys[:n],
                      "live": self._live[:n], "docs": np.array(self._docs, dtype=str)}
        try:
            graph.save(self.folder, arrays, {**marker, **self._identity_marker()})
            self._unsaved = 0
        except OSError as exc:
            log.warning("could not save the vector graph in %s (%s); the next start rebuilds it", self.folder, exc)

    def _scan_vectors(self, chunk_keys: np.ndarray, dims: int,
                      graph: AnnGraph | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
        """Every stored vector in the columns of the chunks with its hash key, or into ``graph`` when
        given: (the matrix, possibly with slack, empty for a graph; and the chunk position of each
        filled column, in blocks). Orphans are skipped."""
        order = np.argsort(chunk_keys, kind="stable")
        sorted_keys = chunk_keys[order]
        capacity = len(chunk_keys) if graph is None else 0
        columns = np.empty((dims, capacity), dtype=np.float32)  # pages untouched until filled
        placed: list[np.ndarray] = []  # the chunk each column holds
        n = 0
        for rows in self.store.vector_batches():
            keys = _hash_keys([row[0] for row in rows])
            low = np.searchsorted(sorted_keys, keys, "left")
            counts = np.searchsorted(sorted_keys, keys, "right") - low
            total = int(counts.sum())  # 0 for an orphan vector, 2+ for text shared by several chunks
            if total == 0:
                continue
            block = _blocks_to_matrix([row[1] for row in rows], dims)
            if total != len(rows) or not (counts == 1).all():
                block = block[np.repeat(np.arange(len(rows)), counts)]
            within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            placed.append(order[np.repeat(low, counts) + within])
            if graph is not None:
                graph.add(block)
                n += total
                continue
            if n + total > capacity:  # chunks added since the scan cannot match; defensive
                capacity = n + total
                columns = _grown_columns(columns, capacity)
            _put_columns(columns, n, block)
            n += total
        if graph is None and n < 0.9 * capacity:  # many chunks still pending: do not keep the slack
            columns = np.ascontiguousarray(columns[:, :n])
        return columns, placed

    def _scan_chunks(self, docs: list[str], doc_index: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every chunk's id, document code and hash key, as numpy arrays (``docs`` gets filled)."""
        ids, codes, keys = [], [], []
        for rows in self.store.chunk_batches():
            ids.append(_id_array([row[0] for row in rows]))
            for row in rows:
                if row[1] not in doc_index:
                    doc_index[row[1]] = len(docs)
                    docs.append(row[1])
            codes.append(np.fromiter((doc_index[row[1]] for row in rows), dtype=np.int32, count=len(rows)))
            keys.append(_hash_keys([row[2] for row in rows]))
        if not ids:
            return np.zeros(0, "S32"), np.zeros(0, np.int32), np.zeros(0, np.int64)
        width = max(a.dtype.itemsize for a in ids)
        return np.concatenate([a.astype(f"S{width}") for a in ids]), np.concatenate(codes), np.concatenate(keys)

    def _install(self, columns: np.ndarray, chunk_ids: np.ndarray, codes: np.ndarray, keys: np.ndarray,
                 docs: list[str], doc_index: dict[str, int], graph: AnnGraph | None = None,
                 live: np.ndarray | None = None) -> None:
        capacity = max(columns.shape[1], len(chunk_ids))
        live = np.ones(len(chunk_ids), dtype=bool) if live is None else live
        with self._lock:
            # The identity changes with the arrays: a search reads both from one state (a model switch).
            self.identity, self._generation = self._loading
            self.dims = columns.shape[0]
            self._columns = columns
            self._graph = graph
            self._n = len(chunk_ids)
            self._live = _grown(live, capacity)
            self._dead = len(chunk_ids) - int(np.count_nonzero(live))
            self._chunk_ids = _grown(chunk_ids, capacity)
            self._doc_codes = _grown(codes, capacity)
            self._hash_keys = _grown(keys, capacity)
            self._docs = docs
            self._doc_index = doc_index
            self._embedded_docs = None

    def refresh(self) -> tuple[int, int]:
        """Apply chunk and vector changes since the last load; returns (rows added, rows removed).

        Reads only chunk ids and hashes, plus the vectors of new rows; a new embedder identity
        (after ``ctx embed rebuild``) triggers a full reload.
        """
        with self._update_lock:
            return self._refresh()

    def _refresh(self) -> tuple[int, int]:
        identity = self.store.identity()
        if identity is None or identity != self.identity or self.store.generation() != self._generation:
            before = len(self)
            self._load()
            return len(self), before
        marker = self.store.marker() if self._graph is not None else None  # read before the changes
        added, removed = self._apply_changes()
        self._unsaved += added + removed
        if self._graph is None and len(self) >= ANN_FROM:
            marker = self.store.marker()
            more, fewer = self._apply_changes()  # whatever was written meanwhile
            self._become_graph()
            self._save(marker)
            return added + more, removed + fewer
        if marker is not None and self._unsaved > _SAVE_SHARE * max(self._n, 1):
            self._save(marker)
        return added, removed

    def _apply_changes(self) -> tuple[int, int]:
        """Bring the positions up to the store's chunks and vectors: (rows added, rows removed)."""
        # Chunks without a vector drop out below, when their vector is not found.
        current = self.store.chunk_map()
        n, ids = self._n, self._chunk_ids[: self._n].astype(str).tolist()
        now = [current.get(chunk_id) for chunk_id in ids[:n]]
        now_codes = np.fromiter(
            (self._doc_index.get(x[0], -1) if x else -1 for x in now), dtype=np.int64, count=n
        )
        now_keys = _hash_keys([x[1] if x else "0" * 16 for x in now])  # missing: code -1 differs anyway
        changed = (now_codes != self._doc_codes[:n]) | (now_keys != self._hash_keys[:n])
        kill_mask = self._live[:n] & changed  # gone, moved to another document, or new text
        kept = {ids[i] for i in np.flatnonzero(self._live[:n] & ~changed)}
        kill = np.flatnonzero(kill_mask)
        added = [(cid, doc, h) for cid, (doc, h) in current.items() if cid not in kept]
        vectors = self.store.vectors_of({h for _, _, h in added})
        added = [row for row in added if row[2] in vectors]  # vector deleted meanwhile
        with self._lock:
            if len(kill) or added:
                self._embedded_docs = None
            if len(kill):
                self._live[kill] = False
                self._dead += len(kill)
            if added and self._graph is None:
                self._append(added, vectors)
        if added and self._graph is not None:
            for start in range(0, len(added), 4 * 4096):  # the graph takes its own lock, batch by batch
                part = added[start : start + 4 * 4096]
                self._graph.add(np.stack([vectors[content_hash] for _, _, content_hash in part]))
                with self._lock:
                    self._append(part, None)
        if self._dead > _COMPACT_FRACTION * max(self._n, 1):
            self._compact()
        if len(kill) or added:
            log.info("vector index refreshed: +%d -%d rows (%d live)", len(added), len(kill), len(self))
        return len(added), len(kill)

    def _append(self, rows: list[tuple[str, str, str]], vectors: dict[str, np.ndarray] | None) -> None:
        """Add positions for ``rows``; their vectors go into the matrix (``vectors``), or were added to
        the graph already (None)."""
        need = self._n + len(rows)
        if need > len(self._live):
            capacity = max(need, int(len(self._live) * _GROWTH))
            if vectors is not None:
                self._columns = _grown_columns(self._columns, capacity)
            self._live = _grown(self._live, capacity)
            self._doc_codes = _grown(self._doc_codes, capacity)
            self._hash_keys = _grown(self._hash_keys, capacity)
        width = max(self._chunk_ids.dtype.itemsize, max(len(r[0]) for r in rows))
        if need > self._chunk_ids.shape[0] or width > self._chunk_ids.dtype.itemsize:
            grown = np.zeros(max(need, len(self._live)), dtype=f"S{width}")
            grown[: self._n] = self._chunk_ids[: self._n]
            self._chunk_ids = grown
        if vectors is not None:
            self._columns[:, self._n : need] = np.stack([vectors[h] for _, _, h in rows], axis=1)
        for offset, (chunk_id, doc_id, content_hash) in enumerate(rows):
            row = self._n + offset
            self._live[row] = True
            code = self._doc_index.get(doc_id)
            if code is None:
                code = self._doc_index[doc_id] = len(self._docs)
                self._docs.append(doc_id)
            self._doc_codes[row] = code
            self._hash_keys[row] = _hash_key(content_hash)
            self._chunk_ids[row] = chunk_id.encode("ascii")
        self._n = need

    def _compact(self) -> None:
        """Drop the dead positions. A graph is rebuilt from the live vectors first, outside the search
        lock (searches go on in the old one); only refreshes, which hold the update lock, wait."""
        keep = np.flatnonzero(self._live[: self._n])
        graph = self._graph
        if graph is not None:
            graph = AnnGraph(self.dims)
            for start in range(0, len(keep), 65536):
                graph.add(self._graph.vectors(keep[start : start + 65536]))  # type: ignore[union-attr]
        with self._lock:
            self._graph = graph
            if graph is None:
                self._columns = np.ascontiguousarray(self._columns[:, keep])
            self._doc_codes = self._doc_codes[keep]
            self._hash_keys = self._hash_keys[keep]
            self._chunk_ids = self._chunk_ids[keep]
            self._n = len(keep)
            self._live = np.ones(self._n, dtype=bool)
            self._dead = 0
            self._embedded_docs = None
        if graph is not None:
            self._save()

    def _become_graph(self) -> None:
        """Move the vectors from the matrix into a graph (the index grew past ``ANN_FROM``)."""
        graph = AnnGraph(self.dims)
        n = self._n
        for start in range(0, n, 65536):
            graph.add(np.ascontiguousarray(self._columns[:, start : min(n, start + 65536)].T))
        with self._lock:
            self._graph = graph
            self._columns = np.zeros((self.dims, 0), np.float32)
        log.info("vector index now approximate: %d chunks in a graph", len(self))

    # -- search -------------------------------------------------------------------------------

    def row_mask(self, doc_ids: Collection[str]) -> np.ndarray:
        """A bool mask over the index rows: True where the row's document is in ``doc_ids``."""
        with self._lock:
            n, codes, n_docs = self._n, self._doc_codes, len(self._docs)
            allowed_docs = np.zeros(n_docs, dtype=bool)
            wanted = [self._doc_index[d] for d in doc_ids if d in self._doc_index]
        if wanted:
            allowed_docs[np.asarray(wanted, dtype=np.int64)] = True
        return allowed_docs[codes[:n]]

    def top_k(self, query: np.ndarray, k: int, allowed: RowFilter = None) -> list[Hit]:
        """The ``k`` best ``(chunk_id, doc_id, score)`` by cosine, best first.

        ``allowed``: None (all rows), a collection of doc ids, or a bool mask over the rows
        (``row_mask``; valid until the next ``refresh``). The filter is applied before the top-k cut,
        so a selective filter still returns up to ``k`` hits. Ties keep row order.
        """
        if k <= 0:
            return []
        rows, scores, chunk_ids, codes, docs = self._scored(query, allowed, k)
        if len(rows) == 0:
            return []
        k = min(k, len(rows))
        best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        best = best[np.lexsort((rows[best], -scores[best]))]
        return [(chunk_ids[r].decode("ascii"), docs[codes[r]], float(scores[i]))
                for i, r in zip(best, rows[best], strict=True)]

    def top_documents(self, query: np.ndarray, k: int, allowed: RowFilter = None) -> list[tuple[str, str, float]]:
        """The ``k`` best documents: ``(doc_id, best chunk id, score)``, best first, ties by doc id; the
        score is ``chunk_scores.document_score`` of its two best chunks among those fetched. Filters
        apply before the cut, as in ``top_k``."""
        if k <= 0:
            return []
        fetch = max(4 * k, 64)
        while True:  # the best chunks until they span k documents (or all chunks are in)
            rows, scores, chunk_ids, codes, docs = self._scored(query, allowed, fetch)
            if len(rows) == 0:
                return []
            doc_codes = codes[rows]
            top = np.argpartition(-scores, fetch - 1)[:fetch] if fetch < len(scores) else np.arange(len(scores))
            top = top[np.lexsort((rows[top], -scores[top]))]
            _, first = np.unique(doc_codes[top], return_index=True)  # each document's best chunk
            if len(first) >= k or fetch >= len(scores) and (len(scores) < fetch or not self.approximate):
                break  # enough documents, or every allowed chunk was scored
            fetch *= 4
        rest = np.ones(len(top), dtype=bool)
        rest[first] = False
        seconds, at = np.unique(doc_codes[top[rest]], return_index=True)  # each document's second best chunk
        second = dict(zip(seconds.tolist(), scores[top[rest]][at].tolist(), strict=True))
        hits = []
        for i in top[first].tolist():
            code = int(doc_codes[i])
            hits.append((docs[code], chunk_ids[rows[i]].decode("ascii"),
                         document_score(float(scores[i]), second.get(code))))
        hits.sort(key=lambda h: (-h[2], h[0]))
        return hits[:k]

    def _scored(self, query: np.ndarray, allowed: RowFilter,
                fetch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """Cosine of ``query`` with the live, allowed positions: (positions, scores), plus the
        snapshot's chunk ids, document codes and document ids to name them with. The exact scan
        scores them all; the graph returns (about) the best ``fetch``."""
        q = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(-1))
        with self._lock:
            columns, graph, n, live, dead = self._columns, self._graph, self._n, self._live, self._dead
            chunk_ids, codes, docs, dims = self._chunk_ids, self._doc_codes, self._docs, self.dims
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32), chunk_ids, codes, docs
        if q.shape[0] != dims:
            raise EmbedderMismatch(
                f"the query vector has {q.shape[0]} dims but the vector index holds {dims}; "
                "run `ctx embed rebuild` after changing [embedding]"
            )
        mask = self._mask(allowed, n)
        if dead:
            mask = live[:n].copy() if mask is None else mask & live[:n]
        if graph is not None:
            rows, scores = graph.search(q, fetch, mask, n)
        else:
            rows, scores = _score(columns, n, q, mask)
        return rows, scores, chunk_ids, codes, docs

    def _mask(self, allowed: RowFilter, n: int) -> np.ndarray | None:
        if allowed is None:
            return None
        if isinstance(allowed, np.ndarray):
            if allowed.dtype != bool or allowed.shape != (n,):
                raise ValueError(
                    f"a row mask must be a bool array of length {n}; build it with row_mask() after the "
                    "last refresh, or pass a set of doc ids"
                )
            return allowed
        if isinstance(allowed, str):
            raise TypeError("allowed must be a collection of doc ids, not one string")
        return self.row_mask(allowed)


def _score(columns: np.ndarray, n: int, q: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the allowed positions only: returns (positions, scores)."""
    if mask is None:
        return np.arange(n), q @ columns[:, :n]
    selected = int(np.count_nonzero(mask))
    if selected == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    edges = np.flatnonzero(np.diff(mask.view(np.int8), prepend=0, append=0))
    starts, stops = edges[0::2], edges[1::2]
    if len(starts) <= _MAX_RUNS and selected < n // 2:  # few contiguous runs: score slices, no copy
        rows = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops, strict=True)])
        scores = np.concatenate([q @ columns[:, a:b] for a, b in zip(starts, stops, strict=True)])
        return rows, scores
    rows = np.flatnonzero(mask)
    if selected <= _GATHER_FRACTION * n:  # few scattered positions: gather them
        return rows, q @ columns[:, rows]
    return rows, (q @ columns[:, :n])[rows]


def _blocks_to_matrix(blobs: Sequence[bytes], dims: int) -> np.ndarray:
    block = np.frombuffer(b"".join(blobs), dtype="<f4")
    if block.size != len(blobs) * dims:
        raise EmbedderMismatch(
            f"stored vectors do not all have {dims} dims; run `ctx embed rebuild` to re-embed every chunk"
        )
    return block.reshape(len(blobs), dims)


def _put_columns(columns: np.ndarray, start: int, block: np.ndarray, tile: int = 256) -> None:
    """Write the rows of ``block`` as columns ``start...`` (in tiles: a cache-friendly transpose)."""
    for a in range(0, len(block), tile):
        part = block[a : a + tile]
        columns[:, start + a : start + a + len(part)] = part.T


def _grown_columns(columns: np.ndarray, capacity: int) -> np.ndarray:
    out = np.zeros((columns.shape[0], capacity), dtype=columns.dtype)
    out[:, : columns.shape[1]] = columns
    return out


def _id_array(ids: list[str]) -> np.ndarray:
    width = max([32, *map(len, ids)])
    return np.array(ids, dtype=f"S{width}") if ids else np.zeros(0, dtype=f"S{width}")


def _grown(array: np.ndarray, capacity: int) -> np.ndarray:
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


def _hash_keys(hashes: list[str]) -> np.ndarray:
    """``_hash_key`` of many hashes; vectorised for sha256 hex digests."""
    joined = "".join(hashes)
    try:
        if len(joined) == 64 * len(hashes):  # all sha256 hex digests: the first 8 of every 32 bytes
            raw = np.frombuffer(bytes.fromhex(joined), dtype=">u8")[::4]
        else:
            raw = np.frombuffer(bytes.fromhex("".join(h[:16] for h in hashes)), dtype=">u8")
        if len(raw) == len(hashes):
            return (raw >> np.uint64(4)).astype(np.int64)
    except ValueError:
        pass
    return np.fromiter((_hash_key(h) for h in hashes), dtype=np.int64, count=len(hashes))


def _hash_key(content_hash: str) -> int:
    """A 60-bit key of a content hash, to notice a chunk whose text changed under the same id."""
    try:
        return int(content_hash[:15], 16)
    except ValueError:
        return int.from_bytes(hashlib.blake2b(content_hash.encode(), digest_size=7).digest(), "little")

