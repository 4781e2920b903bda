"""PDF, DOCX and HTML: extraction throughput, and the failure kinds a sync names.

    python benchmarks/documents.py [--pdfs 50] [--pages 20] [--docx 50] [--html 50]

Needs the `test` extra (the documents extra, and fpdf2 to write the PDFs). Makes its files itself:
``--pdfs`` PDFs of ``--pages`` pages (about 350 words and a bookmark a page, a /Title), DOCX files of 20 headed
sections, HTML pages of 20 headed sections with navigation, scripts and lists; plus one corrupt,
one encrypted and one empty (no text layer) PDF. Measures, in this process:
1. extraction alone (``formats/documents.convert`` over every file): PDF pages/s, DOCX and HTML
   files/s and MB/s;
2. a full keyword-only ``Harness.sync`` of the folder (conversion in the chunk helper processes,
   chunking, SQLite, Tantivy), and the skipped files the summary names with their reasons.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import anyio

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import docx  # noqa: E402
from fpdf import FPDF  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.formats.documents import FORMATS, convert  # noqa: E402
from context_harness.ingest.chunk_worker import available_cores  # noqa: E402

WORDS = ("harbour lantern keeper tide signal beacon ledger rope anchor storm gull chart compass "
         "voyage cargo vessel mooring quay pilot drift current reef buoy shoal").split()


def _paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _pdf(rng: random.Random, pages: int, title: str, *, password: str | None = None, text: bool = True) -> bytes:
    pdf = FPDF()
    pdf.set_title(title)
    if password:
        pdf.set_encryption(owner_password="owner", user_password=password)
    for page in range(pages):
        pdf.add_page()
        if not text:
            continue
        pdf.start_section(f"Part {page + 1}")  # a bookmark per page: a heading in the converted text
        pdf.set_font("Helvetica", "B", 15)
        pdf.cell(0, 10, f"{title}, part {page + 1}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=10)
        for _ in range(5):
            pdf.multi_cell(0, 5, _paragraph(rng, 70))
            pdf.ln(2)
    return bytes(pdf.output())


def _docx(rng: random.Random, title: str) -> bytes:
    document = docx.Document()
    document.core_properties.title = title
    for section in range(20):
        document.add_heading(f"Section {section + 1}", level=1)
        document.add_heading(f"Details {section + 1}", level=2)
        for _ in range(3):
            document.add_paragraph(_paragraph(rng, 60))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _html(rng: random.Random, title: str) -> bytes:
    sections = "".join(
        f"<h1>Chapter {i + 1}</h1><h2>Notes {i + 1}</h2>"
        + "".join(f"<p>{_paragraph(rng, 60)} <a href='#x'>more</a></p>" for _ in range(3))
        + "<ul><li>first point</li><li>second point</li></ul>" for i in range(20))
    return (f"<!doctype html><html><head><title>{title}</title><script>var tracking = 1;</script></head>"
            f"<body><nav>Home | Docs</nav>{sections}</body></html>").encode()


def make_files(folder: Path, args: argparse.Namespace) -> dict[str, list[Path]]:
    rng = random.Random(11)
    folder.mkdir(parents=True)
    made: dict[str, list[Path]] = {".pdf": [], ".docx": [], ".html": []}
    builders = ((".pdf", args.pdfs, lambda t: _pdf(rng, args.pages, t)), (".docx", args.docx, lambda t: _docx(rng, t)),
                (".html", args.html, lambda t: _html(rng, t)))
    for kind, count, build in builders:
        for i in range(count):
            path = folder / f"{kind[1:]}-{i:03d}{kind}"
            path.write_bytes(build(f"{kind[1:].upper()} document {i}"))
            made[kind].append(path)
    (folder / "broken.pdf").write_bytes(os.urandom(20_000))
    (folder / "locked.pdf").write_bytes(_pdf(rng, 2, "Locked", password="secret"))
    (folder / "scanned.pdf").write_bytes(_pdf(rng, 3, "Scanned", text=False))
    return made


def extraction(made: dict[str, list[Path]], pages: int) -> dict:
    out: dict = {}
    for kind, paths in made.items():
        if not paths:
            continue
        raws = [p.read_bytes() for p in paths]
        content_type = FORMATS[kind].content_type
        t0 = time.perf_counter()
        chars = sum(len(convert(raw, content_type).text) for raw in raws)
        seconds = time.perf_counter() - t0
        name = kind[1:]
        if kind == ".pdf":
            out["pdf_pages_per_s"] = round(len(raws) * pages / seconds, 1)
        out[f"{name}_files_per_s"] = round(len(raws) / seconds, 1)
        out[f"{name}_mb_per_s"] = round(sum(map(len, raws)) / seconds / 1e6, 2)
        out[f"{name}_files"] = len(raws)
        out[f"{name}_text_chars_per_file"] = chars // len(raws)
    return out


async def sync(workspace: Path) -> dict:
    config = config_mod.from_dict({
        "db": {"path": str(workspace / "data" / "ctx.sqlite")},
        "embedding": {"provider": "disabled"},
        "connectors": {"filesystem": {"bench": {"root": str(workspace / "docs"), "max_file_size": 50_000_000}}},
    }, None)
    async with Harness.open(config) as harness:
        t0 = time.perf_counter()
        summary = (await harness.sync()).sources[0]
        seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = (await harness.sync()).sources[0]
        return {"sync_seconds": round(seconds, 3), "sync_added": summary.added,
                "sync_documents_per_s": round(summary.added / seconds, 1),
                "chunks": (await harness.stats()).chunks,
                "resync_seconds": round(time.perf_counter() - t0, 3), "resync_unchanged": again.unchanged,
                "skipped_reasons": summary.skipped_reasons,
                "skipped_items": [f"{i.source_id}: {i.reason}" for i in summary.skipped_items]}


async def run(args: argparse.Namespace) -> dict:
    out: dict = {"benchmark": "documents", "cores": available_cores(), "pdf_pages": args.pages}
    with tempfile.TemporaryDirectory(prefix="ctx-documents-", dir=args.tmp) as tmp:
        workspace = Path(tmp)
        made = make_files(workspace / "docs", args)
        out.update(extraction(made, args.pages))
        out.update(await sync(workspace))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", type=int, default=50)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--docx", type=int, default=50)
    parser.add_argument("--html", type=int, default=50)
    parser.add_argument("--tmp", default=None)
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
