"""``related`` on a SciFact-size workspace with synthetic links: p50/p95 through ``Harness``.

    python benchmarks/related.py [--docs 5183] [--links 5] [--calls 500] [--embedding fake|disabled]

Writes the SciFact corpus (``../shared/data/beir/scifact``; synthetic text of the same count when it
is absent) as Markdown notes in two folders, each with ``--links`` links to random others (half
relative Markdown links across folders, half ``[[wikilinks]]`` by title), syncs it, then times
``Harness.related`` on random documents (links both ways resolved, plus the nearest documents by
the document's vectors: the deterministic ``fake`` embedder, so the vector lookup is real and the
model is not loaded). Also times ``recent``. Prints one JSON line. Target: ``related`` p50 <= 10 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.append(str(Path(__file__).resolve().parent))

from scifact import SCIFACT  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.embedding import fake  # noqa: E402
from context_harness.models import RecentRequest, RelatedRequest  # noqa: E402
from context_harness.store.records import document_id  # noqa: E402


def texts(count: int) -> tuple[list[tuple[str, str]], str]:
    corpus = SCIFACT / "corpus.jsonl"
    if corpus.is_file():
        with open(corpus, encoding="utf-8") as fh:
            docs = [json.loads(line) for _, line in zip(range(count), fh, strict=False)]
        return [(f"{d['title'] or d['_id']} ({d['_id']})", d["text"]) for d in docs], "scifact"
    rng = random.Random(7)
    words = "cell protein gene tumour dose trial cohort signal receptor pathway".split()
    return [(f"Synthetic note {i}", " ".join(rng.choice(words) for _ in range(150))) for i in range(count)], "synthetic"


def write(root: Path, count: int, links: int) -> tuple[list[str], str]:
    docs, kind = texts(count)
    rng = random.Random(11)
    paths = [f"{'a' if i % 2 else 'b'}/note-{i}.md" for i in range(len(docs))]
    for i, (title, body) in enumerate(docs):
        refs = []
        for n, j in enumerate(rng.sample(range(len(docs)), links)):
            if n % 2:
                refs.append(f"[[{docs[j][0]}]]")
            else:
                other = paths[j].split("/")
                refs.append(f"[see](../{other[0]}/{other[1]})")
        path = root / paths[i]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {title}\n\n{body}\n\nRelated: {', '.join(refs)}\n", encoding="utf-8")
    return paths, kind


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(args: argparse.Namespace) -> dict:
    fake.register()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths, kind = write(root / "docs", args.docs, args.links)
        (root / "ctx.toml").write_text(f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "{args.embedding}"\n'
                                       '[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
        async with Harness.open(config_mod.load_file(root / "ctx.toml")) as h:
            started = time.perf_counter()
            await h.sync()
            synced = time.perf_counter() - started
            rng = random.Random(3)
            ids = [document_id("filesystem:docs", p) for p in rng.choices(paths, k=args.calls)]
            h.related_sync(RelatedRequest(id=ids[0]))  # load the vector index once
            times, backlinks, similar = [], 0, 0
            for doc_id in ids:
                t0 = time.perf_counter()
                out = h.related_sync(RelatedRequest(id=doc_id))
                times.append((time.perf_counter() - t0) * 1000)
                backlinks += len(out.linked_from)
                similar += len(out.similar)
            recent = []
            for _ in range(50):
                t0 = time.perf_counter()
                h.recent_sync(RecentRequest(since="1d", limit=20))
                recent.append((time.perf_counter() - t0) * 1000)
    return {"benchmark": "related", "corpus": kind, "documents": len(paths), "links_per_doc": args.links,
            "embedding": args.embedding, "sync_s": round(synced, 1), "calls": len(times),
            "related_p50_ms": round(statistics.median(times), 2), "related_p95_ms": round(percentile(times, 0.95), 2),
            "mean_backlinks": round(backlinks / len(times), 2), "mean_similar": round(similar / len(times), 2),
            "recent_p50_ms": round(statistics.median(recent), 2), "target_p50_ms": 10}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5183)
    parser.add_argument("--links", type=int, default=5)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--embedding", choices=["fake", "disabled"], default="fake")
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
