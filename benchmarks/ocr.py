"""OCR of scanned pages (``[formats] ocr``, the ``ocr`` extra): seconds per page and how many words come
back right.

    python benchmarks/ocr.py [--pages 6]

Needs the `test` extra (the documents and ocr extras, fpdf2). Makes its pages as a scanner would
(``tests/support/scans.py``): prose laid out by fpdf2 in Helvetica, Times and Courier at 8 to 14
points, rasterised at 150, 200 or 300 dpi, some turned by up to 1 degree and speckled with noise,
saved as picture-only PDF pages (no text layer) and as PNG/JPEG files. Each is converted by
``formats/documents.convert`` with OCR on (the first load of the models is timed apart). Word
accuracy: the share of the page's words (lowercased, punctuation dropped) found in order in what
OCR read (a longest common subsequence of words), and the share of the page's distinct words of
four letters or more that a keyword search of the text would find (recall). Prints one JSON line,
with the machine's load average (the seconds depend on it) and the process's peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from context_harness.formats import ocr  # noqa: E402
from context_harness.formats.documents import FORMATS, ConvertOptions, convert  # noqa: E402
from context_harness.ingest.chunk_worker import available_cores  # noqa: E402
from support.scans import image_file, page_pictures, scanned_pdf, text_pdf  # noqa: E402

PROSE = [
    "The quarterly harbour inspection found seven cracked bollards near the northern pier, and the divers "
    "reported a shallow sandbank forming beside the ferry ramp after the autumn storms.",
    "Repairs are scheduled for early spring, weather permitting; the contractor will bring a floating crane "
    "and replace the timber fenders along the whole eastern quay.",
    "Invoice 4471 covers the replacement of mooring lines, two navigation lights and the annual survey of "
    "the breakwater, payable within thirty days of receipt.",
    "Minutes of the board meeting held on Tuesday: the chairman thanked the volunteers who repainted the "
    "lighthouse and asked the treasurer to report on the fishing licences.",
]
# (font, points, dpi, degrees turned, noise, kind)
PAGES = [
    ("Helvetica", 12, 200, 0.0, 0.0, "pdf"),
    ("Times", 11, 300, 0.5, 0.001, "pdf"),
    ("Courier", 10, 200, 0.0, 0.0, "pdf"),
    ("Helvetica", 9, 300, -0.8, 0.002, "pdf"),
    ("Times", 14, 150, 1.0, 0.0, "png"),
    ("Helvetica", 11, 200, 0.3, 0.001, "jpeg"),
    ("Helvetica", 8, 300, 0.0, 0.0, "pdf"),
]
WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def in_order(expected: list[str], found: list[str]) -> int:
    """How many of ``expected`` appear in ``found`` in the same order (longest common subsequence)."""
    previous = [0] * (len(found) + 1)
    for word in expected:
        current = [0]
        for j, other in enumerate(found, 1):
            current.append(previous[j - 1] + 1 if word == other else max(previous[j], current[-1]))
        previous = current
    return previous[-1]


def make(index: int) -> tuple[bytes, str, str]:
    font, points, dpi, turn, noise, kind = PAGES[index % len(PAGES)]
    text = " ".join(PROSE[(index + k) % len(PROSE)] for k in range(3))
    picture = page_pictures(text_pdf([[(font, points, text)]]), dpi=dpi, rotate=turn, noise=noise, seed=index)[0]
    if kind == "pdf":
        return scanned_pdf([picture], dpi), FORMATS[".pdf"].content_type, text
    return image_file(picture, kind.upper()), FORMATS["." + ("png" if kind == "png" else "jpg")].content_type, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=len(PAGES))
    args = parser.parse_args()
    started = time.perf_counter()
    ocr._engine()
    load = time.perf_counter() - started
    options = ConvertOptions(ocr=True)
    rows, total_words, right_words, key_total, key_found, seconds = [], 0, 0, 0, 0, []
    for index in range(args.pages):
        raw, kind, text = make(index)
        began = time.perf_counter()
        read = convert(raw, kind, options).text
        took = time.perf_counter() - began
        expected, found = words(text), words(read)
        right = in_order(expected, found)
        keys = {w for w in expected if len(w) >= 4}
        hit = len(keys & set(found))
        font, points, dpi, turn, noise, form = PAGES[index % len(PAGES)]
        rows.append({"page": f"{font} {points}pt {dpi}dpi {turn:+.1f}deg noise {noise} {form}",
                     "seconds": round(took, 2), "word_accuracy": round(right / len(expected), 3),
                     "keyword_recall": round(hit / len(keys), 3)})
        total_words += len(expected)
        right_words += right
        key_total += len(keys)
        key_found += hit
        seconds.append(took)
    print(json.dumps({
        "benchmark": "ocr", "package": ocr.PINNED, "cores": available_cores(),
        "load_average": round(os.getloadavg()[0], 1), "pages": len(rows),
        "model_load_seconds": round(load, 2),
        "seconds_per_page": {"mean": round(sum(seconds) / len(seconds), 2), "max": round(max(seconds), 2)},
        "word_accuracy": round(right_words / total_words, 3), "keyword_recall": round(key_found / key_total, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "per_page": rows,
    }))


if __name__ == "__main__":
    main()
