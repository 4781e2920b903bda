"""Lua calls cannot starve the server: a burst of one slow Lua tool against the real stdio server.

    python benchmarks/lua_load.py [--burst 45] [--sleep 15] [--timeout 20] [--probes 40]

Starts ``python -m context_harness --config ...`` (a fresh workspace: a few notes, a watched
folder, two Lua tools) and talks to it with the MCP client over stdio. First, with nothing else
running, it measures a trivial Lua tool (``echo``) and keyword ``search`` (``--probes`` calls
each). Then it sends ``--burst`` concurrent calls of ``slow`` (``sleep(--sleep)``, ``timeout =
--timeout``) and, while they run, measures ``echo`` and ``search`` again and saves three notes into
the watched folder, timing each until a keyword search finds it. Prints one JSON line: p50/p99 ms
idle and under the burst, the note latencies, how the burst's calls ended (ok / timeout / busy) and
the longest wall time of any of them against ``timeout + 1 s``. Bounded: about ``--timeout`` + 10 s.
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
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # benchmarks/mcp.py would shadow the SDK

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

SLOW = """
tool = {description = "sleeps", parameters = {{name = "s", type = "number", required = true}}}
function tool.execute(p) sleep(p.s) return "slept" end
"""
ECHO = """
tool = {description = "echo", parameters = {{name = "text", type = "string", required = true}}}
function tool.execute(p) return p.text end
"""


def workspace(root: Path, timeout: float) -> Path:
    notes = root / "notes"
    notes.mkdir()
    for i in range(20):
        (notes / f"note-{i}.md").write_text(f"# Note {i}\n\nTantivy keyword search note number {i}.\n")
    (root / "slow.lua").write_text(SLOW)
    (root / "echo.lua").write_text(ECHO)
    config = root / "ctx.toml"
    config.write_text(f"""[db]
path = "data/ctx.sqlite"

[embedding]
provider = "disabled"

[connectors.filesystem.notes]
root = "notes"

[tools.script.slow]
path = "slow.lua"
timeout = {timeout}

[tools.script.echo]
path = "echo.lua"
""")
    return config


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1), "p99_ms": round(p99 * 1000, 1)}


async def timed(client: Client, name: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    start = time.monotonic()
    result = await client.call_tool(name, arguments)
    return time.monotonic() - start, result


async def probe(client: Client, count: int) -> dict[str, dict[str, float]]:
    echo, search = [], []
    for i in range(count):
        seconds, result = await timed(client, "echo", {"text": f"t{i}"})
        assert not result.is_error, result
        echo.append(seconds)
        seconds, result = await timed(client, "search", {"query": "tantivy keyword", "mode": "keyword"})
        assert not result.is_error, result
        search.append(seconds)
    return {"echo": percentiles(echo), "keyword_search": percentiles(search)}


async def note_latency(client: Client, notes: Path, word: str) -> float:
    """Seconds from saving a note with ``word`` to a keyword search finding it (cap 10 s)."""
    start = time.monotonic()
    (notes / f"{word}.md").write_text(f"# {word}\n\nA fresh note about {word}.\n")
    while time.monotonic() - start < 10:
        result = await client.call_tool("search", {"query": word, "mode": "keyword"})
        if result.structured_content and result.structured_content.get("results"):
            return time.monotonic() - start
        await anyio.sleep(0.02)
    return float("inf")


async def wait_indexed(client: Client, count: int) -> None:
    with anyio.fail_after(60):
        while True:
            result = await client.call_tool("search", {"query": "tantivy", "mode": "keyword", "limit": 50})
            if result.structured_content and len(result.structured_content.get("results", [])) >= count:
                return
            await anyio.sleep(0.1)


async def burst_call(client: Client, seconds: float, outcomes: list[tuple[str, float]]) -> None:
    start = time.monotonic()
    result = await client.call_tool("slow", {"s": seconds})
    wall = time.monotonic() - start
    if not result.is_error:
        outcomes.append(("ok", wall))
        return
    text = result.content[0].text if result.content else ""
    code = "busy" if '"busy"' in text or " is busy" in text else "timeout" if "timed out" in text else "error"
    outcomes.append((code, wall))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = workspace(root, args.timeout)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH")}
        env["XDG_DATA_HOME"] = str(root / "xdg")
        params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(config)],
                                       env=env, cwd=str(HERE.parent))
        async with Client(params) as client:
            await wait_indexed(client, 20)
            idle = await probe(client, args.probes)
            outcomes: list[tuple[str, float]] = []
            async with anyio.create_task_group() as tg:
                for _ in range(args.burst):
                    tg.start_soon(burst_call, client, args.sleep, outcomes)
                await anyio.sleep(1.0)
                loaded = await probe(client, args.probes)
                notes = [await note_latency(client, root / "notes", f"zebra{i}word") for i in range(3)]
        counts = {kind: sum(1 for k, _ in outcomes if k == kind) for kind in ("ok", "timeout", "busy", "error")}
        longest = max(wall for _, wall in outcomes)
        return {
            "benchmark": "lua_load", "cores": os.cpu_count(), "burst": args.burst, "sleep_s": args.sleep,
            "timeout_s": args.timeout, "idle": idle, "under_burst": loaded,
            "note_searchable_s": [round(n, 3) for n in notes],
            "burst_outcomes": counts, "burst_busy_max_ms": round(max((w for k, w in outcomes if k == "busy"),
                                                                        default=0.0) * 1000, 1),
            "burst_longest_wall_s": round(longest, 2), "within_timeout_plus_1s": longest <= args.timeout + 1,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=45)
    parser.add_argument("--sleep", type=float, default=15.0)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--probes", type=int, default=40)
    args = parser.parse_args()
    print(json.dumps(anyio.run(run, args)))


if __name__ == "__main__":
    main()
