"""Embedding throughput: ``LocalEmbedder`` now vs the fastembed path it replaced, same chunks and threads.

    python benchmarks/embed.py [--texts 400] [--threads N] [--batch-size 16] [--repeats 1] [--short CHARS]

Texts are the chunks ``ctx sync`` makes of SciFact documents (../shared/data/beir/scifact/corpus.jsonl
relative to the repository root): Markdown as the benchmarks write it, chunked with the default
settings, each chunk as the embedder sees it (title and heading path leading), spread evenly over
the corpus. Three paths, run interleaved (``--repeats`` rounds, best kept) because the machine may
be shared: ``before`` is fastembed with the texts sorted by length (what ``LocalEmbedder`` did until
issue 18); ``ours`` is the default (the bundled model's int8 copy through ``DocumentRunner``);
``ours_exact`` is ``quantized_documents = false`` (the model itself through ``DocumentRunner``).
Prints one JSON line: chunks/s, tokens/s and CPU-ms per chunk for each path, the speed-ups, and the
lowest cosine of each path's vectors with ``before``'s.
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


def timed(fn) -> tuple[float, float, np.ndarray]:  # type: ignore[no-untyped-def]
    """Wall seconds, CPU seconds of this process, result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def fastembed_path(model, texts: list[str], batch_size: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """What ``LocalEmbedder`` did before the direct runner: fastembed, texts sorted by length."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.empty((len(texts), 384), dtype=np.float32)
    for position, vector in zip(order, model.passage_embed([texts[i] for i in order], batch_size=batch_size),
                                strict=True):
        out[position] = vector
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1, help="interleaved runs per path; the best is reported")
    parser.add_argument("--short", type=int, default=None, help="cut each text to this many characters")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if not CORPUS.is_file():
        print(f"SciFact corpus not found at {CORPUS}; skipping the embedding benchmark", file=sys.stderr)
        print(json.dumps({"benchmark": "embed", "skipped": f"missing {CORPUS}"}))
        return 0

    texts = load_texts(args.texts)
    if args.short:
        texts = [text[: args.short] for text in texts]
    texts, counts = truncate(texts)
    tokens = sum(counts)
    config = {"threads": args.threads, "batch_size": args.batch_size}
    ours = LocalEmbedder(EmbeddingConfig(**config))
    exact = LocalEmbedder(EmbeddingConfig(**config, quantized_documents=False))
    model = ours.load()
    paths = {
        "before": lambda: fastembed_path(model, texts, args.batch_size),
        "ours": lambda: ours.embed_documents(texts),
        "ours_exact": lambda: exact.embed_documents(texts),
    }
    ours.embed_documents(texts[:8])  # warm: sessions, the int8 copy
    exact.embed_documents(texts[:8])
    fastembed_path(model, texts[:8], args.batch_size)

    # Interleave the paths so background load on a shared machine hits them alike.
    best: dict[str, tuple[float, float]] = {name: (float("inf"), float("inf")) for name in paths}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(max(1, args.repeats)):
        for name, fn in paths.items():
            wall, cpu, vectors[name] = timed(fn)
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))

    def figures(name: str) -> dict[str, float]:
        wall, cpu = best[name]
        return {
            "seconds": round(wall, 3),
            "chunks_per_s": round(len(texts) / wall, 1),
            "tokens_per_s": round(tokens / wall, 0),
            "cpu_ms_per_chunk": round(1000 * cpu / len(texts), 1),
            "min_cosine_vs_before": round(float(np.min(np.sum(vectors[name] * vectors["before"], axis=1))), 4),
        }

    before_wall, before_cpu = best["before"]
    print(
        json.dumps(
            {
                "benchmark": "embed",
                "model": ours.identity.key,
                "exact_model": exact.identity.key,
                "texts": len(texts),
                "tokens": tokens,
                "mean_tokens": round(tokens / len(texts), 1),
                "threads": args.threads,
                "batch_size": args.batch_size,
                "repeats": args.repeats,
                **{name: figures(name) for name in paths},
                "speedup": round(before_wall / best["ours"][0], 3),
                "cpu_speedup": round(before_cpu / best["ours"][1], 3),
                "speedup_exact": round(before_wall / best["ours_exact"][0], 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
