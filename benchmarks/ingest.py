"""Ingest and keyword-search speed, measured in-process.

    python benchmarks/ingest.py [--synthetic-chunks 100000]

1. SciFact (5,183 docs) written as Markdown files: keyword-only sync (embeddings disabled), then a
   re-sync with no change, then keyword ``Harness.search`` p50/p95 over the 300 test queries.
2. A synthetic workspace of ``--synthetic-chunks`` chunks (zipf vocabulary): search p50/p95.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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


def _config(workspace: Path) -> config_mod.Config:
    return config_mod.from_dict({
        "db": {"path": str(workspace / "data" / "ctx.sqlite")},
        "embedding": {"provider": "disabled"},
        "connectors": {"filesystem": {"bench": {"root": str(workspace / "docs")}}},
    }, None)


async def _search_latency(harness: Harness, queries: list[str]) -> tuple[float, float]:
    for q in queries[:20]:  # warm-up
        await harness.search(SearchRequest(query=q))
    times = []
    for q in queries:
        t0 = time.perf_counter()
        harness.search_sync(SearchRequest(query=q))
        times.append((time.perf_counter() - t0) * 1000)
    return scifact.percentile(times, 50), scifact.percentile(times, 95)


def _pseudo_word(i: int) -> str:
    """A letters-only word per number (one or two tokens for the chunker, like most real words)."""
    letters = ""
    while True:
        i, r = divmod(i, 26)
        letters += chr(97 + r)
        if i == 0:
            return "q" + letters


def _synthetic_docs(folder: Path, chunks: int, seed: int = 7) -> list[str]:
    """``chunks // 4`` documents of four sections, each section one chunk of 150 zipf-drawn words."""
    rng = random.Random(seed)
    vocab = [_pseudo_word(i) for i in range(20_000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    folder.mkdir(parents=True)
    per_doc = 4
    words_per_chunk = 150
    for d in range(chunks // per_doc):
        paragraphs = [" ".join(rng.choices(vocab, weights, k=words_per_chunk)) for _ in range(per_doc)]
        body = "\n\n".join(f"## Part {i}\n\n{p}" for i, p in enumerate(paragraphs))
        (folder / f"doc{d:06d}.md").write_text(f"# Document {d}\n\n{body}\n", encoding="utf-8")
    return [" ".join(rng.choices(vocab[:5000], k=rng.randint(1, 4))) for _ in range(300)]


async def run(args: argparse.Namespace) -> dict:
    out: dict = {"benchmark": "ingest", "cores": os.cpu_count()}
    docs = scifact.corpus()
    qs = scifact.queries()
    test_queries = [qs[q] for q in scifact.qrels("test") if q in qs]
    with tempfile.TemporaryDirectory(prefix="ctx-ingest-", dir=args.tmp) as tmp:
        workspace = Path(tmp)
        scifact.write_markdown(docs, workspace / "docs")
        async with Harness.open(_config(workspace)) as harness:
            t0 = time.perf_counter()
            report = await harness.sync()
            out["scifact_sync_seconds"] = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            again = await harness.sync()
            out["scifact_resync_seconds"] = round(time.perf_counter() - t0, 3)
            out["scifact_documents"] = report.total("added")
            out["resync_unchanged"] = again.total("unchanged")
            stats = await harness.stats()
            out["scifact_chunks"] = stats.chunks
            p50, p95 = await _search_latency(harness, test_queries)
            out["scifact_search_ms_p50"], out["scifact_search_ms_p95"] = round(p50, 3), round(p95, 3)
    if args.synthetic_chunks:
        with tempfile.TemporaryDirectory(prefix="ctx-ingest-synth-", dir=args.tmp) as tmp:
            workspace = Path(tmp)
            synthetic_queries = _synthetic_docs(workspace / "docs", args.synthetic_chunks)
            async with Harness.open(_config(workspace)) as harness:
                t0 = time.perf_counter()
                await harness.sync()
                out["synthetic_sync_seconds"] = round(time.perf_counter() - t0, 3)
                out["synthetic_chunks"] = (await harness.stats()).chunks
                p50, p95 = await _search_latency(harness, synthetic_queries)
                out["synthetic_search_ms_p50"], out["synthetic_search_ms_p95"] = round(p50, 3), round(p95, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--synthetic-chunks", type=int, default=100_000)
    parser.add_argument("--tmp", default=None)
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
