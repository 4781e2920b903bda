"""What the agent-run loop (``core/running.py``) costs beside the model: each run searches, reads a
document and answers, against the scripted OpenAI-compatible server of the tests (it answers at once,
so what is measured is the loop: the request to the model, the tool calls through the core, the
record saved after every step).

    python benchmarks/agent_loop.py [--runs 20]

A real ``Harness`` over a copy of the bundled sample docs (keyword search; no embedding). Prints one
JSON line: ``run_p50_ms`` / ``run_p95_ms`` (a whole run of 3 model replies and 2 tool calls),
``per_step_ms`` (a run's time over its model replies), ``model_wait_p50_ms`` (the replies' own time
as the record gives it) and ``record_bytes`` (one run's saved record).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# benchmarks/mcp.py would shadow the MCP SDK: drop this folder from the path, put the repo and tests first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import anyio  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.face import Harness, RunRequest  # noqa: E402
from context_harness.sample import DOCS  # noqa: E402
from support.chat_server import ScriptedChat, message, tool_calls  # noqa: E402


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def script(runs: int) -> list:  # type: ignore[type-arg]
    one = [tool_calls([("search", {"query": "install the server", "limit": 3})]),
           tool_calls([("sources", {})]), message("It installs with uvx context-harness.")]
    return one * runs


async def measure(folder: Path, url: str, runs: int) -> dict[str, object]:
    config = config_mod.from_dict({
        "db": {"path": str(folder / "data" / "ctx.sqlite")},
        "embedding": {"provider": "disabled"},
        "connectors": {"filesystem": {"docs": {"root": str(folder / "docs")}}},
        "models": {"local": {"url": url, "model": "scripted"}},
        "agents": {"helper": {"tools": ["search", "get", "sources"], "system_prompt": "Answer from the docs."}},
    }, folder / "ctx.toml")
    totals, waits, sizes = [], [], []
    async with Harness.open(config) as harness:
        await harness.sync()
        for _ in range(runs):
            started = time.perf_counter()
            record = await harness.run_agent(RunRequest(agent="helper", task="How do I install it?"))
            totals.append((time.perf_counter() - started) * 1000)
            assert record["status"] == "finished", record["reason"]
            waits += [s["seconds"] * 1000 for s in record["steps"] if s["kind"] == "model"]
            sizes.append(len(json.dumps(record)))
    return {"runs": runs, "run_p50_ms": round(statistics.median(totals), 1),
            "run_p95_ms": round(percentile(totals, 0.95), 1),
            "per_step_ms": round(statistics.median(totals) / 3, 1),
            "model_wait_p50_ms": round(statistics.median(waits), 1), "record_bytes": int(statistics.median(sizes))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copytree(DOCS, folder / "docs")
        with ScriptedChat(script(args.runs + 1)) as chat:
            figures = anyio.run(measure, folder, chat.url, args.runs)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
