"""What the text path costs on 1 MB bodies in Chinese, in a mix of scripts with clusters of several
code points (combining marks, emoji ZWJ sequences, Hangul jamo, Thai, Devanagari conjuncts), and in
English (issue 48, 5): chunking (``chunk_markdown`` at the default 128 tokens) and placing the
chunks (``chunk_starts``), and paging through the body with ``get``'s windows (``window_end``,
2,000 characters a window) beside the same paging cut at exact offsets (what the grapheme rules
add), plus ``section_window`` for every chunk.

    python benchmarks/text_path.py [--runs 3]

Bodies are XQuAD paragraphs (``../shared/data/xquad``, zh and en) repeated to 1 MB, or made up when
that data is absent. Prints one JSON line: per body, the medians of CPU ms (steadier than wall time
on a shared machine) and the counts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from context_harness.common.passages import chunk_starts, section_window, spans_of, window_end
from context_harness.ingest.chunking import chunk_markdown

SIZE = 1_000_000
XQUAD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xquad"
CLUSTERS = ["e\u0301", "\U0001F469\u200d\U0001F4BB", "\u1100\u1161\u11a8", "\u0e19\u0e49\u0e33", "\u0915\u094d\u0937",
            "\U0001F1EF\U0001F1F5", "中", "文", "。", " ", "word", "\n\n"]


def paragraphs(language: str) -> list[str] | None:
    path = XQUAD / f"xquad.{language}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return [p["context"] for article in data["data"] for p in article["paragraphs"]]


def body_of(language: str) -> tuple[str, str]:
    found = paragraphs(language)
    source = "xquad"
    if found is None:
        source = "made up"
        rng = random.Random(1)
        unit = "我们的发布流程需要先在预发布环境中完成回归测试。" if language == "zh" else "The release needs tests. "
        found = ["".join(unit for _ in range(rng.randint(5, 30))) for _ in range(50)]
    text, i = [], 0
    while sum(map(len, text)) < SIZE:
        text.append(found[i % len(found)])
        i += 1
    return "\n\n".join(text)[:SIZE], source


def mixed() -> str:
    rng = random.Random(2)
    return "".join(rng.choice(CLUSTERS) for _ in range(SIZE // 2))[:SIZE]


def timed(work: Callable[[], object], runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.process_time()
        result = work()
        times.append((time.process_time() - started) * 1000)
    return round(statistics.median(times), 1), result


def page(body: str, cut: Callable[[str, int, int], int]) -> int:
    start, windows = 0, 0
    while start < len(body):
        start = cut(body, start, 2_000)
        windows += 1
    return windows


def exact(body: str, start: int, size: int) -> int:
    return min(len(body), start + size)


def measure(body: str, runs: int) -> dict[str, object]:
    chunk_ms, chunks = timed(lambda: chunk_markdown(body, 128), runs)
    texts = [c.text for c in chunks]  # type: ignore[attr-defined]
    place_ms, starts = timed(lambda: chunk_starts(body, texts), runs)
    spans = spans_of(starts, len(body))  # type: ignore[arg-type]
    headings = [""] * len(spans)
    windows_ms, windows = timed(lambda: page(body, window_end), runs)
    exact_ms, _ = timed(lambda: page(body, exact), runs)
    sample = range(0, len(spans), max(1, len(spans) // 1000))
    section_ms, _ = timed(lambda: [section_window(body, spans, headings, k, 2_000) for k in sample], runs)
    return {"chars": len(body), "chunks": len(texts), "chunk_ms": chunk_ms, "place_ms": place_ms,
            "placed": len(set(starts)) == len(starts),  # type: ignore[arg-type]
            "windows": windows, "page_ms": windows_ms, "page_exact_cuts_ms": exact_ms,
            "section_windows": len(sample), "section_ms": section_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    zh, zh_source = body_of("zh")
    en, en_source = body_of("en")
    print(json.dumps({"zh": {**measure(zh, args.runs), "source": zh_source},
                      "mixed_clusters": measure(mixed(), args.runs),
                      "en": {**measure(en, args.runs), "source": en_source}}))


if __name__ == "__main__":
    main()
