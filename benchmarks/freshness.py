"""How fresh the live index is, and what keeping it fresh costs, with the real server over stdio.

    .venv/bin/python benchmarks/freshness.py [--files 10000] [--trials 20] [--idle 60] [--burst 2000]
                                             [--hybrid-files 10000] [--no-hybrid]

Writes ``--files`` generated Markdown notes into a temp workspace (one filesystem connector), syncs
them with ``ctx sync``, then starts ``python -m context_harness --config ...`` (stdio MCP) with the
MCP SDK's client and measures:

- ``keyword``: a file created, edited or deleted -> reflected by the ``search`` tool (keyword mode),
  seconds from the write to the first answer that shows it; p50/p95/max of ``--trials`` each
  (target p95 <= 1 s).
- ``idle``: CPU of the serving process (utime + stime from /proc/PID/stat) over ``--idle`` seconds of
  no activity, in % of one core (target <= 1 %), and its RSS; ``watch_rss_mb`` compares it with the
  same server started with ``[server] watch = false`` (target <= 50 MB added).
- ``burst``: ``--burst`` files rewritten at once (a branch switch): seconds until every one is
  stored and searchable, the sync passes the server counted for them (``sources``' ``sync_passes``;
  target <= 2), and p50/p99 of the searches issued meanwhile.
- ``hybrid``: with the bundled model (a second workspace of ``--hybrid-files`` notes, embedded
  first): a new file -> found by ``hybrid`` search, and -> top hit of ``semantic`` search (the proof
  that its chunk was embedded), seconds, p50/max over 5 trials (target <= 3 s).

Prints one JSON object. Bounded: every wait gives up after 60 s and says so in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # `import mcp` finds the SDK

from mcp import Client, StdioServerParameters  # noqa: E402

WORDS = ("alpha river stone cloud garden lamp window paper bridge forest harbor signal engine copper "
         "meadow lantern orbit pencil canvas marble thunder valley shadow crystal velvet anchor beacon "
         "compass desert ember falcon glacier horizon island jungle kettle ladder mirror needle ocean "
         "pepper quartz ribbon saddle timber umbrella violet wagon yarrow zephyr").split()
PHRASES = [
    "The lighthouse keeper repainted the spiral staircase before the winter storms arrived.",
    "Our quarterly budget review showed that cloud hosting costs doubled since spring.",
    "A recipe for sourdough bread needs a lively starter, flour, water and patience.",
    "The hiking trail climbs through pine forest to a glacier lake above the valley.",
    "Vaccination schedules for puppies start at six weeks with a booster every month.",
]
QUERIES = [
    "who painted the stairs in the lighthouse",
    "how much more did we spend on cloud servers",
    "how to bake bread with a starter",
    "walking path to a mountain lake",
    "when should a young dog get its shots",
]
WAIT = 60.0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))], 4)


def figures(values: list[float]) -> dict[str, float]:
    return {"p50": pct(values, 50), "p95": pct(values, 95), "max": round(max(values), 4), "n": len(values)}


def note(i: int, rng: random.Random) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(60))
    return f"# Note {i}\n\n{body}\n\nreference token n{i:05d}\n"


def workspace(root: Path, files: int, provider: str, watch: bool = True) -> Path:
    docs = root / "docs"
    rng = random.Random(7)
    for i in range(files):
        path = docs / f"d{i // 100:03d}" / f"n{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(i, rng))
    return config(root, provider, watch)


def config(root: Path, provider: str, watch: bool = True, name: str = "ctx.toml") -> Path:
    path = root / name
    path.write_text(f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "{provider}"\n'
                    f'[server]\nwatch = {"true" if watch else "false"}\n'
                    '[connectors.filesystem.notes]\nroot = "docs"\n')
    return path


def ctx_sync(config_path: Path, embed: bool) -> float:
    started = time.perf_counter()
    args = [sys.executable, "-m", "context_harness", "sync", "--config", str(config_path), "--progress", "none"]
    subprocess.run(args + ([] if embed else ["--no-embed"]), check=True, capture_output=True, timeout=3600)
    return round(time.perf_counter() - started, 2)


def server_pid(config_path: Path) -> int:
    """The serving process started for ``config_path`` (found in /proc by its command line)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"context_harness" in cmdline and str(config_path).encode() in cmdline and b"sync" not in cmdline:
            return int(entry)
    raise RuntimeError("server process not found")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


