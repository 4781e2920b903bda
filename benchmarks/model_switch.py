"""A model switch: how long it takes, and what searches cost meanwhile.

    .venv/bin/python benchmarks/model_switch.py [--corpus sample|scifact-gate|scifact] [--over harness|stdio]
                                                [--interval 0.1] [--idle-searches 100]

Indexes a corpus (``sample``: ``ctx demo``'s, the project's docs; ``scifact-gate``: the 1,000 SciFact
documents of the CI gate; ``scifact``: all 5,183, from ``../shared/data/beir/scifact``) into a temp
folder with the bundled model (int8 document vectors, the default), then switches ``[embedding]
quantized_documents = false`` (the same model's fp32 document vectors: another embedder identity,
so a real switch) while a client searches (hybrid, each query new, so none comes from the query
cache) every ``--interval`` seconds, as issue 43 asks (a client polling every 100 ms):

- ``--over harness`` (default): the switch runs as a serving knowledge base runs it
  (``Harness.embed_new``: background priority) in this process, searches through ``Harness.search``;
- ``--over stdio``: a real stdio server (``python -m context_harness``) starts on the switched config
  and switches by itself (after its sync on start); the client is the MCP SDK's, calling ``search``
  and, every second, ``sources`` for the progress, until the stored vectors are the new model's.

Measures ``chunks``; ``switch_seconds`` (re-embedding every chunk into the next set, then the
swap; over stdio from the server's start) and ``chunks_per_second``; ``idle_p50_ms``/``idle_p95_ms``:
hybrid search before the switch (``--idle-searches`` after a warm-up; harness only);
``switch_p50_ms``/``switch_p95_ms``/``switch_searches``: during it; ``switch_errors`` and
``switch_empty``: searches that failed or returned no result meanwhile (target: 0);
``embedders_seen``: the embedder that answered, in the order seen (the old, then the new);
``progress_seen``: how many distinct progress counts ``sources`` showed (stdio); RSS of the process
that switches: ``rss_mb_before`` (index and query model loaded), ``peak_rss_mb_switch`` (both models
loaded) and ``rss_mb_after``.

Prints one JSON line. Bounded: the switch of the corpus, at most 60 minutes.
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
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact

# isort: split
import freshness  # it drops this folder from sys.path again: benchmarks/mcp.py would shadow the SDK

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from context_harness.sample import DOCS, GENERATED

DEADLINE = 3600.0  # seconds a switch may take before the benchmark gives up
TOPICS = ["add a connector", "hybrid search fusion", "embedding model", "keyword index", "write back notes",
          "lua tools sandbox", "postgres replicas", "live index watching folders", "agents and skills",
          "crash safety", "web console", "mcp server over stdio", "config file keys", "rerank results",
          "extension registries", "sync a git repository", "pdf and docx", "search filters by tag",
          "chunk size", "benchmarks on scifact"]
ASPECTS = ["how to", "why", "errors", "settings", "example", "limits", "defaults", "speed", "memory", "tests",
           "docs", "cli", "http", "files", "security", "first run", "upgrade", "logs", "timeouts", "windows"]


def corpus(name: str, folder: Path) -> tuple[Path, list[str], list[str]]:
    """(the folder to index, globs to leave out, the queries: each asked once)."""
    if name == "sample":
        return DOCS, list(GENERATED), [f"{aspect} {topic}" for aspect in ASPECTS for topic in TOPICS] * 10
    docs = scifact.gate_subset() if name == "scifact-gate" else scifact.corpus()
    scifact.write_markdown(docs, folder / "docs")
    questions = list(scifact.queries().values())
    return folder / "docs", [], questions + [f"{q} evidence" for q in questions] * 10


def write_config(folder: Path, root: Path, excludes: list[str], quantized: bool) -> Path:
    path = folder / "ctx.toml"
    path.write_text(f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nquantized_documents = {str(quantized).lower()}\n'
                    '[server]\nwatch = false\n[connectors.filesystem.docs]\n'
                    f'root = {json.dumps(str(root))}\nexclude_globs = {json.dumps(excludes)}\n', encoding="utf-8")
    return path


def rss_mb(pid: int | None = None) -> float:
    return freshness.rss_mb(pid if pid is not None else os.getpid())


def ms(values: list[float], q: int) -> float:
    return round(statistics.quantiles(values, n=100)[q - 1] * 1000, 2) if len(values) > 1 else 0.0


class Watch:
    """What a client saw during the switch."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = self.empty = 0
        self.embedders: list[str] = []
        self.progress: set[int] = set()

    def saw(self, seconds: float, results: int, embedder: str | None) -> None:
        self.latencies.append(seconds)
        self.empty += results == 0
        if embedder and (not self.embedders or self.embedders[-1] != embedder):
            self.embedders.append(embedder)

    def figures(self) -> dict[str, Any]:
        return {"switch_searches": len(self.latencies), "switch_p50_ms": ms(self.latencies, 50),
                "switch_p95_ms": ms(self.latencies, 95), "switch_errors": self.errors, "switch_empty": self.empty,
                "embedders_seen": self.embedders}


