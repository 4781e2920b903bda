"""Run records (``store/runs.py``): saving a record after each step, listing runs, reading one whole.

    python benchmarks/agent_runs.py [--runs 50] [--steps 40] [--step-kb 50] [--url POSTGRES_URL]

Saves ``--runs`` records the way the run loop does (the whole record again after each of its
``--steps`` steps of ``--step-kb`` KB each: 2 MB of steps a record by default), then times listing
the newest 50 (``runs()``, which never reads the steps) and reading one whole (``run()``), each
repeated 50 times. On the embedded backend (SQLite in a temporary folder), and on the PostgreSQL at
``--url`` (an empty database) when given. Prints one JSON line.
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


def record(n: int, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": f"r20261128-{n:06d}-bench", "agent": "note-filer" if n % 2 else "summariser",
            "task": "file today's notes", "model": "local", "arguments": {}, "status": "running", "reason": None,
            "started_at": f"2026-11-28T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z", "ended_at": None,
            "tokens": {"prompt": 0, "completion": 0}, "answer": None, "steps": steps}


def ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)}


def measure(store: Any, runs: int, steps: int, step_kb: int) -> dict[str, Any]:
    text = "lorem ipsum " * (step_kb * 1024 // 12)
    saves, last_saves = [], []
    for n in range(runs):
        done: list[dict[str, Any]] = []
        for i in range(steps):
            done.append({"kind": "tool_result", "tool": "get", "index": i, "text": text})
            started = time.perf_counter()
            store.save_run(record(n, done))
            saves.append(time.perf_counter() - started)
        last_saves.append(saves[-1])
    listing, whole = [], []
    newest = store.runs(limit=1)[0]["id"]
    for _ in range(50):
        started = time.perf_counter()
        assert len(store.runs(limit=50)) == min(runs, 50)
        listing.append(time.perf_counter() - started)
        started = time.perf_counter()
        assert len(store.run(newest)["steps"]) == steps
        whole.append(time.perf_counter() - started)
    size = len(json.dumps(record(0, done)))
    return {"record_mb": round(size / 1e6, 2), "save_every_step": ms(saves), "save_last_step": ms(last_saves),
            "list_50": ms(listing), "read_whole": ms(whole)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--step-kb", type=int, default=50)
    parser.add_argument("--url", help="an empty PostgreSQL database to measure too")
    args = parser.parse_args()
    out: dict[str, Any] = {"benchmark": "agent_runs", "runs": args.runs, "steps": args.steps,
                           "step_kb": args.step_kb, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as folder:
        store = DocumentStore(Path(folder) / "ctx.sqlite")
        try:
            out["embedded"] = measure(store, args.runs, args.steps, args.step_kb)
        finally:
            store.close()
    if args.url:
        from context_harness.store.postgres import open_postgres

        backend = open_postgres(args.url, 1.0, False)
        try:
            out["postgres"] = measure(backend.documents, args.runs, args.steps, args.step_kb)
        finally:
            backend.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
