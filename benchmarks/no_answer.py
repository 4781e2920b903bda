"""Questions SciFact cannot answer: how many results hybrid search still returns (issue 30).

    python benchmarks/no_answer.py [--workspace DIR] [--min-score X]

Syncs SciFact (all 5,183 documents, with the bundled model; ``--workspace`` keeps the workspace and
its embeddings between runs, as ``retrieval.py`` does), then asks every question of
``no_answer_queries.txt`` (55 everyday questions about routers, football, cooking, ... written
before any run) through ``Harness.search`` with the defaults (hybrid, ``final_limit`` results) and
prints one JSON object: the mean and the distribution of result counts, and the best fused score
seen. Target: ≤ 3 results on average, while SciFact nDCG@10 (``retrieval.py``) does not drop.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import retrieval
import scifact

from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from context_harness.search.fusion import min_score

BUNDLED = "local:all-MiniLM-L6-v2"  # the embedder these benchmarks use

QUESTIONS = Path(__file__).resolve().parent / "no_answer_queries.txt"


def questions() -> list[str]:
    return [line.strip() for line in QUESTIONS.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


async def run(args: argparse.Namespace) -> dict:
    asked = questions()
    with contextlib.ExitStack() as stack:
        workspace = Path(args.workspace) if args.workspace else \
            Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-no-answer-")))
        if not (workspace / "docs").is_dir():
            scifact.write_markdown(scifact.corpus(), workspace / "docs")
        options = ["--mode", "hybrid"] + (["--min-score", str(args.min_score)] if args.min_score is not None else [])
        config = retrieval.build_config(workspace, retrieval.parse_args(options))
        async with Harness.open(config) as harness:
            await harness.sync()
            counts, best = [], []
            for question in asked:
                response = await harness.search(SearchRequest(query=question, explain=True))
                counts.append(len(response.results))
                best.extend(r.explain.fused_score for r in response.results[:1] if r.explain and r.explain.fused_score)
    return {"benchmark": "no_answer", "questions": len(asked),
            "min_score": min_score(config.retrieval.min_score, BUNDLED),
            "mean_results": round(statistics.mean(counts), 2), "none": counts.count(0),
            "at_most_3": sum(1 for c in counts if c <= 3), "max_results": max(counts),
            "best_fused_score_max": round(max(best), 3) if best else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", default=None, help="keep the SciFact workspace here and reuse it")
    parser.add_argument("--min-score", type=float, default=None, help="[retrieval] min_score")
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
