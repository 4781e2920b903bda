"""Shared helpers for the SciFact benchmarks: load the BEIR files, write them as Markdown, score runs."""

from __future__ import annotations

import csv
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"


def require_scifact() -> Path:
    if not (SCIFACT / "corpus.jsonl").is_file():
        print(json.dumps({"skipped": f"SciFact not found at {SCIFACT} (expected ../shared/data/beir/scifact)"}))
        sys.exit(0)
    return SCIFACT


def corpus(limit: int | None = None) -> list[dict]:
    docs = []
    with open(require_scifact() / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            docs.append(json.loads(line))
            if limit and len(docs) >= limit:
                break
    return docs


def queries() -> dict[str, str]:
    with open(require_scifact() / "queries.jsonl", encoding="utf-8") as fh:
        return {q["_id"]: q["text"] for q in map(json.loads, fh)}


def qrels(split: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    with open(require_scifact() / "qrels" / f"{split}.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            out[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return dict(out)


def write_markdown(docs: list[dict], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for d in docs:
        (folder / f"{d['_id']}.md").write_text(f"# {d['title']}\n\n{d['text']}\n", encoding="utf-8")


def ndcg_at(ranked: list[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at(ranked: list[str], rels: dict[str, int], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def gate_subset(size: int = 1000) -> list[dict]:
    """A deterministic ~1,000-document subset: every document judged for a test query, then every
    5th other document. Small enough to embed in CI, hard enough to notice a regression."""
    judged = {d for rels in qrels("test").values() for d in rels}
    docs = corpus()
    chosen = [d for d in docs if d["_id"] in judged]
    others = [d for i, d in enumerate(docs) if d["_id"] not in judged and i % 5 == 0]
    return chosen + others[: max(0, size - len(chosen))]
