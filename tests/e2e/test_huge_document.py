"""Issue 39's figures for one 50 MB Markdown file, from ``benchmarks/huge_document.py`` (slow: about a
minute): ``get`` answers at most its ceiling, a console page of the document takes at most 5 times its
0.5 s target, and the sync's memory stays within twice the documented 10 times the file's size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from context_harness.models import MAX_GET_CHARS

pytestmark = pytest.mark.slow
BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "huge_document.py"


def test_a_50_mb_document_costs_its_window_per_request(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(BENCHMARK), "--mb", "50", "--reads", "3", "--tmp", str(tmp_path)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    figures = json.loads(run.stdout)
    assert figures["sync_added"] == 1 and figures["document_chars"] > 45_000_000
    assert MAX_GET_CHARS * 3 // 4 <= figures["get_whole_body_chars"] <= MAX_GET_CHARS
    assert figures["console_page_ms"] <= 2_500 and figures["console_page_bytes"] < 100_000
    assert figures["get_window_ms"] <= 2_500 and figures["get_chunk_ms"] <= 2_500
    assert figures["sync_peak_rss_mb"] - figures["idle_rss_mb"] <= 20 * figures["file_bytes"] / 1e6
