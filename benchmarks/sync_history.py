"""The sync history (``sync_history``, schema 6): adding an entry when a sync ends, listing a source's.

    python benchmarks/sync_history.py [--sources 20] [--entries 200] [--url POSTGRES_URL]

Adds ``--entries`` entries to each of ``--sources`` sources, round robin (so every source is past
its cap of 50 and each add also deletes that source's oldest entry), timing each add; then times
listing one source's newest 10 (what the console's dashboard reads per source) and the newest 20 of
all, each 200 times. On the embedded backend (SQLite in a temporary folder), and on the PostgreSQL
at ``--url`` (an empty database) when given. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from context_harness.store.documents import DocumentStore
from context_harness.store.records import SyncEntry
from context_harness.store.schema import HISTORY_KEPT


def ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 3),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3)}


def measure(store: Any, sources: int, entries: int) -> dict[str, Any]:
    adds = []
    for n in range(entries):
        for s in range(sources):
            at = f"2026-11-28T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
            entry = SyncEntry(f"filesystem:source-{s}", "ok" if n % 10 else "error",
                              None if n % 10 else "the root is missing", at, at, 1.5, n, 1, 0, 500, 2)
            started = time.perf_counter()
            store.record_history(entry)
            adds.append(time.perf_counter() - started)
    per_source, everything = [], []
    for i in range(200):
        started = time.perf_counter()
        assert len(store.sync_history(f"filesystem:source-{i % sources}", 10)) == min(10, entries)
        per_source.append(time.perf_counter() - started)
        started = time.perf_counter()
        assert len(store.sync_history(None, 20)) == min(20, entries * sources)
        everything.append(time.perf_counter() - started)
    kept = len(store.sync_history(None, None))
    assert kept == sources * min(entries, HISTORY_KEPT), kept
    return {"kept": kept, "add": ms(adds), "list_source_10": ms(per_source), "list_all_20": ms(everything)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=int, default=20)
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--url", help="an empty PostgreSQL database to measure too")
    args = parser.parse_args()
    out: dict[str, Any] = {"benchmark": "sync_history", "sources": args.sources, "entries": args.entries,
                           "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as folder:
        store = DocumentStore(Path(folder) / "ctx.sqlite")
        try:
            out["embedded"] = measure(store, args.sources, args.entries)
        finally:
            store.close()
    if args.url:
        from context_harness.store.postgres import open_postgres

        backend = open_postgres(args.url, 1.0, False)
        try:
            out["postgres"] = measure(backend.documents, args.sources, args.entries)
        finally:
            backend.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
