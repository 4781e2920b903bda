"""OCR of scanned pages and pictures (``[formats] ocr``, the ``ocr`` extra): pages written as text by
fpdf2, rasterised into picture-only pages (no text layer), read by the real RapidOCR models and found
by a phrase through a real sync and keyword search; with OCR off such pages are skipped, and a page past
a bound is skipped while the rest is read."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from context_harness import config as config_mod
from context_harness.cli.progress import Lines
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError
from context_harness.formats import ocr
from context_harness.formats.documents import FORMATS, ConversionFailed, ConvertOptions, convert
from context_harness.models import GetRequest, SearchRequest
from context_harness.store.records import document_id
from support.scans import image_file, mixed_pdf, page_pictures, scanned_pdf, text_pdf
from support.workspace import Workspace

PDF = "application/pdf"
HARBOUR = [("Helvetica", 12, "The quarterly harbour inspection found seven cracked bollards near the northern pier."),
           ("Times", 11, "Repairs are scheduled for early spring, weather permitting.")]
LIGHTHOUSE = [("Helvetica", 12, "A page with a real text layer about the lighthouse keepers of the bay.")]
ON = ConvertOptions(ocr=True)


def scan(lines: list[tuple[str, int, str]] = HARBOUR, dpi: int = 200, **noise: Any) -> bytes:
    return scanned_pdf(page_pictures(text_pdf([lines]), dpi, **noise), dpi)


def words(text: str) -> list[str]:
    return " ".join(text.split()).split(" ")


def test_scanned_page_is_read_by_ocr() -> None:
    raw = scan()
    converted = convert(raw, PDF, ON)
    assert "cracked bollards near the northern pier" in " ".join(converted.text.split())
    assert "early spring" in converted.text
    assert converted.metadata == {"ocr_pages": 1}


def test_turned_and_speckled_scan_is_still_read() -> None:
    converted = convert(scan(rotate=0.8, noise=0.002), PDF, ON)
    assert "harbour inspection" in " ".join(converted.text.split())


def test_with_ocr_off_a_scanned_page_is_skipped_as_needs_ocr() -> None:
    with pytest.raises(ConversionFailed) as failed:
        convert(scan(), PDF)
    assert failed.value.reason == "needs_ocr"
    # A page with text and a scanned one: the text is kept, the scan named in the metadata.
    converted = convert(mixed_pdf(LIGHTHOUSE, HARBOUR), PDF)
    assert "lighthouse keepers" in converted.text and "bollards" not in converted.text
    assert converted.metadata == {"pages_skipped": {"2": "needs_ocr"}}
    # An empty page (no picture) is not a scan: still no_text.
    with pytest.raises(ConversionFailed) as empty:
        convert(text_pdf([[("Helvetica", 12, " ")]]), PDF, ON)
    assert empty.value.reason == "no_text"


def test_a_page_past_its_time_limit_is_skipped_and_the_rest_is_read() -> None:
    events: list[dict[str, Any]] = []
    with ocr.reporting(events.append, "mixed.pdf"):
        converted = convert(mixed_pdf(LIGHTHOUSE, HARBOUR), PDF, ConvertOptions(ocr=True, ocr_page_seconds=0.001))
    assert "lighthouse keepers" in converted.text and "bollards" not in converted.text
    assert converted.metadata == {"ocr_pages": 1, "pages_skipped": {"2": "ocr_timeout"}}
    assert [(e["document"], e["page"], e["pages"], e["skipped"]) for e in events] == [
        ("mixed.pdf", 1, 1, "ocr_timeout")]
    with pytest.raises(ConversionFailed) as failed:  # nothing else to read: the file is skipped for it
        convert(scan(), PDF, ConvertOptions(ocr=True, ocr_page_seconds=0.001))
    assert failed.value.reason == "ocr_timeout"


def test_a_page_is_rasterised_within_the_pixel_bound() -> None:
    import pypdfium2 as pdfium

    huge = text_pdf([HARBOUR])
    doc = pdfium.PdfDocument(huge)
    doc.new_page(14_400, 14_400)  # 200 x 200 inches, the largest page PDF allows
    try:
        picture = ocr.render_page(doc[1])
        assert max(picture.shape) <= ocr.MAX_SIDE
        assert ocr.render_page(doc[0]).shape == (round(297 / 25.4 * 72 * ocr.RENDER_SCALE),
                                                 round(210 / 25.4 * 72 * ocr.RENDER_SCALE))
    finally:
        doc.close()
    # A scan is rendered at its own resolution (at least 216 dpi): small print scanned at 300 dpi keeps it.
    for dpi, side in ((150, 2526), (200, 2526), (300, 3508)):
        scanned = pdfium.PdfDocument(scan(dpi=dpi))
        try:
            assert abs(max(ocr.render_page(scanned[0]).shape) - side) <= 2
        finally:
            scanned.close()


def test_small_print_scanned_finely_is_read() -> None:
    small = [("Helvetica", 8, "Small print: the lease of the boathouse ends in March unless the club renews it.")]
    assert "lease of the boathouse ends in March" in " ".join(convert(scan(small, dpi=300), PDF, ON).text.split())


def test_an_image_file_past_the_pixel_bound_is_too_large() -> None:
    from PIL import Image

    big = Image.new("1", (8000, 6000), 1)  # 48 million pixels, a few kB as PNG
    with pytest.raises(ConversionFailed) as failed:
        convert(image_file(big), FORMATS[".png"].content_type, ON)
    assert failed.value.reason == "too_large"


def test_pictures_are_read_and_need_ocr_on() -> None:
    picture = page_pictures(text_pdf([HARBOUR]))[0]
    for suffix, kind in ((".png", "PNG"), (".jpg", "JPEG"), (".tiff", "TIFF")):
        raw = image_file(picture, kind)
        assert "seven cracked bollards" in " ".join(convert(raw, FORMATS[suffix].content_type, ON).text.split())
        with pytest.raises(ConversionFailed) as off:
            convert(raw, FORMATS[suffix].content_type)
        assert off.value.reason == "needs_ocr"


def test_model_files_are_checked(tmp_path: Path) -> None:
    fake = tmp_path / "ch_PP-OCRv4_det_infer.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(ConfigError, match="damaged or was replaced"):
        ocr.verify(fake, ocr.MODEL_SHA256[fake.name])


def test_picture_globs_join_the_defaults_only_with_ocr(workspace: Workspace) -> None:
    assert "**/*.png" not in workspace.config().connectors.filesystem["docs"].include_globs
    workspace.write_config("[formats]\nocr = true\n")
    globs = workspace.config().connectors.filesystem["docs"].include_globs
    assert {"**/*.png", "**/*.jpg", "**/*.jpeg", "**/*.tif", "**/*.tiff", "**/*.md", "**/*.pdf"} <= set(globs)
    workspace.write_config('include_globs = ["**/*.md"]\n[formats]\nocr = true\n')
    assert workspace.config().connectors.filesystem["docs"].include_globs == ["**/*.md"]  # as the source says


@pytest.mark.anyio
async def test_sync_finds_a_scanned_page_by_a_phrase(workspace: Workspace) -> None:
    (workspace.docs / "inspection.pdf").write_bytes(scan())
    (workspace.docs / "notes.png").write_bytes(image_file(page_pictures(text_pdf([LIGHTHOUSE]))[0]))

    async def sync(config: config_mod.Config) -> tuple[Any, list[dict[str, Any]], list[str]]:
        events: list[dict[str, Any]] = []
        async with Harness.open(config) as h:
            report = await h.sync(progress=events.append)
            hits = await h.search(SearchRequest(query='"cracked bollards"', mode="keyword"))
            return report.sources[0], events, [r.source_id for r in hits.results]

    summary, _, found = await sync(workspace.config())
    assert summary.skipped_reasons == {"needs_ocr": 1} and found == []  # off: skipped, named
    workspace.write_config("[formats]\nocr = true\n")
    summary, events, found = await sync(workspace.config())
    assert found == ["inspection.pdf"] and summary.skipped_reasons == {}
    assert summary.added + summary.updated == 2  # the picture joined the default globs
    pages = [(e["source"], e["document"], e["page"], e["pages"]) for e in events if e["event"] == "ocr"]
    assert sorted(pages) == [("filesystem:docs", "inspection.pdf", 1, 1), ("filesystem:docs", "notes.png", 1, 1)]
    async with Harness.open(workspace.config()) as h:
        doc = await h.get(GetRequest(id=document_id("filesystem:docs", "inspection.pdf")))
        picture = await h.get(GetRequest(id=document_id("filesystem:docs", "notes.png")))
    assert doc.metadata["ocr_pages"] == 1 and "lighthouse keepers" in " ".join(picture.body.split())
    # The progress lines say which document's page is read.
    out = io.StringIO()
    lines = Lines(out)
    for event in events:
        lines.emit(event)
    assert "OCR filesystem:docs: inspection.pdf: page 1/1" in out.getvalue()


@pytest.mark.anyio
async def test_ocr_on_without_the_extra_names_the_install(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace.docs / "inspection.pdf").write_bytes(scan())
    workspace.write_config("[formats]\nocr = true\n")
    monkeypatch.setitem(sys.modules, ocr.PACKAGE, None)  # the package cannot be imported, as when not installed
    assert not ocr.available()
    async with Harness.open(workspace.config()) as h:
        with pytest.raises(ConfigError) as failed:
            await h.sync()
    assert "needs the ocr extra" in failed.value.message and "[ocr]" in failed.value.message


def test_ocr_progress_comes_back_from_a_chunking_helper() -> None:
    from context_harness.ingest.chunk_worker import Chunker

    events: list[dict[str, Any]] = []
    chunker = Chunker(128, 0, helpers=1, threshold=1, options=ON, progress=events.append)
    docs = [("doc-1", "inspection", scan(), PDF)]
    try:
        future = chunker.submit(docs, 1)  # a helper process starts for it (threshold 1)
        assert chunker._pool is not None
        done = chunker.result(future, docs)
        assert not chunker._failed  # read by the helper, not again in this process
    finally:
        chunker.close()
    assert done[0].converted is not None and "bollards" in done[0].converted.text
    assert [(e["event"], e["document"], e["page"], e["pages"], e["skipped"]) for e in events] == [
        ("ocr", "doc-1", 1, 1, None)]
