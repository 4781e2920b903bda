"""Retrieval-quality regression gate on a SciFact subset (keyword and hybrid through the product).

Fails when nDCG@10 drops by more than 0.01 from the committed baseline in
``benchmarks/baseline-gate.json``. Regenerate the baseline only with a measured reason:
``python benchmarks/retrieval.py --subset gate --mode keyword,hybrid``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import anyio
import pytest

from support.paths import REPO

SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
TOLERANCE = 0.01


def load_benchmark():
    spec = importlib.util.spec_from_file_location("ctx_retrieval_benchmark", REPO / "benchmarks" / "retrieval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_ndcg_does_not_regress(tmp_path: Path) -> None:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact data not found at {SCIFACT} (expected ../shared/data/beir/scifact)")
    baseline = json.loads((REPO / "benchmarks" / "baseline-gate.json").read_text())
    retrieval = load_benchmark()
    args = retrieval.parse_args(["--subset", "gate", "--mode", "keyword,hybrid", "--tmp", str(tmp_path)])
    results = {r["mode"]: r for r in anyio.run(retrieval.run, args)}
    for mode, expected in baseline["ndcg@10"].items():
        got = results[mode]["ndcg@10"]
        assert got >= expected - TOLERANCE, f"{mode} nDCG@10 fell from {expected} to {got}"
    assert results["hybrid"]["ndcg@10"] > results["keyword"]["ndcg@10"]
