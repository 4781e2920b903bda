"""Lua overhead: a trivial Lua tool call (runtime reused, no re-parse) and a 10,000-item connector scan.

    python benchmarks/lua.py [--calls 2000] [--items 10000]

Prints one JSON line: tool call p50/p95/mean in ms (validation + conversion + sandbox run + result
check, through ``LuaTool.call``), script load time, and the wall time of ``LuaConnector.scan``
returning ``--items`` items (script run + in-sandbox checks + conversion to ``SourceItem``s).

Through the product: the same connector configured as ``[connectors.script.bulk]`` synced by a full
``Harness.sync`` into a fresh workspace (scan + chunking + SQLite + Tantivy; target <= 5 s) and
re-synced unchanged, and the trivial tool configured as ``[tools.script.echo]`` called through
``Harness.call_tool`` (lookup in the one tool registry, then ``await tool.call``: validation,
worker-thread hop, sandbox run, ``{"result": ...}``; target p50 <= 2 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.config import LuaConfig, ScriptConfig  # noqa: E402
from context_harness.connectors.base import ScanReport  # noqa: E402
from context_harness.lua.connector import LuaConnector  # noqa: E402
from context_harness.lua.tools import LuaTool  # noqa: E402

TOOL = """
tool = {
  name = "echo", description = "Echo",
  parameters = { {name = "text", type = "string", required = true}, {name = "n", type = "integer", default = 1} },
}
function tool.execute(params, context) return {echo = params.text, n = params.n} end
"""

CONNECTOR = """
connector = {}
function connector.scan(config)
  local items = {}
  for i = 1, tonumber(config.items) do
    items[i] = {
      source_id = "doc-" .. i, title = "Document " .. i,
      body = "Body of document " .. i .. ". " .. string.rep("lorem ipsum dolor sit amet ", 8),
      author = "bench", source_url = "https://example.test/doc/" .. i,
      updated_at = 1767225600 + i, tags = {"bench", "t" .. (i % 7)}, metadata = {i = i},
    }
  end
  return items
end
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def through_harness(tmp: str, items: int, calls: int) -> dict[str, float | int]:
    """Full sync of the bulk connector and registry tool calls, through a real Harness."""
    from context_harness.core.harness import Harness

    root = Path(tmp, "workspace")
    root.mkdir()
    (root / "bulk.lua").write_text(CONNECTOR)
    (root / "echo.lua").write_text(TOOL)
    cfg = root / "ctx.toml"
    cfg.write_text(
        '[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n'
        f'[connectors.script.bulk]\npath = "bulk.lua"\nitems = {items}\n\n'
        '[tools.script.echo]\npath = "echo.lua"\n')
    config = config_mod.load(cfg)

    async def run() -> dict[str, float | int]:
        async with Harness.open(config) as harness:
            t0 = time.perf_counter()
            report = await harness.sync("script:bulk")
            sync_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = await harness.sync("script:bulk")
            resync_s = time.perf_counter() - t0
            for _ in range(50):
                await harness.call_tool("echo", {"text": "warm"})
            timings = []
            for i in range(calls):
                t0 = time.perf_counter()
                await harness.call_tool("echo", {"text": f"hello {i}"})
                timings.append((time.perf_counter() - t0) * 1e3)
            summary, unchanged = report.sources[0], again.sources[0]
            return {
                "harness_sync_items": summary.added,
                "harness_sync_s": round(sync_s, 3),
                "harness_resync_unchanged": unchanged.unchanged,
                "harness_resync_s": round(resync_s, 3),
                "registry_tool_call_p50_ms": round(statistics.median(timings), 3),
                "registry_tool_call_p95_ms": round(percentile(timings, 0.95), 3),
            }

    return anyio.run(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tool_path = Path(tmp, "echo.lua")
        tool_path.write_text(TOOL)
        started = time.perf_counter()
        tool = LuaTool("echo", ScriptConfig(path=tool_path), LuaConfig())
        load_ms = (time.perf_counter() - started) * 1e3
        for _ in range(50):  # warm-up
            tool.call({"text": "warm"})
        timings = []
        for i in range(args.calls):
            t0 = time.perf_counter()
            tool.call({"text": f"hello {i}"})
            timings.append((time.perf_counter() - t0) * 1e3)

        conn_path = Path(tmp, "bulk.lua")
        conn_path.write_text(CONNECTOR)
        conn = LuaConnector("bulk", ScriptConfig(path=conn_path, items=args.items), LuaConfig())
        started = time.perf_counter()
        report = ScanReport()
        count = sum(1 for c in conn.scan(report) if c.load() is not None)
        scan_s = time.perf_counter() - started
        product = through_harness(tmp, args.items, args.calls)

    print(json.dumps({
        "benchmark": "lua",
        "cores": os.cpu_count(),
        "tool_calls": args.calls,
        "tool_call_p50_ms": round(statistics.median(timings), 3),
        "tool_call_p95_ms": round(percentile(timings, 0.95), 3),
        "tool_call_mean_ms": round(statistics.fmean(timings), 3),
        "tool_load_ms": round(load_ms, 1),
        "connector_items": count,
        "connector_scan_s": round(scan_s, 3),
        "connector_skipped": sum(report.skipped.values()),
        **product,
    }))


if __name__ == "__main__":
    main()
