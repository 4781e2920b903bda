"""The cost and the reach of an ``[embedding] model`` across languages, through the product's own embedder.

    python benchmarks/model_languages.py --model bundled|multilingual-e5-small [--languages zh,ru,en]
                                         [--paragraphs 240] [--questions 100] [--threads N]

Run once per model (each in its own process, so the peak RSS is that model's). On XQuAD
(``../shared/data/xquad``: the same 240 Wikipedia paragraphs in 12 languages), each paragraph of each
language (the first ``--paragraphs``) is embedded as a document (one chunk: they fit the 256-token chunk),
by ``build_embedder``
exactly as a sync embeds chunks (documents in the foreground, as ``ctx sync`` / ``ctx embed``); then
``--questions`` questions about those paragraphs per language (seed 0) are embedded as queries and
the paragraphs of THAT language ranked by cosine. Prints one JSON line: chunks/s and CPU-seconds a
chunk while embedding, the p50 of one query's embedding, peak RSS, and semantic nDCG@10 / recall@10 per language (the
quick check that, e.g., Chinese questions rank Chinese paragraphs sensibly; semantic only, no keyword
side). A model whose package is not installed prints ``{"skipped": ...}`` and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
XQUAD = REPO.parent / "shared" / "data" / "xquad"
sys.path.insert(0, str(REPO))


def xquad(language: str, limit: int) -> tuple[list[str], list[tuple[str, int]]]:
    """The paragraphs of one language and its (question, index of its paragraph) pairs."""
    path = XQUAD / f"xquad.{language}.json"
    if not path.is_file():
        print(json.dumps({"skipped": f"{path} is missing (XQuAD: ../shared/data/xquad)"}))
        sys.exit(0)
    data = json.loads(path.read_text(encoding="utf-8"))
    paragraphs: list[str] = []
    questions: list[tuple[str, int]] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            paragraphs.append(paragraph["context"])
            questions += [(qa["question"], len(paragraphs) - 1) for qa in paragraph["qas"]]
    return paragraphs[:limit], [(question, gold) for question, gold in questions if gold < limit]


def embedder(model: str, threads: int | None) -> Any:
    from context_harness.config import EmbeddingConfig
    from context_harness.embedding import build_embedder
    from context_harness.errors import EmbeddingsUnavailable

    config = EmbeddingConfig(model=None if model == "bundled" else model, threads=threads)
    built = build_embedder(config)
    try:
        built.warm()
    except EmbeddingsUnavailable as exc:
        print(json.dumps({"skipped": exc.message}))
        sys.exit(0)
    return built


def run(args: argparse.Namespace) -> dict[str, Any]:
    languages = [code.strip() for code in args.languages.split(",") if code.strip()]
    sets = {code: xquad(code, args.paragraphs) for code in languages}
    model = embedder(args.model, args.threads)
    chunks = sum(len(paragraphs) for paragraphs, _ in sets.values())
    started, cpu = time.perf_counter(), time.process_time()
    matrices = {code: model.embed_documents(paragraphs) for code, (paragraphs, _) in sets.items()}
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    quality: dict[str, dict[str, float]] = {}
    latencies: list[float] = []
    for code, (_, questions) in sets.items():
        sample = random.Random(0).sample(questions, min(args.questions, len(questions)))
        ndcg, recall = [], []
        for question, gold in sample:
            t0 = time.perf_counter()
            vector = model.embed_query(question)
            latencies.append((time.perf_counter() - t0) * 1000)
            scores = matrices[code] @ vector
            rank = int((scores > scores[gold]).sum())  # 0: the paragraph is first
            ndcg.append(1 / np.log2(rank + 2) if rank < 10 else 0.0)
            recall.append(1.0 if rank < 10 else 0.0)
        quality[code] = {"ndcg@10": round(float(np.mean(ndcg)), 3), "recall@10": round(float(np.mean(recall)), 3)}
    return {
        "benchmark": "model_languages", "model": args.model, "identity": model.identity.key,
        "dataset": "xquad", "languages": languages, "chunks": chunks, "questions_per_language": args.questions,
        "chunks_per_s": round(chunks / seconds, 2), "cpu_s_per_chunk": round(cpu_seconds / chunks, 3),
        "query_ms_p50": round(float(np.percentile(latencies, 50)), 1),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "semantic": quality, "cores": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="bundled", help='bundled, or an [embedding] model ("multilingual-e5-small")')
    parser.add_argument("--languages", default="zh,ru,en", help="XQuAD languages, comma-separated")
    parser.add_argument("--paragraphs", type=int, default=240, help="paragraphs per language (the first N)")
    parser.add_argument("--questions", type=int, default=100, help="questions per language (seed 0)")
    parser.add_argument("--threads", type=int, default=None, help="[embedding] threads (unset: one per core)")
    print(json.dumps(run(parser.parse_args())), flush=True)


if __name__ == "__main__":
    main()
