"""Hybrid search latency on SciFact: Harness.search, MCP over stdio, and the SDK's in-memory client.

    python benchmarks/hybrid.py [--workspace DIR]

Builds (or reuses) a workspace holding all 5,183 SciFact documents with embeddings from the bundled
model, then times the 300 test queries in hybrid mode, each including its query embedding (the LRU
cache is cleared before each timed pass; the stdio server has never seen the timed queries):

- ``harness_hybrid_ms``: ``Harness.search`` in-process;
- ``mcp_stdio_hybrid_ms``: ``tools/call search`` to ``python -m context_harness`` over its stdio pipes,
  timed by a raw JSON-RPC peer (what a desktop client's round trip costs the server);
- ``mcp_sdk_client_hybrid_ms``: the MCP SDK's in-memory ``Client``, which also validates every result
  against the tool's output schema with jsonschema (about 0.8 ms of client work per 10 results);
- ``harness_concurrent``: ``Harness.search`` from ``--clients`` concurrent callers (default 2): searches
  per second and latency, beside ``harness_hybrid_per_s`` and ``harness_cpu_ms_per_search`` (CPU time
  of all the process's threads) for one caller.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first),
# and load its raw stdio peer by path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
_spec = importlib.util.spec_from_file_location("ctx_bench_mcp", Path(__file__).resolve().parent / "mcp.py")
assert _spec is not None and _spec.loader is not None
bench_mcp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_mcp)

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.models import SearchRequest  # noqa: E402


async def run(args: argparse.Namespace) -> dict:
    from mcp import Client

    from context_harness.server.mcp import build_server

    docs = scifact.corpus()
    qs = scifact.queries()
    queries = [qs[q] for q in scifact.qrels("test") if q in qs]
    with contextlib.ExitStack() as stack:
        workspace = Path(args.workspace) if args.workspace else Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-hybrid-")))
        if not (workspace / "docs").is_dir():
            scifact.write_markdown(docs, workspace / "docs")
        config = config_mod.from_dict({
            "db": {"path": str(workspace / "data" / "ctx.sqlite")},
            "server": {"sync_on_start": False},
            "connectors": {"filesystem": {"scifact": {"root": str(workspace / "docs")}}},
        }, None)
        async with Harness.open(config) as harness:
            report = await harness.sync()
            backend = harness.semantic()
            for q in queries[:10]:
                await harness.search(SearchRequest(query=q, mode="hybrid"))
            backend.embedder.query_cache.clear()
            direct = []
            cpu_start = _cpu_seconds()
            start = time.perf_counter()
            for q in queries:
                t0 = time.perf_counter()
                await harness.search(SearchRequest(query=q, mode="hybrid"))
                direct.append((time.perf_counter() - t0) * 1000)
            sequential_s = time.perf_counter() - start
            cpu_ms = (_cpu_seconds() - cpu_start) * 1000 / len(queries)
            backend.embedder.query_cache.clear()
            concurrent = await _concurrent(harness, queries, args.clients)
            backend.embedder.query_cache.clear()
            over_mcp = []
            async with Client(build_server(harness)) as client:
                for q in queries:
                    t0 = time.perf_counter()
                    result = await client.call_tool("search", {"query": q, "mode": "hybrid"})
                    over_mcp.append((time.perf_counter() - t0) * 1000)
                    assert not result.is_error
            stats = await harness.stats()
        over_stdio = _stdio_round_trips(workspace, queries, [qs[q] for q in scifact.qrels("train") if q in qs][:10])
    return {
        "benchmark": "hybrid", "documents": len(docs), "chunks": stats.chunks,
        "embedded_chunks": stats.embedding.get("embedded_chunks"), "queries": len(queries),
        "embedded_this_run": report.embedding.embedded if report.embedding else 0,
        "harness_hybrid_ms_p50": round(scifact.percentile(direct, 50), 3),
        "harness_hybrid_ms_p95": round(scifact.percentile(direct, 95), 3),
        "harness_hybrid_per_s": round(len(queries) / sequential_s, 1),
        "harness_cpu_ms_per_search": round(cpu_ms, 2),
        "harness_concurrent": concurrent,
        "mcp_stdio_hybrid_ms_p50": round(scifact.percentile(over_stdio, 50), 3),
        "mcp_stdio_hybrid_ms_p95": round(scifact.percentile(over_stdio, 95), 3),
        "mcp_sdk_client_hybrid_ms_p50": round(scifact.percentile(over_mcp, 50), 3),
        "mcp_sdk_client_hybrid_ms_p95": round(scifact.percentile(over_mcp, 95), 3),
        "cores": os.cpu_count(),
    }


def _cpu_seconds() -> float:
    """CPU time of this process so far, all threads (ours, ONNX Runtime's and OpenBLAS's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _concurrent(harness: Harness, queries: list[str], clients: int) -> dict:
    """The queries through ``Harness.search`` from ``clients`` callers at once (each takes the next)."""
    pending = iter(queries)
    times: list[float] = []

    async def caller() -> None:
        for q in pending:
            t0 = time.perf_counter()
            await harness.search(SearchRequest(query=q, mode="hybrid"))
            times.append((time.perf_counter() - t0) * 1000)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(caller)
    elapsed = time.perf_counter() - start
    return {"clients": clients, "searches_per_s": round(len(times) / elapsed, 1),
            "ms_p50": round(scifact.percentile(times, 50), 3), "ms_p95": round(scifact.percentile(times, 95), 3)}


def _stdio_round_trips(workspace: Path, queries: list[str], warm_up: list[str]) -> list[float]:
    """Hybrid ``tools/call search`` round trips (ms) to a server process over its stdio pipes."""
    config = workspace / "ctx-bench-hybrid.toml"
    config.write_text(f'[db]\npath = "{(workspace / "data" / "ctx.sqlite").as_posix()}"\n'
                      '[server]\nsync_on_start = false\n'
                      f'[connectors.filesystem.scifact]\nroot = "{(workspace / "docs").as_posix()}"\n',
                      encoding="utf-8")
    peer = bench_mcp.StdioPeer(config, dict(os.environ))
    try:
        peer.handshake()
        for text in warm_up:  # loads the model and the vector index; these queries are not timed
            peer.call("search", {"query": text, "mode": "hybrid"})
        times = []
        for text in queries:
            t0 = time.perf_counter()
            reply = peer.call("search", {"query": text, "mode": "hybrid"})
            times.append((time.perf_counter() - t0) * 1000)
            assert "error" not in reply and not reply["result"].get("isError"), reply
        return times
    finally:
        peer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", default=None, help="Keep the embedded workspace here and reuse it.")
    parser.add_argument("--clients", type=int, default=2, help="Concurrent callers for harness_concurrent.")
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
