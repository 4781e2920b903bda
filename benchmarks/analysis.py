"""The cost of keyword text analysis (common/analysis.py) per language, in CPU time.

    python benchmarks/analysis.py [--languages en,zh,th,...] [--repeat 3]

For each XQuAD language (``../shared/data/xquad``: the same 240 paragraphs in 12 languages) it times,
in this process, ``detect_language`` on every paragraph, ``index_terms`` with the detected language
and ``query_terms`` of every question, and prints one JSON line: microseconds of CPU per paragraph
and per question, characters per second, and the detector's one-time load. English is the yardstick:
``ratio_to_en`` is each language's index cost per character over English's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from context_harness.common import analysis

XQUAD = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "xquad"
LANGUAGES = ["ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh"]


def load(language: str) -> tuple[list[str], list[str]]:
    """The distinct paragraphs and the questions of one language."""
    data = json.loads((XQUAD / f"xquad.{language}.json").read_text(encoding="utf-8"))["data"]
    paragraphs = [p for article in data for p in article["paragraphs"]]
    return (list(dict.fromkeys(p["context"] for p in paragraphs)),
            [q["question"] for p in paragraphs for q in p["qas"]])


def cpu(fn, repeat: int) -> float:
    """The least CPU seconds of ``repeat`` runs of ``fn``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def measure(language: str, repeat: int) -> dict:
    paragraphs, questions = load(language)
    chars = sum(map(len, paragraphs))
    detected = [analysis.detect_language(p) for p in paragraphs]
    detect = cpu(lambda: [analysis.detect_language(p) for p in paragraphs], repeat)
    index = cpu(lambda: [analysis.index_terms(p, lang) for p, lang in zip(paragraphs, detected, strict=True)], repeat)
    present = sorted(set(detected))
    query = cpu(lambda: [analysis.query_terms(q, present) for q in questions], repeat)
    return {"language": language, "paragraphs": len(paragraphs), "detected": max(set(detected), key=detected.count),
            "detect_us_per_paragraph": round(detect / len(paragraphs) * 1e6, 1),
            "index_us_per_paragraph": round(index / len(paragraphs) * 1e6, 1),
            "index_chars_per_s": round(chars / index) if index else None,
            "query_us": round(query / len(questions) * 1e6, 1), "index_s_per_char": index / chars}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if not (XQUAD / "xquad.en.json").is_file():
        print(json.dumps({"skipped": f"XQuAD not found at {XQUAD} (expected ../shared/data/xquad)"}))
        sys.exit(0)
    start = time.process_time()
    analysis.detect_language("warm the detector up")
    load_cpu = time.process_time() - start
    rows = [measure(language, args.repeat) for language in args.languages.split(",")]
    english = next((r["index_s_per_char"] for r in rows if r["language"] == "en"), None)
    for row in rows:
        per_char = row.pop("index_s_per_char")
        row["ratio_to_en"] = round(per_char / english, 2) if english else None
    print(json.dumps({"benchmark": "analysis", "dataset": "xquad", "detector_load_cpu_s": round(load_cpu, 2),
                      "icu": analysis._word_breaker() is not None, "cores": os.cpu_count(), "rows": rows}))


if __name__ == "__main__":
    main()
