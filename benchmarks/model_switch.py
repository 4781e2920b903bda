"""A model switch on the sample workspace: how long it takes, and what searches cost meanwhile.

    .venv/bin/python benchmarks/model_switch.py [--interval 0.1] [--idle-searches 100]

Indexes the bundled sample knowledge base (``ctx demo``'s: the project's docs) into a temp folder
with the bundled model (int8 document vectors, the default), then switches ``[embedding]
quantized_documents = false`` (the same model's fp32 document vectors: another embedder identity, so
a real switch) and runs it as a serving knowledge base does (``Harness.embed_new``: background
priority), while a client searches (hybrid, each query new, so none comes from the query cache)
every ``--interval`` seconds, as ``issue 43`` asks (a client polling every 100 ms). Measures:

- ``chunks``, ``switch_seconds``: the whole switch (re-embedding every chunk into the next set, then
  the swap), and ``chunks_per_second``;
- ``idle_p50_ms``/``idle_p95_ms``: hybrid search before the switch (``--idle-searches`` back to back
  after a warm-up), ``switch_p50_ms``/``switch_p95_ms``/``switch_searches``: during it;
  ``switch_errors`` and ``switch_empty``: searches that failed or returned no result meanwhile
  (target: 0); ``embedders_seen``: the embedder that answered, in the order seen (the old, then the new);
- ``rss_mb_before`` (index and the query model loaded), ``peak_rss_mb_switch`` (the most sampled
  every 20 ms during the switch: both models loaded) and ``rss_mb_after``, of this process.

Prints one JSON line. Bounded: the switch of the sample (~1,000 chunks) and ``--idle-searches``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from context_harness.core.harness import Harness  # noqa: E402
from context_harness.models import SearchRequest  # noqa: E402
from context_harness.sample import demo_config  # noqa: E402

TOPICS = ["add a connector", "hybrid search fusion", "embedding model", "keyword index", "write back notes",
          "lua tools sandbox", "postgres replicas", "live index watching folders", "agents and skills",
          "crash safety", "web console", "mcp server over stdio", "config file keys", "rerank results",
          "extension registries", "sync a git repository", "pdf and docx", "search filters by tag",
          "chunk size", "benchmarks on scifact"]
ASPECTS = ["how to", "why", "errors", "settings", "example", "limits", "defaults", "speed", "memory", "tests",
           "docs", "cli", "http", "files", "security", "first run", "upgrade", "logs", "timeouts", "windows"]


def queries() -> list[str]:
    return [f"{aspect} {topic}" for aspect in ASPECTS for topic in TOPICS]  # 400, each new to the cache


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def ms(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[int(q) - 1] * 1000, 2) if len(values) > 1 else 0.0


async def search(h: Harness, query: str) -> tuple[float, int, str | None]:
    started = time.perf_counter()
    response = await h.search(SearchRequest(query=query, mode="hybrid", explain=True))
    return time.perf_counter() - started, len(response.results), response.explain.embedder if response.explain else None


async def run(interval: float, idle_searches: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="ctx-switch-"))
    config = demo_config(folder)
    pool = iter(queries() * 10)
    async with Harness.open(config) as h:
        await h.sync()
        chunks = (await h.stats()).chunks
    switched = config.model_copy(update={"embedding": config.embedding.model_copy(
        update={"quantized_documents": False})})
    async with Harness.open(switched) as h:
        for _ in range(5):  # warm-up: the index and the query model load
            await search(h, next(pool))
        idle = [(await search(h, next(pool)))[0] for _ in range(idle_searches)]
        before = rss_mb()
        peak, stop = [before], threading.Event()

        def sample() -> None:
            while not stop.wait(0.02):
                peak.append(rss_mb())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        during: list[float] = []
        errors = empty = 0
        seen: list[str] = []
        done = anyio.Event()
        result: dict = {}

        async def switch() -> None:
            started = time.perf_counter()
            summary = await h.embed_new()
            result["seconds"] = time.perf_counter() - started
            result["embedded"] = summary.embedded if summary else None
            done.set()

        async def client() -> None:
            nonlocal errors, empty
            while not done.is_set():
                try:
                    seconds, count, embedder = await search(h, next(pool))
                    during.append(seconds)
                    empty += count == 0
                    if embedder and (not seen or seen[-1] != embedder):
                        seen.append(embedder)
                except Exception as exc:  # counted: the target is none
                    errors += 1
                    print(f"search failed: {exc}", file=sys.stderr)
                await anyio.sleep(interval)

        async with anyio.create_task_group() as tg:
            tg.start_soon(client)
            await switch()
        stop.set()
        sampler.join()
        after_status = (await h.stats()).embedding
        for _ in range(3):
            await search(h, next(pool))
        _, _, last = await search(h, next(pool))
        if last and seen[-1:] != [last]:
            seen.append(last)
        return {
            "benchmark": "model_switch", "cores": os.cpu_count(), "chunks": chunks,
            "from": config_key(config), "to": after_status["stored_identity"],
            "switch_seconds": round(result["seconds"], 2), "embedded": result["embedded"],
            "chunks_per_second": round((result["embedded"] or 0) / result["seconds"], 1),
            "idle_p50_ms": ms(idle, 50), "idle_p95_ms": ms(idle, 95),
            "switch_searches": len(during), "switch_p50_ms": ms(during, 50), "switch_p95_ms": ms(during, 95),
            "switch_errors": errors, "switch_empty": empty, "embedders_seen": seen,
            "rss_mb_before": round(before), "peak_rss_mb_switch": round(max(peak)), "rss_mb_after": round(rss_mb()),
        }


def config_key(config) -> str:
    from context_harness.embedding import build_embedder

    return build_embedder(config.embedding).identity.key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between a client's searches")
    parser.add_argument("--idle-searches", type=int, default=100, help="searches timed before the switch")
    args = parser.parse_args()
    print(json.dumps(anyio.run(run, args.interval, args.idle_searches)))


if __name__ == "__main__":
    main()
