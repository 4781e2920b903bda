"""Vector store at scale: 100k x 384 synthetic unit vectors in a temporary SQLite database.

    python benchmarks/vectors.py [--rows 100000] [--dims 384] [--queries 200]

Measures the store write (put_many), the index open time (load into one float32 matrix), memory
of the index against the raw vector bytes (numpy arrays and the RSS growth), and top-10 latency
p50/p95 without a filter, with a contiguous filter (a few documents' chunks, as a source filter
gives), with a scattered 10% document filter, ``count()`` (asked by every auto-mode search),
and an incremental refresh. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from context_harness.embedding.base import EmbedderIdentity  # noqa: E402
from context_harness.store.documents import DocumentStore  # noqa: E402
from context_harness.store.vectors import VectorStore  # noqa: E402

CHUNKS_PER_DOC = 10


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def unit_vectors(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    n, dims = args.rows, args.dims
    identity = EmbedderIdentity("bench", f"random-{dims}", dims)

    with tempfile.TemporaryDirectory(prefix="ctx-vectors-bench-") as tmp:
        path = Path(tmp) / "ctx.sqlite"
        DocumentStore(path).close()  # the real schema; the chunks rows below have no documents rows
        conn = sqlite3.connect(path)
        hashes = [hashlib.sha256(f"chunk {i}".encode()).hexdigest() for i in range(n)]
        with conn:
            conn.executemany(
                "INSERT INTO chunks(id, doc_id, idx, text, content_hash) VALUES (?, ?, ?, ?, ?)",
                ((f"d{i // CHUNKS_PER_DOC}#{i % CHUNKS_PER_DOC}", f"d{i // CHUNKS_PER_DOC}", i % CHUNKS_PER_DOC,
                  f"chunk {i}", hashes[i]) for i in range(n)),
            )
        conn.close()
        vectors = unit_vectors(rng, n, dims)

        store = VectorStore(path)
        store.set_identity(identity)
        start = time.perf_counter()
        store.put_many(zip(hashes, vectors, strict=True))
        write_s = time.perf_counter() - start
        store.close()
        del vectors
        db_bytes = sum(p.stat().st_size for p in Path(tmp).iterdir())

        rss_before = rss_bytes()
        start = time.perf_counter()
        store = VectorStore(path)
        index = store.open_index()
        open_s = time.perf_counter() - start
        rss_after = rss_bytes()
        start = time.perf_counter()
        for _ in range(100):  # what a search in auto mode asks first: are there vectors?
            store.count()
        count_ms = (time.perf_counter() - start) * 10
        raw = n * dims * 4
        index_bytes = index.nbytes

        queries = unit_vectors(rng, args.queries, dims)
        n_docs = n // CHUNKS_PER_DOC
        contiguous = {f"d{d}" for d in range(1000, 1000 + n_docs // 20)}  # 5% of docs, one run
        scattered = {f"d{d}" for d in rng.choice(n_docs, n_docs // 10, replace=False)}  # 10% of docs
        scattered_mask = index.row_mask(scattered)

        def latency(allowed: object) -> dict[str, float]:
            for q in queries[:5]:
                index.top_k(q, args.k, allowed=allowed)  # type: ignore[arg-type]
            samples = []
            for q in queries:
                t = time.perf_counter()
                hits = index.top_k(q, args.k, allowed=allowed)  # type: ignore[arg-type]
                samples.append(time.perf_counter() - t)
                assert len(hits) == args.k
            return percentiles(samples)

        results = {
            "no_filter": latency(None),
            "contiguous_5pct_docs": latency(contiguous),
            "scattered_10pct_docs_set": latency(scattered),
            "scattered_10pct_docs_mask": latency(scattered_mask),
        }
        start = time.perf_counter()
        index.row_mask(scattered)
        mask_ms = (time.perf_counter() - start) * 1000

        # Incremental refresh: 1,000 new chunks with vectors, 1,000 deleted.
        conn = sqlite3.connect(path)
        new_hashes = [hashlib.sha256(f"new {i}".encode()).hexdigest() for i in range(1000)]
        with conn:
            doomed = ",".join(f"'d{d}'" for d in range(100))
            conn.execute(f"DELETE FROM chunks WHERE doc_id IN ({doomed})")
            conn.executemany(
                "INSERT INTO chunks(id, doc_id, idx, text, content_hash) VALUES (?, ?, ?, ?, ?)",
                ((f"new{i}#0", f"new{i}", 0, f"new {i}", new_hashes[i]) for i in range(1000)),
            )
        conn.close()
        store.put_many(zip(new_hashes, unit_vectors(rng, 1000, dims), strict=True))
        start = time.perf_counter()
        added, removed = index.refresh()
        refresh_s = time.perf_counter() - start
        store.close()

    print(
        json.dumps(
            {
                "benchmark": "vectors",
                "rows": n,
                "dims": dims,
                "k": args.k,
                "write_s": round(write_s, 3),
                "write_rows_per_s": round(n / write_s),
                "db_mb": round(db_bytes / 1e6, 1),
                "open_s": round(open_s, 3),
                "raw_mb": round(raw / 1e6, 1),
                "index_numpy_mb": round(index_bytes / 1e6, 1),
                "index_numpy_vs_raw": round(index_bytes / raw, 3),
                "rss_growth_vs_raw": round((rss_after - rss_before) / raw, 3),
                "top_k": results,
                "row_mask_from_doc_set_ms": round(mask_ms, 2),
                "count_ms": round(count_ms, 4),
                "refresh": {"added": added, "removed": removed, "seconds": round(refresh_s, 3)},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
