"""Hybrid search latency on SciFact through MCP (in-memory client) and through Harness.search.

    python benchmarks/hybrid.py [--workspace DIR]

Builds (or reuses) a workspace holding all 5,183 SciFact documents with embeddings from the bundled
model, then times the 300 test queries in hybrid mode: Harness.search, and the MCP `search` tool
through the SDK's in-memory client, both including the query embedding (the LRU cache is cleared
before each timed pass). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact  # noqa: E402

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from context_harness import config as config_mod  # noqa: E402
from context_harness.harness import Harness  # noqa: E402
from context_harness.models import SearchRequest  # noqa: E402


async def run(args: argparse.Namespace) -> dict:
    from mcp import Client

    from context_harness.mcp_server import build_server

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
            for q in queries:
                t0 = time.perf_counter()
                await harness.search(SearchRequest(query=q, mode="hybrid"))
                direct.append((time.perf_counter() - t0) * 1000)
            backend.embedder.query_cache.clear()
            over_mcp = []
            async with Client(build_server(harness)) as client:
                for q in queries:
                    t0 = time.perf_counter()
                    result = await client.call_tool("search", {"query": q, "mode": "hybrid"})
                    over_mcp.append((time.perf_counter() - t0) * 1000)
                    assert not result.is_error
            stats = await harness.stats()
    return {
        "benchmark": "hybrid", "documents": len(docs), "chunks": stats.chunks,
        "embedded_chunks": stats.embedding.get("embedded_chunks"), "queries": len(queries),
        "embedded_this_run": report.embedding.embedded if report.embedding else 0,
        "harness_hybrid_ms_p50": round(scifact.percentile(direct, 50), 3),
        "harness_hybrid_ms_p95": round(scifact.percentile(direct, 95), 3),
        "mcp_hybrid_ms_p50": round(scifact.percentile(over_mcp, 50), 3),
        "mcp_hybrid_ms_p95": round(scifact.percentile(over_mcp, 95), 3),
        "cores": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", default=None, help="Keep the embedded workspace here and reuse it.")
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
