"""Load: one HTTP server on 127.0.0.1 under concurrent clients while its index changes.

    python benchmarks/load.py [--requests 20000] [--clients 32] [--slow 16]

Starts ``ctx serve --http`` on a workspace of generated notes (two folders, keyword search: the
load is on the server, not on a model), with a Lua tool and the folder watched. Then, at once:

- ``--clients`` clients send ``--requests`` requests in all, a fixed mix: keyword searches with
  and without filters, ``get`` of a search hit's chunk, and Lua tool calls (one in ten of them
  runs ``context.search``);
- a second process runs ``ctx sync`` of another source into the same workspace, twice;
- notes are written into the watched folder every 0.2 s (the live index updates them);
- ``--slow`` slowloris clients try to hold connections open, sending a header byte every second
  (half of them instead a request body, one byte a second); the server cuts those still sending
  headers after ``[server] header_timeout``.

Prints one JSON line: requests, failures (with the first few), throughput, p50/p99 per kind and
overall, the server's RSS after a warm-up under the same load (``--warm-up`` requests, not counted) and
at the end (growth in % between the medians of the first and the last readings, and a sample every
5 s), live updates seen, and
how many slow connections were cut by the server (those trickling headers) and how many
still held. Bounded: every request has a timeout, and
the run stops after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
LEVEL = 6  # 5-second RSS samples in a level (30 s): the first and the last of the run, for the growth

WORDS = ("river stone maple copper lantern harbor meadow signal orbit candle ledger violet summit thunder "
         "garden mirror falcon canyon quartz ember willow beacon").split()
TOOL = """
tool = {
  description = "Echo, or search the knowledge base",
  parameters = { {name = "text", type = "string", required = true}, {name = "search", type = "boolean"} },
}
function tool.execute(params, context)
  if params.search then
    local hits = context.search(params.text, {limit = 3})
    return {count = #hits}
  end
  return {echo = params.text}
end
"""


def note(i: int, rng: random.Random, extra: str = "") -> str:
    body = " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(250))
    return f"# Note {i}\n\n{body}\n\n## Details\n\n{body[::-1]} {extra}\n"


def write_workspace(root: Path, notes: int) -> Path:
    rng = random.Random(16)
    for folder, count in (("docs", notes), ("archive", notes)):
        (root / folder).mkdir(parents=True)
        for i in range(count):
            (root / folder / f"n{i:05d}.md").write_text(note(i, rng), encoding="utf-8")
    (root / "echo.lua").write_text(TOOL, encoding="utf-8")
    cfg = root / "ctx.toml"
    cfg.write_text('[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n'
                   '[server]\nsync_on_start = false\n\n'
                   '[connectors.filesystem.docs]\nroot = "docs"\n\n'
                   '[connectors.filesystem.archive]\nroot = "archive"\n\n'
                   '[tools.script.echo]\npath = "echo.lua"\ntimeout = 10\n', encoding="utf-8")
    return cfg


def ctx(*args: str) -> list[str]:
    return [sys.executable, "-m", "context_harness", *args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int, kind: str = "VmRSS") -> int:
    """The process's resident memory in kB: all of it (``VmRSS``), or ``RssAnon`` (its own heap
    and stacks) or ``RssFile`` (pages of mapped files, such as the keyword index's segments)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(kind + ":"):
            return int(line.split()[1])
    return 0


class Load:
    def __init__(self, base: str, requests: int, clients: int, seed: int = 7) -> None:
        self.base, self.total, self.clients = base, requests, clients
        self.rng = random.Random(seed)
        self.sent = 0
        self.latency: dict[str, list[float]] = {"keyword": [], "filtered": [], "get": [], "tool": []}
        self.failures: list[str] = []
        self.hits: list[tuple[str, int]] = []  # (id, chunk) from searches, for gets

    def next_request(self) -> tuple[str, str, dict[str, Any]] | None:
        if self.sent >= self.total:
            return None
        self.sent += 1
        roll = self.rng.random()
        query = " ".join(self.rng.choice(WORDS) + str(self.rng.randrange(50)) for _ in range(3))
        if roll < 0.35:
            return "keyword", "/tools/search", {"query": query, "mode": "keyword", "limit": 10}
        if roll < 0.55:
            return "filtered", "/tools/search", {"query": query, "source": "filesystem:docs", "limit": 5}
        if roll < 0.8 and self.hits:
            doc_id, chunk = self.rng.choice(self.hits)
            return "get", "/tools/get", {"id": doc_id, "chunk": chunk, "max_chars": 4000}
        return "tool", "/tools/echo", {"text": query, "search": self.rng.random() < 0.1}

    async def client(self, http: httpx.AsyncClient) -> None:
        while (job := self.next_request()) is not None:
            kind, path, body = job
            started = time.perf_counter()
            try:
                response = await http.post(self.base + path, json=body, timeout=30)
                ok = response.status_code == 200
                payload = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                ok, payload = False, {"exception": repr(exc)}
            self.latency[kind].append(time.perf_counter() - started)
            if not ok:
                # a get of a note the live index just replaced is a correct not_found, not a failure
                if kind == "get" and payload.get("error", {}).get("code") == "not_found":
                    continue
                self.failures.append(f"{kind} {response.status_code if 'response' in locals() else ''}: "
                                     f"{json.dumps(payload)[:200]}")
            elif kind in ("keyword", "filtered"):
                for hit in payload["results"][:3]:
                    if len(self.hits) < 2000:
                        self.hits.append((hit["id"], hit.get("chunk") or 0))


async def slowloris(port: int, stop: asyncio.Event, body: bool, held: list[tuple[bool, bool]]) -> None:
    """Hold one connection open, sending one byte a second (of the headers, or of a body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if body:
        head = (f"POST /tools/search HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                "Content-Length: 100000\r\n\r\n")
        writer.write(head.encode())
        trickle = b'{"query": "' + b"a" * 99_000
    else:
        trickle = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode() + b"x" * 100_000
    alive = True
    for byte in trickle:
        if stop.is_set():
            break
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except (ConnectionError, OSError):
            alive = False
            break
        if reader.at_eof():
            alive = False
            break
        await asyncio.sleep(1.0)
    held.append((body, alive))
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


async def churn(root: Path, stop: asyncio.Event, env: dict[str, str]) -> dict[str, Any]:
    """Edits in the watched folder every 0.2 s, and `ctx sync` of the other source (twice) meanwhile."""
    rng = random.Random(3)
    edits, syncs = 0, []
    sync: subprocess.Popen | None = None
    while not stop.is_set():
        i = rng.randrange(200)
        (root / "docs" / f"n{i:05d}.md").write_text(note(i, rng, f"edit{edits}"), encoding="utf-8")
        edits += 1
        if sync is None and len(syncs) < 2:
            for j in rng.sample(range(400), 100):  # the archive changes, so each sync has work to do
                (root / "archive" / f"n{j:05d}.md").write_text(note(j, rng, f"v{len(syncs)}"), encoding="utf-8")
            sync = subprocess.Popen(ctx("sync", "filesystem:archive", "--config", str(root / "ctx.toml")), env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            sync_started = time.perf_counter()
        elif sync is not None and sync.poll() is not None:
            assert sync.stderr is not None
            syncs.append({"exit": sync.returncode, "seconds": round(time.perf_counter() - sync_started, 2),
                          "stderr": sync.stderr.read().decode(errors="replace")[-300:]})
            sync.stderr.close()
            sync = None
        await asyncio.sleep(0.2)
    if sync is not None:
        _, err = sync.communicate(timeout=120)
        syncs.append({"exit": sync.returncode, "seconds": round(time.perf_counter() - sync_started, 2),
                      "stderr": err.decode(errors="replace")[-300:]})
    return {"edits": edits, "syncs": syncs}


async def sample_rss(pid: int, stop: asyncio.Event, samples: list[float]) -> None:
    while not stop.is_set():
        samples.append(round(rss_kb(pid) / 1024, 1))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 5)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def drive(port: int, root: Path, server_pid: int, args: argparse.Namespace, env: dict[str, str]) -> dict:
    base = f"http://127.0.0.1:{port}"
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(limits=limits) as http:
        stop = asyncio.Event()
        changes = asyncio.create_task(churn(root, stop, env) if args.churn else asyncio.sleep(0, {}))
        # Warm-up: the same mix while the index changes, until the server's memory is in its steady
        # state (thread pool grown, caches filled, a few commits and reloads done); not measured.
        warm = Load(base, args.warm_up, args.clients, seed=1)
        await asyncio.gather(*(warm.client(http) for _ in range(args.clients)))
        rss_start, anon_start, file_start = (rss_kb(server_pid, k) for k in ("VmRSS", "RssAnon", "RssFile"))
        load = Load(base, args.requests, args.clients)
        load.hits = warm.hits
        held: list[tuple[bool, bool]] = []  # (trickling a body rather than headers, still open at the end)
        slow = [asyncio.create_task(slowloris(port, stop, i % 2 == 1, held)) for i in range(args.slow)]
        samples: list[float] = []
        sampler = asyncio.create_task(sample_rss(server_pid, stop, samples))
        started, cpu_started = time.perf_counter(), cpu_seconds(server_pid)
        try:
            await asyncio.wait_for(asyncio.gather(*(load.client(http) for _ in range(args.clients))),
                                   args.max_seconds)
        finally:
            seconds = time.perf_counter() - started
            server_cpu = cpu_seconds(server_pid) - cpu_started
            stop.set()
            await asyncio.gather(*slow, return_exceptions=True)
            churned = await changes
            await sampler
        await asyncio.sleep(2)  # the last live update's commit settles: what stays is what counts
        rss_end, anon_end, file_end = (rss_kb(server_pid, k) for k in ("VmRSS", "RssAnon", "RssFile"))
    figures = request_figures([load], seconds)
    return {
        **figures, "clients": args.clients,
        "server_cpu_ms_per_request": round(1000 * server_cpu / max(figures["requests"], 1), 2),
        "rss_mb_after_warm_up": round(rss_start / 1024, 1), "rss_mb_end": round(rss_end / 1024, 1),
        "rss_growth_pct": steady_growth(rss_start / 1024, rss_end / 1024, samples),
        "rss_growth_pct_end_points": round(100 * (rss_end - rss_start) / rss_start, 1),
        "rss_growth_pct_second_half": second_half_growth(rss_end / 1024, samples),
        "rss_anon_mb": [round(anon_start / 1024, 1), round(anon_end / 1024, 1)],
        "rss_file_mb": [round(file_start / 1024, 1), round(file_end / 1024, 1)],
        "rss_mb_every_5s": samples, "slow_clients": args.slow,
        "slow_header_clients_cut": sum(not alive for body, alive in held if not body),
        "slow_body_clients_held": sum(alive for body, alive in held if body), **churned,
    }


def request_figures(runs: list[Load], seconds: float) -> dict[str, Any]:
    """Requests, failures (the first few), throughput and p50/p99 overall and per kind of ``runs`` together."""
    latency: dict[str, list[float]] = {}
    for run in runs:
        for kind, values in run.latency.items():
            latency.setdefault(kind, []).extend(values)
    every = [v for values in latency.values() for v in values]
    failures = [f for run in runs for f in run.failures]
    return {
        "requests": len(every), "failures": len(failures), "first_failures": failures[:5],
        "seconds": round(seconds, 1), "throughput_rps": round(len(every) / seconds, 1),
        "p50_ms": round(statistics.median(every) * 1000, 2), "p99_ms": round(percentile(every, 0.99) * 1000, 2),
        "by_kind": {k: {"n": len(v), "p50_ms": round(percentile(v, 0.5) * 1000, 2),
                        "p99_ms": round(percentile(v, 0.99) * 1000, 2)} for k, v in latency.items()},
    }


def steady_growth(start_mb: float, end_mb: float, samples: list[float]) -> float:
    """RSS growth in % from the run's first level to its last: the median of the first ``LEVEL``
    5-second samples (the first is the value after the warm-up) against the median of the last
    ``LEVEL`` and the value at the end. Single readings swing by up to 15 MB within a steady state (a
    live commit's indexing buffers come and go), more than the bound allows; one low reading right
    after the warm-up (CI: 94.7 MB, then 107.4, 99.4, 100.0) made a flat run look like +17 %. A leak
    moves both medians apart."""
    first = statistics.median((samples or [start_mb])[:LEVEL])
    last = statistics.median([*samples[-LEVEL:], end_mb])
    return round(100 * (last - first) / first, 1)


def second_half_growth(end_mb: float, samples: list[float]) -> float:
    """RSS growth in % over the second half of the run: the lowest of the five samples around its middle
    against the lowest of the last five and the end value. A leak keeps growing with the work; the
    native caches that fill after warm-up (a new keyword segment's stored-document cache fills as
    searches read from it) level off, so the second half tells the two apart. The floors, not medians:
    single readings swing 10-30 % above the floor with the requests in flight (RELIABILITY.md), and
    memory that is kept raises the floor."""
    middle = len(samples) // 2
    mid = min(samples[max(0, middle - 2):middle + 3] or [end_mb])
    last = min([*samples[-5:], end_mb])
    return round(100 * (last - mid) / mid, 1)


def child_env(root: Path) -> dict[str, str]:
    kept = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "MALLOC_ARENA_MAX")
    env = {k: v for k, v in os.environ.items() if k in kept}
    env.update(XDG_DATA_HOME=str(root / "xdg-data"), XDG_CONFIG_HOME=str(root / "xdg-config"),
               XDG_CACHE_HOME=str(root / "xdg-cache"), HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p))
    return env


def start_server(cfg: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen, int]:
    """``ctx serve --http`` on a free port of 127.0.0.1, its stderr in ``log``; returns once it is healthy."""
    port = free_port()
    with open(log, "wb") as out:  # a file: a pipe could fill and block
        server = subprocess.Popen(ctx("serve", "--http", "--bind", f"127.0.0.1:{port}", "--config", str(cfg)),
                                  env=env, stdout=subprocess.DEVNULL, stderr=out)
    deadline = time.monotonic() + 60
    while True:
        if server.poll() is not None or time.monotonic() > deadline:
            stop_server(server)
            raise RuntimeError(f"the server did not start: {log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return server, port
        time.sleep(0.1)


def stop_server(server: subprocess.Popen, log: Path | None = None) -> None:
    """Terminate (then kill) the server; print the end of ``log`` if it holds an error."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    if log is not None:
        text = log.read_text(errors="replace")
        if any("Traceback" in line or line.startswith("ERROR") for line in text.splitlines()):
            print(f"{log.name}:\n{text[-4000:]}", file=sys.stderr)


def run(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cfg = write_workspace(root, args.notes)
        env = child_env(root)
        subprocess.run(ctx("sync", "--config", str(cfg)), env=env, check=True, capture_output=True, timeout=600)
        server, port = start_server(cfg, env, root / "server.log")
        try:
            figures = asyncio.run(drive(port, root, server.pid, args, env))
            figures["server_alive"] = server.poll() is None
            return figures
        finally:
            stop_server(server, root / "server.log")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--slow", type=int, default=16)
    parser.add_argument("--warm-up", type=int, default=3000, help="Requests before measuring (not counted).")
    parser.add_argument("--notes", type=int, default=400)
    parser.add_argument("--max-seconds", type=float, default=600)
    parser.add_argument("--no-churn", dest="churn", action="store_false",
                        help="No sync and no live updates during the run (to tell their cost apart).")
    return parser.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(run(parse())))
