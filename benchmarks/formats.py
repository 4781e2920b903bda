"""The documents extra's newer formats: how long converting (and chunking) a large file of each takes.

    python benchmarks/formats.py [--rows 10000] [--runs 3]

Needs the `test` extra (the documents extra). Makes its files with each format's own library
(``tests/support/office_files.py``): an XLSX, an ODS and a CSV of ``--rows`` rows of three columns,
a PPTX of 200 slides with notes, an ODT of 2,000 paragraphs under 200 headings, an EPUB of 50
chapters, a notebook of 1,000 cells, an mbox of 1,000 messages. For each, the best of ``--runs``
of ``formats/documents.convert`` and of chunking the text at the default 128 tokens, the file's
size and its chunks. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from context_harness.formats.documents import FORMATS, convert  # noqa: E402
from context_harness.ingest.chunk_worker import available_cores, chunk_rows  # noqa: E402
from support.office_files import (  # noqa: E402
    epub_bytes,
    mbox_bytes,
    message,
    notebook_bytes,
    ods_bytes,
    odt_bytes,
    pptx_bytes,
    xlsx_bytes,
)


def files(rows: int) -> dict[str, tuple[str, Callable[[], bytes]]]:
    table = [["item", "cost", "bought"]] + [[f"widget {i}", i * 1.5, dt.date(2024, 1, 1 + i % 28)]
                                            for i in range(rows)]
    text_table = [[str(c) for c in row] for row in table]
    when = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return {
        "xlsx": (".xlsx", lambda: xlsx_bytes({"Ledger": table})),
        "ods": (".ods", lambda: ods_bytes({"Ledger": text_table})),
        "csv": (".csv", lambda: "\n".join(",".join(row) for row in text_table).encode()),
        "pptx": (".pptx", lambda: pptx_bytes([(f"Slide about topic {i}", [f"Point {i} a", f"Point {i} b"],
                                                f"Notes for slide {i}.") for i in range(200)])),
        "odt": (".odt", lambda: odt_bytes([(1 if i % 10 == 0 else 0, f"Paragraph {i}: the harbour, its boats, "
                                            "tides and birds.") for i in range(2000)])),
        "epub": (".epub", lambda: epub_bytes([(f"Chapter {i}", "".join(f"<p>Paragraph {j} of chapter {i}, a few "
                                                                         "words long.</p>" for j in range(40)))
                                               for i in range(50)], title="Long Book", author="Someone")),
        "ipynb": (".ipynb", lambda: notebook_bytes([("markdown", f"## Step {i}\n\nWhat step {i} does.") if i % 2 else
                                                    ("code", f"value_{i} = compute({i})") for i in range(1000)])),
        "mbox": (".mbox", lambda: mbox_bytes([message(f"Subject {i}", "a@example.org", "b@example.org",
                                                      f"Message {i} body text.\n" * 5, when=when,
                                                      message_id=f"<{i}@example.org>") for i in range(1000)])),
    }


def measure(suffix: str, raw: bytes, runs: int) -> dict[str, object]:
    convert_s, chunk_s, chunks = [], [], 0
    for _ in range(runs):
        started = time.perf_counter()
        converted = convert(raw, FORMATS[suffix].content_type)
        convert_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        chunks = len(chunk_rows("bench", converted.title, converted.text, 128, 0))
        chunk_s.append(time.perf_counter() - started)
    return {"bytes": len(raw), "convert_s": round(min(convert_s), 3), "chunk_s": round(min(chunk_s), 3),
            "chunks": chunks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    out: dict[str, object] = {"cores": available_cores(), "rows": args.rows, "runs": args.runs}
    for name, (suffix, make) in files(args.rows).items():
        out[name] = measure(suffix, make(), args.runs)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
