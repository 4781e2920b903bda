"""MCP server latency on SciFact: cold start and search round trips over stdio and HTTP.

    .venv/bin/python benchmarks/mcp.py [--queries 300] [--starts 5]

Writes the SciFact corpus (../shared/data/beir/scifact) as Markdown files into a temp folder,
syncs it, then measures:

- ``cold_start_s``: spawn ``python -m context_harness --config ...`` -> the ``tools/list`` result
  (initialize, initialized and tools/list are written at once, as a desktop client does). Median
  of ``--starts`` spawns with Python bytecode cached (what every launch after the first sees); the
  ``_nopyc`` figure compiles every module from source (PYTHONDONTWRITEBYTECODE, the first launch).
- ``stdio_search_ms``: ``tools/call search`` (keyword) round trip over the raw stdio pipe.
- ``http_*``: the same over ``ctx serve --http``: cold start (spawn -> tools/list through /mcp), MCP
  ``tools/call`` through the SDK client (includes its result validation), and ``POST /tools/search``.

Prints one JSON line. Targets (issue 3): cold start <= 1.5 s; stdio keyword search p50 <= 5 ms.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

# This file is named like the SDK package: keep its folder off sys.path so `import mcp` finds the SDK,
# and load the shared SciFact helpers by path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("ctx_bench_scifact", _HERE / "scifact.py")
assert _spec is not None and _spec.loader is not None
scifact = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scifact)

BIN = Path(sys.executable).parent
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def line(message: dict) -> bytes:
    return (json.dumps(message) + "\n").encode()


class StdioPeer:
    """A raw JSON-RPC peer over the server's stdin/stdout (no client library in the timing)."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "context_harness", "--config", str(config)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        self.next_id = 1

    def send(self, *messages: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(line(m) for m in messages))
        self.proc.stdin.flush()

    def wait_for(self, request_id: int) -> dict:
        assert self.proc.stdout is not None
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                raise RuntimeError("the server closed stdout")
            message = json.loads(raw)
            if message.get("id") == request_id:
                return message

    def handshake(self) -> float:
        """initialize + initialized + tools/list written together; seconds from spawn to tools/list."""
        self.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        self.wait_for(0)
        assert self.wait_for(1)["result"]["tools"]
        self.next_id = 2
        return time.perf_counter() - self.started

    def call(self, name: str, arguments: dict) -> dict:
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})
        return self.wait_for(request_id)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def http_figures(config: Path, env: dict[str, str], texts: list[str]) -> dict:
    import httpx2
    from mcp import Client

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    proc = subprocess.Popen([str(BIN / "ctx"), "serve", "--http", "--bind", f"127.0.0.1:{port}", "--config",
                             str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while True:
            try:
                async with Client(f"{url}/mcp", mode="legacy") as client:
                    await client.list_tools()
                break
            except Exception:
                if proc.poll() is not None or time.perf_counter() - started > 60:
                    raise RuntimeError("ctx serve --http did not come up") from None
                await anyio.sleep(0.02)
        cold = time.perf_counter() - started
        mcp_times, rest_times = [], []
        async with Client(f"{url}/mcp", mode="legacy") as client:
            await client.list_tools()
            for text in texts:
                t0 = time.perf_counter()
                result = await client.call_tool("search", {"query": text, "mode": "keyword", "limit": 10})
                mcp_times.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error
        async with httpx2.AsyncClient(base_url=url, timeout=30) as http:
            for text in texts:
                t0 = time.perf_counter()
                response = await http.post("/tools/search", json={"query": text, "mode": "keyword", "limit": 10})
                rest_times.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return {
        "http_cold_start_s": round(cold, 3),
        "http_mcp_search_ms_p50": round(pct(mcp_times, 50), 2), "http_mcp_search_ms_p95": round(pct(mcp_times, 95), 2),
        "http_rest_search_ms_p50": round(pct(rest_times, 50), 2),
        "http_rest_search_ms_p95": round(pct(rest_times, 95), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()

    docs = scifact.corpus()
    texts = list(scifact.queries().values())[: args.queries]
    with tempfile.TemporaryDirectory(prefix="ctx-bench-mcp-") as tmp:
        root = Path(tmp)
        scifact.write_markdown(docs, root / "docs")
        config = root / "ctx.toml"
        config.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                          '[server]\nsync_on_start = false\n[connectors.filesystem.scifact]\nroot = "docs"\n',
                          encoding="utf-8")
        t0 = time.perf_counter()
        subprocess.run([str(BIN / "ctx"), "sync", "--config", str(config), "--progress", "none"], check=True,
                       stdout=subprocess.DEVNULL)
        sync_s = time.perf_counter() - t0

        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        cached = {**base, "PYTHONPYCACHEPREFIX": str(root / "pycache")}
        nopyc = {**base, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(root / "empty-pycache")}

        warm = StdioPeer(config, cached)  # fills the bytecode cache
        warm.handshake()
        warm.close()
        starts, starts_nopyc = [], []
        for _ in range(args.starts):
            peer = StdioPeer(config, cached)
            starts.append(peer.handshake())
            peer.close()
        for _ in range(max(1, args.starts // 2)):
            peer = StdioPeer(config, nopyc)
            starts_nopyc.append(peer.handshake())
            peer.close()

        peer = StdioPeer(config, cached)
        peer.handshake()
        for text in texts[:20]:  # warm the index reader and caches
            peer.call("search", {"query": text, "mode": "keyword", "limit": 10})
        times = []
        for text in texts:
            t1 = time.perf_counter()
            reply = peer.call("search", {"query": text, "mode": "keyword", "limit": 10})
            times.append((time.perf_counter() - t1) * 1000)
            assert "error" not in reply and not reply["result"].get("isError"), reply
        peer.close()

        figures = {
            "benchmark": "mcp", "corpus": "scifact", "documents": len(docs), "queries": len(texts),
            "cpus": os.cpu_count(), "sync_s": round(sync_s, 2),
            "cold_start_s": round(statistics.median(starts), 3), "cold_start_s_min": round(min(starts), 3),
            "cold_start_nopyc_s": round(statistics.median(starts_nopyc), 3),
            "stdio_search_ms_p50": round(pct(times, 50), 2), "stdio_search_ms_p95": round(pct(times, 95), 2),
        }
        figures.update(anyio.run(http_figures, config, cached, texts))
        figures["targets_met"] = figures["cold_start_s"] <= 1.5 and figures["stdio_search_ms_p50"] <= 5
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