class Server:
    """The real stdio server under the MCP SDK's client."""

    def __init__(self, client: Client, config_path: Path) -> None:
        self.client = client
        self.pid = server_pid(config_path)

    async def search(self, query: str, mode: str = "keyword", limit: int = 5) -> list[str]:
        result = await self.client.call_tool("search", {"query": query, "mode": mode, "limit": limit})
        assert not result.is_error, result
        return [r["source_id"] for r in result.structured_content["results"]]

    async def source(self) -> dict[str, Any]:
        result = await self.client.call_tool("sources", {})
        return result.structured_content["sources"][0]

    async def until(self, check: Callable[[], Awaitable[bool]], poll: float = 0.01) -> float | None:
        started = time.perf_counter()
        while time.perf_counter() - started < WAIT:
            if await check():
                return time.perf_counter() - started
            await anyio.sleep(poll)
        return None


def serve(config_path: Path) -> Client:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config",
                                                                       str(config_path)], env=env))


async def ready(server: Server, documents: int) -> None:
    async def synced() -> bool:
        state = await server.source()
        return state["document_count"] >= documents and state["watch"] in ("watched", "off") \
            and state["sync_passes"] >= 1 and not state["syncing"]
    if await server.until(synced, 0.2) is None:
        raise RuntimeError("the server did not finish its sync on start")


async def timed(change: Callable[[], object], server: Server, check: Callable[[], Awaitable[bool]],
                poll: float = 0.01) -> float:
    """Seconds from just before ``change()`` to the first answer passing ``check`` (WAIT if none)."""
    started = time.perf_counter()
    change()
    found = await server.until(check, poll)
    return time.perf_counter() - started if found is not None else WAIT


async def keyword_trial(server: Server, live: Path, t: int) -> tuple[float, float, float]:
    """One file created, edited, then deleted: seconds until the search tool shows each."""
    path, name = live / f"t{t}.md", f"live/t{t}.md"

    async def shown(word: str) -> bool:
        return await server.search(word) == [name]

    async def gone(word: str) -> bool:
        return name not in await server.search(word)

    created = await timed(lambda: path.write_text(f"# Trial {t}\n\nfreshcreate{t} appears\n"),
                          server, lambda: shown(f"freshcreate{t}"))
    await anyio.sleep(0.3)
    edited = await timed(lambda: path.write_text(f"# Trial {t}\n\nfreshedit{t} appears\n"),
                         server, lambda: shown(f"freshedit{t}"))
    await anyio.sleep(0.3)
    deleted = await timed(path.unlink, server, lambda: gone(f"freshedit{t}"))
    await anyio.sleep(0.3)
    return created, edited, deleted


async def keyword_trials(server: Server, docs: Path, trials: int) -> dict[str, Any]:
    live = docs / "live"
    live.mkdir(exist_ok=True)
    runs = [await keyword_trial(server, live, t) for t in range(trials)]
    created, edited, deleted = (list(column) for column in zip(*runs, strict=True))
    return {"created_s": figures(created), "edited_s": figures(edited), "deleted_s": figures(deleted)}


async def idle_cpu(server: Server, seconds: float) -> dict[str, Any]:
    await anyio.sleep(3)
    before, started = cpu_seconds(server.pid), time.perf_counter()
    await anyio.sleep(seconds)
    used, elapsed = cpu_seconds(server.pid) - before, time.perf_counter() - started
    return {"seconds": round(elapsed, 1), "cpu_s": round(used, 3),
            "cpu_pct_of_one_core": round(100 * used / elapsed, 3), "rss_mb": rss_mb(server.pid)}


def stored_with(db: Path, word: str) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM documents WHERE body LIKE ?", (f"%{word}%",)).fetchone()[0]
    finally:
        conn.close()


