"""Agent registry figures: listing 200 agents, a cached definition read, and a Lua agent resolve
that runs two searches against a real Harness over the bundled sample docs, and the same list and
read through the real MCP client in memory.

    python benchmarks/agents.py [--agents 200] [--reads 5000] [--resolves 200] [--mcp-rounds 200]

Prints one JSON line (ms): ``list_p50`` (``AgentLibrary.list()`` with 200 agents: what
``prompts/list`` and ``/agents/list`` render), ``read_p50`` (cached ``read_resource("agent://NAME")``:
what ``resources/read`` returns), ``resolve_p50``/``resolve_p95`` (the shipped incident-responder
Lua agent: two searches and one fetch through ``HarnessContext``), ``build_ms`` (building the
registry), ``mcp_prompts_list_p50_ms`` (``prompts/list`` of all agents through an in-memory
``mcp.Client``, every page, cache bypassed), ``mcp_read_p50_ms`` (cached ``resources/read
agent://NAME`` through the same client) and the targets (list <= 20 ms, cached read <= 1 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# benchmarks/mcp.py would shadow the MCP SDK: drop this folder from the path, put the repo first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.agents import build_agent_library  # noqa: E402
from context_harness.core.context import HarnessContext  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.sample import DOCS  # noqa: E402


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--resolves", type=int, default=200)
    parser.add_argument("--mcp-rounds", type=int, default=200)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        shipped = tomllib.loads((REPO / "agents" / "agents.toml").read_text(encoding="utf-8"))["agents"]
        agents = dict(shipped)
        for i in range(args.agents - 5):  # + the 5 shipped ones
            agents[f"bench-{i:03d}"] = {
                "description": f"Benchmark agent {i}", "tools": ["search", "get"],
                "system_prompt": f"You are benchmark agent {i}. " * 20,
                "arguments": [{"name": "topic", "description": "Topic", "required": i % 2 == 0}],
            }
        raw = {"db": {"path": str(Path(tmp) / "ctx.sqlite")}, "embedding": {"provider": "disabled"},
               "connectors": {"filesystem": {"sample": {"root": str(DOCS)}}}, "agents": agents}
        config = config_mod.from_dict(raw, REPO / "ctx.toml")
        start = time.perf_counter()
        registry = build_agent_library(config)
        build_ms = (time.perf_counter() - start) * 1000
        count = len(registry.list())

        def list_all() -> None:
            [info.model_dump() for info in registry.list()]

        list_ms = timed(list_all, 200)
        read_ms = timed(lambda: registry.read_resource("agent://bench-100"), args.reads)

        async def resolve_bench() -> list[float]:
            async with Harness.open(config) as harness:
                await harness.sync()
                context = HarnessContext(harness)

                def once() -> None:
                    registry.resolve("incident-responder", {"service": "search"}, context)

                def run() -> list[float]:
                    once()  # warm the Lua runtime
                    return timed(once, args.resolves)

                samples = await anyio.to_thread.run_sync(run)
                assert context.searches == 2 * (args.resolves + 1)
                return samples

        resolve_ms = anyio.run(resolve_bench)

        async def mcp_bench() -> tuple[list[float], list[float], int]:
            from mcp import Client

            from context_harness.server.mcp import build_server

            async with Harness.open(config) as harness:
                server = build_server(harness)
                async with Client(server) as client:
                    async def list_prompts() -> int:
                        count, cursor = 0, None
                        while True:
                            page = await client.list_prompts(cursor=cursor, cache_mode="refresh")
                            count += len(page.prompts)
                            cursor = page.next_cursor
                            if cursor is None:
                                return count

                    listed = await list_prompts()
                    list_samples, read_samples = [], []
                    for _ in range(args.mcp_rounds):
                        start = time.perf_counter()
                        await list_prompts()
                        list_samples.append((time.perf_counter() - start) * 1000)
                    await client.read_resource("agent://bench-100")
                    for _ in range(args.mcp_rounds * 5):
                        start = time.perf_counter()
                        await client.read_resource("agent://bench-100")
                        read_samples.append((time.perf_counter() - start) * 1000)
                    return list_samples, read_samples, listed

        mcp_list_ms, mcp_read_ms, mcp_listed = anyio.run(mcp_bench)
        assert mcp_listed == count

    print(json.dumps({
        "benchmark": "agents", "cores": os.cpu_count(), "agents": count,
        "build_ms": round(build_ms, 1),
        "list_p50_ms": round(statistics.median(list_ms), 3),
        "read_p50_ms": round(statistics.median(read_ms), 4),
        "resolve_p50_ms": round(statistics.median(resolve_ms), 3),
        "resolve_p95_ms": round(percentile(resolve_ms, 0.95), 3),
        "mcp_prompts_list_p50_ms": round(statistics.median(mcp_list_ms), 3),
        "mcp_prompts_list_p95_ms": round(percentile(mcp_list_ms, 0.95), 3),
        "mcp_read_p50_ms": round(statistics.median(mcp_read_ms), 3),
        "mcp_read_p95_ms": round(percentile(mcp_read_ms, 0.95), 3),
        "targets": {"list_p50_ms": 20, "read_p50_ms": 1, "mcp_prompts_list_p50_ms": 20, "mcp_read_p50_ms": 1},
    }))


if __name__ == "__main__":
    main()
