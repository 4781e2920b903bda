"""What ``max_tokens`` does to SciFact answers: their size, the results that survive, and the ranking quality.

    python benchmarks/token_budget.py [--subset gate|all] [--mode keyword|hybrid] [--queries N] [--budgets 300,1000]

Writes SciFact as Markdown (``--subset gate``: the ~1,000-document subset of the CI gate, the default;
``all``: the 5,183 documents), syncs it, and asks every judged test query through ``Harness.search``
with the server's default limit, once without a budget and once per budget. For each it reports the
estimated tokens of the whole answer as the server estimates them (``search.budget.answer_tokens``: the
larger of the JSON payload and the text block an MCP client receives; mean, median, max, and how many
answers exceeded the budget: must be 0), the results the answer kept (mean, and how many answers kept
none), nDCG@10 of what remains beside nDCG@10 without a budget, and the search latency (median, ms).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
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
from context_harness.search.budget import answer_tokens  # noqa: E402
from context_harness.tools.render import render_search  # noqa: E402

MEASURE = answer_tokens(render_search)


def build_config(workspace: Path, mode: str) -> config_mod.Config:
    raw: dict = {"db": {"path": str(workspace / "data" / "ctx.sqlite")},
                 "connectors": {"filesystem": {"scifact": {"root": str(workspace / "docs")}}}}
    if mode == "keyword":
        raw["embedding"] = {"provider": "disabled"}
    return config_mod.from_dict(raw, None)


def summary(budget: int | None, tokens: list[int], kept: list[int], ndcg: list[float], ms: list[float]) -> dict:
    return {"max_tokens": budget, "tokens_mean": round(statistics.mean(tokens), 1),
            "tokens_p50": statistics.median(tokens), "tokens_max": max(tokens),
            "over_budget": sum(t > budget for t in tokens) if budget else 0,
            "results_mean": round(statistics.mean(kept), 2), "answers_without_results": kept.count(0),
            "ndcg@10": round(statistics.mean(ndcg), 4), "latency_ms_p50": round(statistics.median(ms), 2)}


async def run(args: argparse.Namespace) -> dict:
    docs = scifact.gate_subset() if args.subset == "gate" else scifact.corpus()
    doc_ids = {d["_id"] for d in docs}
    qs = scifact.queries()
    judged = {q: r for q, r in scifact.qrels("test").items() if q in qs and set(r) & doc_ids}
    if args.queries:
        judged = dict(list(judged.items())[:args.queries])
    budgets: list[int | None] = [None, *(int(b) for b in args.budgets.split(","))]
    with contextlib.ExitStack() as stack:
        workspace = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-budget-", dir=args.tmp)))
        scifact.write_markdown(docs, workspace / "docs")
        async with Harness.open(build_config(workspace, args.mode)) as harness:
            await harness.sync()
            rows = []
            for budget in budgets:
                tokens, kept, ndcg, ms = [], [], [], []
                for qid, rels in judged.items():
                    started = time.perf_counter()
                    response = await harness.search(SearchRequest(query=qs[qid], mode=args.mode, max_tokens=budget))
                    ms.append((time.perf_counter() - started) * 1000)
                    tokens.append(MEASURE(response.model_dump(mode="json")))
                    kept.append(len(response.results))
                    ndcg.append(scifact.ndcg_at([r.source_id.removesuffix(".md") for r in response.results], rels))
                rows.append(summary(budget, tokens, kept, ndcg, ms))
    return {"benchmark": "token_budget", "dataset": "scifact" + ("-gate" if args.subset == "gate" else ""),
            "split": "test", "mode": args.mode, "documents": len(docs), "queries": len(judged),
            "limit": harness.config.retrieval.final_limit, "budgets": rows, "cores": os.cpu_count()}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subset", choices=["gate", "all"], default="gate")
    parser.add_argument("--mode", choices=["keyword", "hybrid"], default="keyword")
    parser.add_argument("--queries", type=int, default=None, help="Use only the first N judged queries.")
    parser.add_argument("--budgets", default="300,1000", help="max_tokens values, comma-separated.")
    parser.add_argument("--tmp", default=None, help="Parent folder for the temporary workspace.")
    return parser.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(anyio.run(run, parse_args())))
