"""Does background embedding leave answers alone? Keyword search latency of the real stdio server,
idle and while it embeds a backlog of pending chunks.

    .venv/bin/python benchmarks/embed_priority.py [--files 5000] [--seconds 20] [--interval 0.05]

Writes ``--files`` generated notes into a temp workspace with the bundled model, syncs them with
``ctx sync --no-embed`` (every chunk left pending), then starts ``python -m context_harness`` twice
with the MCP SDK's client, issuing a keyword search every ``--interval`` seconds for ``--seconds``
(a client's pace: back-to-back searches would keep the server's GIL busy and starve the embedding):

- ``idle``: ``[server] sync_on_start = false``, so nothing embeds;
- ``embedding``: ``sync_on_start = true``: the server embeds the pending chunks in the background
  (``Harness.embed_new``) while it answers.

For each: p50/p99 of the search round trips (ms), the server's CPU over the window (utime + stime
from /proc, in cores), its RSS at the end and peak RSS (VmHWM), ``niced_threads`` (the most of its
threads seen at a lowered priority), and for ``embedding`` how many chunks it embedded meanwhile.
``load_avg_1m`` is the machine's load at the end (other work on a shared machine competes with the
niced embedding threads). ``p50_ratio`` is embedding p50 / idle p50 (target <= 1.2). Prints one
JSON object. Bounded: each phase lasts ``--seconds`` plus the server's start.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import freshness  # it drops this folder from sys.path again: benchmarks/mcp.py would shadow the SDK

QUERIES = [f"{a} {b}" for a in freshness.WORDS[:12] for b in freshness.WORDS[12:24]]


def embedded_chunks(db: Path) -> int:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    finally:
        conn.close()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmHWM")


def niced_threads(pid: int) -> int:
    """Threads of ``pid`` running at a positive nice value (``/proc/PID/task/*/stat``, field 19)."""
    count = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        count += int(fields[16]) > 0
    return count


def write_config(root: Path, sync_on_start: bool) -> Path:
    path = root / "ctx.toml"
    path.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "local"\n'
                    f'[server]\nsync_on_start = {"true" if sync_on_start else "false"}\nwatch = false\n'
                    '[connectors.filesystem.notes]\nroot = "docs"\n')
    return path


async def phase(root: Path, sync_on_start: bool, seconds: float, interval: float) -> dict[str, Any]:
    """A keyword search every ``interval`` seconds for ``seconds`` against a freshly started server."""
    config_path = write_config(root, sync_on_start)
    db = root / "data" / "ctx.sqlite"
    async with freshness.serve(config_path) as client:
        server = freshness.Server(client, config_path)
        await server.search("warm up the keyword index")
        if sync_on_start:  # wait until the background embedding is under way
            started_waiting = time.perf_counter()
            before = embedded_chunks(db)
            while embedded_chunks(db) == before:
                if time.perf_counter() - started_waiting > 60:
                    raise RuntimeError("the server embedded nothing in 60 s (see its log above)")
                await anyio.sleep(0.1)
        embedded_before = embedded_chunks(db)
        cpu_before, wall_before = freshness.cpu_seconds(server.pid), time.perf_counter()
        latencies: list[float] = []
        niced = 0
        rng = random.Random(11)
        while time.perf_counter() - wall_before < seconds:
            query = rng.choice(QUERIES)
            started = time.perf_counter()
            await server.search(query)
            latencies.append((time.perf_counter() - started) * 1000)
            niced = max(niced, niced_threads(server.pid))
            await anyio.sleep(interval)
        wall = time.perf_counter() - wall_before
        cpu = freshness.cpu_seconds(server.pid) - cpu_before
        out = {"p50_ms": freshness.pct(latencies, 50), "p99_ms": freshness.pct(latencies, 99),
               "searches": len(latencies), "cpu_s": round(cpu, 1), "cpu_cores": round(cpu / wall, 2),
               "rss_mb": freshness.rss_mb(server.pid), "peak_rss_mb": peak_rss_mb(server.pid),
               "niced_threads": niced}
        if sync_on_start:
            out["chunks_embedded"] = embedded_chunks(db) - embedded_before
        return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=0.05)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctx-embed-priority-") as tmp:
        root = Path(tmp)
        freshness.workspace(root, args.files, "local", watch=False)
        config_path = write_config(root, sync_on_start=False)
        sync_s = freshness.ctx_sync(config_path, embed=False)
        conn = sqlite3.connect(root / "data" / "ctx.sqlite")
        chunks = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        conn.close()
        idle = await phase(root, False, args.seconds, args.interval)
        busy = await phase(root, True, args.seconds, args.interval)
    print(json.dumps({"load_avg_1m": round(os.getloadavg()[0], 2), "files": args.files, "pending_chunks": chunks,
                      "sync_s": sync_s, "seconds": args.seconds,
                      "idle": idle, "embedding": busy,
                      "p50_ratio": round(busy["p50_ms"] / idle["p50_ms"], 2),
                      "p99_ratio": round(busy["p99_ms"] / idle["p99_ms"], 2)}))


if __name__ == "__main__":
    anyio.run(main)
