"""Retrieval quality and latency on BEIR SciFact through the product's own pipeline.

    python benchmarks/retrieval.py --mode keyword [--split test|train] [--max-tokens N] [--title-boost X]

Writes the corpus as Markdown files, syncs them with the filesystem connector, runs every query of
the split through ``Harness.search`` and prints one JSON line: nDCG@10, recall@100, MRR@10 and
query latency. Tune on ``--split train`` only; report ``test``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.models import SearchRequest  # noqa: E402
from context_harness.search.fusion import DEFAULT_ALPHA, min_score  # noqa: E402

BUNDLED = "local:all-MiniLM-L6-v2"  # the embedder of semantic and hybrid runs


def build_config(workspace: Path, args: argparse.Namespace) -> config_mod.Config:
    raw: dict = {
        "db": {"path": str(workspace / "data" / "ctx.sqlite")},
        "connectors": {"filesystem": {"scifact": {"root": str(workspace / "docs")}}},
        "retrieval": {},
        "chunking": {},
    }
    if set(args.mode.split(",")) == {"keyword"}:
        raw["embedding"] = {"provider": "disabled"}
    if args.max_tokens:
        raw["chunking"]["max_tokens"] = args.max_tokens
    if args.title_boost is not None:
        raw["retrieval"]["title_boost"] = args.title_boost
    if args.alpha is not None:
        raw["retrieval"]["hybrid_alpha"] = args.alpha
    if args.candidate_k is not None:
        raw["retrieval"]["candidate_k"] = args.candidate_k
    if args.fusion:
        raw["retrieval"]["fusion"] = args.fusion
    if args.min_score is not None:
        raw["retrieval"]["min_score"] = args.min_score
    if args.title_match is not None:
        raw["retrieval"]["title_match"] = args.title_match
    return config_mod.from_dict(raw, None)


async def run(args: argparse.Namespace) -> dict:
    docs = scifact.gate_subset() if args.subset == "gate" else scifact.corpus(args.docs)
    doc_ids = {d["_id"] for d in docs}
    qs = scifact.queries()
    judged = {q: r for q, r in scifact.qrels(args.split).items() if q in qs and set(r) & doc_ids}
    if args.queries:
        judged = dict(list(judged.items())[: args.queries])
    with contextlib.ExitStack() as stack:
        if args.workspace:  # kept between runs, so embeddings are computed once
            workspace = Path(args.workspace)
        else:
            workspace = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-retrieval-", dir=args.tmp)))
        if not (workspace / "docs").is_dir():
            scifact.write_markdown(docs, workspace / "docs")
        config = build_config(workspace, args)
        async with Harness.open(config) as harness:
            started, cpu_started = time.perf_counter(), time.process_time()
            await harness.sync()
            sync_seconds = time.perf_counter() - started
            sync_cpu_seconds = time.process_time() - cpu_started  # every thread of this process
            stats = await harness.stats()
            alphas = [None] if not args.alphas else [float(a) for a in args.alphas.split(",")]
            settings = [(mode, alpha) for mode in args.mode.split(",") for alpha in alphas]
            out = []
            for mode, alpha in settings:
                if alpha is not None:
                    harness.config.retrieval.hybrid_alpha = alpha
                ndcg, recall, mrr, latencies = [], [], [], []
                for qid, rels in judged.items():
                    request = SearchRequest(query=qs[qid], mode=mode, limit=args.limit)
                    t0 = time.perf_counter()
                    response = await harness.search(request)
                    latencies.append((time.perf_counter() - t0) * 1000)
                    ranked = [r.source_id.removesuffix(".md") for r in response.results]
                    ndcg.append(scifact.ndcg_at(ranked, rels, 10))
                    recall.append(scifact.recall_at(ranked, rels, 100))
                    mrr.append(scifact.mrr_at(ranked, rels, 10))
                n = len(judged)
                out.append({
                    "benchmark": "retrieval", "dataset": "scifact" + ("-gate" if args.subset == "gate" else ""),
                    "split": args.split, "mode": mode,
                    "documents": len(docs), "chunks": stats.chunks, "queries": n,
                    "ndcg@10": round(sum(ndcg) / n, 4), "recall@100": round(sum(recall) / n, 4),
                    "mrr@10": round(sum(mrr) / n, 4),
                    "latency_ms_p50": round(scifact.percentile(latencies, 50), 3),
                    "latency_ms_p95": round(scifact.percentile(latencies, 95), 3),
                    "sync_seconds": round(sync_seconds, 2), "sync_cpu_seconds": round(sync_cpu_seconds, 2),
                    "max_tokens": config.chunking.max_tokens, "title_boost": config.retrieval.title_boost,
                    "title_match": config.retrieval.title_match,
                    "fusion": config.retrieval.fusion,
                    "hybrid_alpha": DEFAULT_ALPHA.get(config.retrieval.fusion) if config.retrieval.hybrid_alpha is None
                    else config.retrieval.hybrid_alpha,
                    "candidate_k": config.retrieval.candidate_k,
                    "min_score": min_score(config.retrieval.min_score, BUNDLED),
                    "cores": os.cpu_count(),
                })
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", default="keyword",
                        help="keyword, semantic or hybrid; several comma-separated share one sync")
    parser.add_argument("--subset", choices=["all", "gate"], default="all",
                        help="gate: the ~1,000-document subset the CI regression gate uses")
    parser.add_argument("--split", choices=["test", "train"], default="test")
    parser.add_argument("--docs", type=int, default=None, help="Use only the first N documents.")
    parser.add_argument("--queries", type=int, default=None, help="Use only the first N judged queries.")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--title-boost", type=float, default=None)
    parser.add_argument("--alpha", type=float, default=None)
    parser.add_argument("--candidate-k", type=int, default=None, help="[retrieval] candidate_k (hybrid).")
    parser.add_argument("--limit", type=int, default=100, help="results per query (recall@100 needs 100)")
    parser.add_argument("--fusion", choices=["scaled", "convex", "rrf"], default=None)
    parser.add_argument("--min-score", type=float, default=None, help="[retrieval] min_score (hybrid, scaled).")
    parser.add_argument("--title-match", type=float, default=None,
                        help="[retrieval] title_match (hybrid): bonus when a title holds the whole query.")
    parser.add_argument("--tmp", default=None, help="Parent folder for the temporary workspace.")
    parser.add_argument("--workspace", default=None, help="Keep the workspace here and reuse it (embeddings).")
    parser.add_argument("--alphas", default=None, help="Comma-separated hybrid_alpha values to evaluate in one run.")
    args = parser.parse_args(argv)
    for mode in args.mode.split(","):
        if mode not in ("keyword", "semantic", "hybrid"):
            parser.error(f"unknown mode {mode!r}")
    return args


def main() -> None:
    args = parse_args()
    for line in anyio.run(run, args):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