async def burst(server: Server, docs: Path, db: Path, count: int, files: int) -> dict[str, Any]:
    passes_before = (await server.source())["sync_passes"]
    chosen = random.Random(11).sample(range(files), count)
    latencies: list[float] = []
    done = anyio.Event()

    async def searching() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await server.search(random.choice(WORDS) + " " + random.choice(WORDS))
            latencies.append((time.perf_counter() - started) * 1000)
            await anyio.sleep(0.005)

    samples = random.Random(3).sample(chosen, 10)
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(searching)
        for i in chosen:  # rewritten as fast as Python writes: a checkout
            (docs / f"d{i // 100:03d}" / f"n{i:05d}.md").write_text(f"# Note {i}\n\nswitched branch burst{i:05d}\n")
        written = time.perf_counter() - started

        async def applied() -> bool:
            if stored_with(db, "switched branch") < count:
                return False
            for i in samples:
                if await server.search(f"burst{i:05d}") != [f"d{i // 100:03d}/n{i:05d}.md"]:
                    return False
            return True
        waited = await server.until(applied, 0.05)
        seconds = time.perf_counter() - started
        done.set()
    await anyio.sleep(1)
    state = await server.source()
    return {"files": count, "write_s": round(written, 3), "applied_s": round(seconds, 3) if waited else None,
            "sync_passes": state["sync_passes"] - passes_before,
            "searches_during": len(latencies), "search_ms_p50": pct(latencies, 50), "search_ms_p99": pct(latencies, 99)}


async def hybrid_trial(server: Server, live: Path, t: int, phrase: str, query: str) -> tuple[float, float]:
    """A new note: seconds until hybrid search lists it, and until it is semantic search's top hit."""
    name = f"semantic/s{t}.md"

    async def by_hybrid() -> bool:
        return name in await server.search(query, "hybrid", 5)

    async def by_meaning() -> bool:
        return (await server.search(query, "semantic", 1)) == [name]

    start = time.perf_counter()
    (live / f"s{t}.md").write_text(f"# Field note {t}\n\n{phrase}\n")
    found = await server.until(by_hybrid, 0.02)
    hybrid = time.perf_counter() - start if found is not None else WAIT
    found = await server.until(by_meaning, 0.02)
    semantic = time.perf_counter() - start if found is not None else WAIT
    await anyio.sleep(0.5)
    return hybrid, semantic


async def hybrid_trials(server: Server, docs: Path) -> dict[str, Any]:
    live = docs / "semantic"
    live.mkdir(exist_ok=True)
    runs = [await hybrid_trial(server, live, t, phrase, query)
            for t, (phrase, query) in enumerate(zip(PHRASES, QUERIES, strict=True))]
    hybrid, semantic = (list(column) for column in zip(*runs, strict=True))
    return {"hybrid_found_s": figures(hybrid), "semantic_top1_s": figures(semantic)}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"files": args.files, "cores": os.cpu_count()}
    root = Path(tempfile.mkdtemp(prefix="ctx-fresh-"))
    try:
        cfg = workspace(root, args.files, "disabled")
        out["initial_sync_s"] = ctx_sync(cfg, embed=False)
        unwatched = config(root, "disabled", watch=False, name="unwatched.toml")
        async with serve(unwatched) as client:
            server = Server(client, unwatched)
            await ready(server, args.files)
            for _ in range(20):
                await server.search("river stone")
            await anyio.sleep(3)
            rss_unwatched = rss_mb(server.pid)
        async with serve(cfg) as client:
            server = Server(client, cfg)
            await ready(server, args.files)
            for _ in range(20):
                await server.search("river stone")
            await anyio.sleep(3)
            out["watch_rss_mb"] = {"watched": rss_mb(server.pid), "unwatched": rss_unwatched,
                                   "added": round(rss_mb(server.pid) - rss_unwatched, 1)}
            out["idle"] = await idle_cpu(server, args.idle)
            out["keyword"] = await keyword_trials(server, root / "docs", args.trials)
            out["burst"] = await burst(server, root / "docs", root / "data" / "ctx.sqlite", args.burst, args.files)
        if not args.no_hybrid:
            hroot = root / "hybrid"
            hroot.mkdir()
            hcfg = workspace(hroot, args.hybrid_files, "local")
            out["hybrid_files"] = args.hybrid_files
            out["hybrid_initial_sync_and_embed_s"] = ctx_sync(hcfg, embed=True)
            async with serve(hcfg) as client:
                server = Server(client, hcfg)
                await ready(server, args.hybrid_files)
                await server.search("river stone", "hybrid")
                out["hybrid"] = await hybrid_trials(server, hroot / "docs")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--burst", type=int, default=2_000)
    parser.add_argument("--hybrid-files", type=int, default=10_000)
    parser.add_argument("--no-hybrid", action="store_true")
    print(json.dumps(anyio.run(main, parser.parse_args())))