async def search(h: Harness, query: str) -> tuple[float, int, str | None]:
    started = time.perf_counter()
    response = await h.search(SearchRequest(query=query, mode="hybrid", explain=True))
    return time.perf_counter() - started, len(response.results), response.explain.embedder if response.explain else None


async def indexed(folder: Path, name: str) -> tuple[Path, list[str], int, str]:
    """Index the corpus with the default settings; (config path switched, queries, chunks, old identity)."""
    root, excludes, questions = corpus(name, folder)
    config_path = write_config(folder, root, excludes, quantized=True)
    async with Harness.open(config_mod.load(config_path)) as h:
        await h.sync()
        stats = await h.stats()
    return write_config(folder, root, excludes, quantized=False), questions, stats.chunks, stats.embedding["identity"]


async def over_harness(config_path: Path, pool, interval: float, idle_searches: int) -> dict[str, Any]:
    async with Harness.open(config_mod.load(config_path)) as h:
        for _ in range(5):  # warm-up: the index and the query model load
            await search(h, next(pool))
        idle = [(await search(h, next(pool)))[0] for _ in range(idle_searches)]
        before = rss_mb()
        peak, stop = [before], threading.Event()
        sampler = threading.Thread(target=lambda: [peak.append(rss_mb()) for _ in iter(lambda: stop.wait(0.02), True)],
                                   daemon=True)
        sampler.start()
        watch, done, result = Watch(), anyio.Event(), {}

        async def client() -> None:
            while not done.is_set():
                try:
                    watch.saw(*await search(h, next(pool)))
                except Exception as exc:  # counted: the target is none
                    watch.errors += 1
                    print(f"search failed: {exc}", file=sys.stderr)
                await anyio.sleep(interval)

        async with anyio.create_task_group() as tg:
            tg.start_soon(client)
            started = time.perf_counter()
            summary = await h.embed_new()
            result["seconds"], result["embedded"] = time.perf_counter() - started, summary.embedded if summary else 0
            done.set()
        stop.set()
        sampler.join()
        watch.saw(*await search(h, next(pool)))
        status = (await h.stats()).embedding
        return {"to": status["stored_identity"], "switch_seconds": round(result["seconds"], 2),
                "embedded": result["embedded"], "idle_p50_ms": ms(idle, 50), "idle_p95_ms": ms(idle, 95),
                **watch.figures(), "rss_mb_before": round(before), "peak_rss_mb_switch": round(max(peak)),
                "rss_mb_after": round(rss_mb())}


async def over_stdio(config_path: Path, pool, interval: float) -> dict[str, Any]:
    started = time.perf_counter()
    async with freshness.serve(config_path) as client:
        pid = freshness.server_pid(config_path)
        watch, status, last_poll = Watch(), {}, 0.0
        new = None
        while time.perf_counter() - started < DEADLINE:
            t = time.perf_counter()
            try:
                result = await client.call_tool("search", {"query": next(pool), "mode": "hybrid", "explain": True})
                if result.is_error:
                    raise RuntimeError(str(result.content))
                content = result.structured_content
                embedder = (content.get("explain") or {}).get("embedder")
                watch.saw(time.perf_counter() - t, len(content["results"]), embedder)
            except Exception as exc:  # counted: the target is none
                watch.errors += 1
                print(f"search failed: {exc}", file=sys.stderr)
            if time.perf_counter() - last_poll >= 1.0:
                last_poll = time.perf_counter()
                status = (await client.call_tool("sources", {})).structured_content["embedding"]
                new = new or status["identity"]
                if status.get("switch"):
                    watch.progress.add(status["switch"]["done"])
                if status["stored_identity"] == new and not status.get("switch"):
                    break
            await anyio.sleep(interval)
        seconds = time.perf_counter() - started
        peak = next(int(line.split()[1]) / 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                    if line.startswith("VmHWM:"))  # the server's peak RSS so far: the switch's
        return {"to": status.get("stored_identity"), "switch_seconds": round(seconds, 2), **watch.figures(),
                "progress_seen": len(watch.progress), "peak_rss_mb_switch": round(peak),
                "rss_mb_after": round(rss_mb(pid)), "finished": status.get("stored_identity") == new}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctx-switch-") as tmp:
        config_path, questions, chunks, old = await indexed(Path(tmp), args.corpus)
        pool = iter(questions)
        if args.over == "stdio":
            figures = await over_stdio(config_path, pool, args.interval)
        else:
            figures = await over_harness(config_path, pool, args.interval, args.idle_searches)
    return {"benchmark": "model_switch", "corpus": args.corpus, "over": args.over, "cores": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 2), "chunks": chunks, "from": old, **figures,
            "chunks_per_second": round(chunks / figures["switch_seconds"], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", choices=["sample", "scifact-gate", "scifact"], default="sample")
    parser.add_argument("--over", choices=["harness", "stdio"], default="harness")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between a client's searches")
    parser.add_argument("--idle-searches", type=int, default=100, help="searches timed before the switch (harness)")
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
