"""Embedding throughput: our LocalEmbedder vs raw fastembed, same chunks, model and threads, one run.

    python benchmarks/embed.py [--texts 400] [--threads N] [--batch-size 16] [--repeats 1]

Texts are the chunks ``ctx sync`` makes of SciFact documents (../shared/data/beir/scifact/corpus.jsonl
relative to the repository root): Markdown as the benchmarks write it, chunked with the default
settings, each chunk as the embedder sees it (title and heading path leading), spread evenly over
the corpus. Raw fastembed embeds them in corpus order; ours batches them by length, as ``ctx embed``
does. Prints one JSON line: chunks/s and tokens/s for both paths, the speed-up, and the lowest
cosine between the two paths' vectors.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from context_harness.config import EmbeddingConfig  # noqa: E402
from context_harness.embedding import bundled  # noqa: E402
from context_harness.embedding.local import LocalEmbedder  # noqa: E402

CORPUS = REPO.parent / "shared" / "data" / "beir" / "scifact" / "corpus.jsonl"
WINDOW = 256  # tokens, [CLS] and [SEP] included


def load_texts(limit: int) -> list[str]:
    """``limit`` chunks spread over the corpus, as the embedder sees them."""
    from context_harness.config import ChunkingConfig
    from context_harness.ingest.chunking import chunk_markdown, embedding_text

    chunking = ChunkingConfig()
    chunks = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        title = doc.get("title") or doc["_id"]
        body = f"# {title}\n\n{doc.get('text', '')}\n"  # as benchmarks/scifact.py writes the files
        for chunk in chunk_markdown(body, chunking.max_tokens, chunking.overlap_tokens):
            chunks.append(embedding_text(title, " > ".join(chunk.heading_path), chunk.text))
    step = max(1, len(chunks) // limit)
    return chunks[::step][:limit]


def truncate(texts: list[str]) -> tuple[list[str], list[int]]:
    """Cut each text after its last token inside the window; returns texts and token counts."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(bundled.vendored_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(WINDOW)
    out, counts = [], []
    for text, encoding in zip(texts, tokenizer.encode_batch(texts), strict=True):
        spans = [span for span in encoding.offsets if span != (0, 0)]
        out.append(text[: spans[-1][1]] if spans else text)
        counts.append(len(encoding.ids))
    return out, counts


def timed(fn, repeats: int) -> tuple[float, np.ndarray]:  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result  # type: ignore[return-value]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1, help="runs per path; the best is reported")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if not CORPUS.is_file():
        print(f"SciFact corpus not found at {CORPUS}; skipping the embedding benchmark", file=sys.stderr)
        print(json.dumps({"benchmark": "embed", "skipped": f"missing {CORPUS}"}))
        return 0

    texts, counts = truncate(load_texts(args.texts))
    tokens = sum(counts)
    ours = LocalEmbedder(EmbeddingConfig(threads=args.threads, batch_size=args.batch_size))
    ours.load()
    from fastembed import TextEmbedding

    raw = TextEmbedding(
        model_name=bundled.FASTEMBED_NAME,
        specific_model_path=str(bundled.prepare_model_dir()),
        threads=args.threads,
    )
    warm = texts[:8]
    ours.embed_documents(warm)
    list(raw.embed(warm, batch_size=args.batch_size))

    def run_raw() -> np.ndarray:
        return np.stack(list(raw.embed(texts, batch_size=args.batch_size)))

    # Interleave the two paths so background load on a shared machine hits both alike.
    raw_s, ours_s = float("inf"), float("inf")
    raw_vecs = ours_vecs = None
    for _ in range(max(1, args.repeats)):
        seconds, raw_vecs = timed(run_raw, 1)
        raw_s = min(raw_s, seconds)
        seconds, ours_vecs = timed(lambda: ours.embed_documents(texts), 1)
        ours_s = min(ours_s, seconds)
    agreement = float(np.min(np.sum(ours_vecs * raw_vecs, axis=1)))

    def figures(seconds: float) -> dict[str, float]:
        return {
            "seconds": round(seconds, 3),
            "chunks_per_s": round(len(texts) / seconds, 1),
            "tokens_per_s": round(tokens / seconds, 0),
        }

    print(
        json.dumps(
            {
                "benchmark": "embed",
                "model": ours.identity.key,
                "texts": len(texts),
                "tokens": tokens,
                "mean_tokens": round(tokens / len(texts), 1),
                "threads": args.threads,
                "batch_size": args.batch_size,
                "ours": figures(ours_s),
                "raw_fastembed": figures(raw_s),
                "speedup": round(raw_s / ours_s, 3),
                "min_cosine_ours_vs_raw": round(agreement, 6),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
