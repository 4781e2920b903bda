"""PDF, DOCX and HTML conversion: text, headings and titles, and each way a document can fail."""

from __future__ import annotations

import datetime as dt
import os
import sys

import pytest

from context_harness import config as config_mod
from context_harness.formats.documents import FORMATS, IMAGE_SUFFIXES, ConversionFailed, convert
from context_harness.ingest.chunk_worker import Chunker, chunk_rows
from support.documents import docx_bytes, pdf_bytes

DOCX = FORMATS[".docx"].content_type


def failure(raw: bytes, content_type: str) -> str:
    with pytest.raises(ConversionFailed) as caught:
        convert(raw, content_type)
    return caught.value.reason


def test_pdf_text_of_every_page_and_the_metadata_title() -> None:
    raw = pdf_bytes(["First page about otters.", "Second page about beavers."], title="River Animals")
    converted = convert(raw, "application/pdf")
    assert converted.title == "River Animals"
    assert "otters" in converted.text and "beavers" in converted.text
    assert converted.text.index("otters") < converted.text.index("beavers")
    assert "\r" not in converted.text


def test_pdf_bookmarks_become_headings_at_the_top_of_their_page() -> None:
    raw = pdf_bytes(["Intro text.", "Install steps.", "More steps.", "Port settings."],
                    bookmarks={0: [(0, "Introduction")], 1: [(0, "Setup"), (1, "Install")], 3: [(1, "Ports")]})
    text = convert(raw, "application/pdf").text
    assert text == ("# Introduction\n\nIntro text.\n\n# Setup\n\n## Install\n\nInstall steps.\n\nMore steps.\n\n"
                    "## Ports\n\nPort settings.\n")


def test_pdf_without_a_title_has_none() -> None:
    assert convert(pdf_bytes(["Just text."]), "application/pdf").title is None


@pytest.mark.parametrize(("title", "kept"), [
    ("Microsoft Word - minutes.docx", False), ("untitled", False), ("Untitled-2", False), ("scan_0042.pdf", False),
    ("Annual Report 2025", True), ("Notes on report.pdf files", True)])
def test_pdf_titles_that_name_nothing_are_dropped(title: str, kept: bool) -> None:
    assert convert(pdf_bytes(["Text."], title=title), "application/pdf").title == (title if kept else None)


def test_pdf_failures_are_named() -> None:
    assert failure(pdf_bytes(["Secret plans."], user_password="pw"), "application/pdf") == "encrypted"
    assert failure(os.urandom(4096), "application/pdf") == "corrupt"
    assert failure(pdf_bytes(["Cut short."])[:300], "application/pdf") == "corrupt"
    assert failure(pdf_bytes(["", ""]), "application/pdf") == "no_text"  # pages without a text layer


def test_docx_headings_lists_tables_and_core_title() -> None:
    raw = docx_bytes([(1, "Setup"), (0, "Install the harness."), (2, "Options"), (0, "Pick a port.")],
                     title="Operator Guide", table=[["key", "value"], ["port", "8080"]])
    converted = convert(raw, DOCX)
    assert converted.title == "Operator Guide"
    assert converted.text.startswith("# Setup\n\nInstall the harness.\n\n## Options\n\nPick a port.")
    assert "| key | value |\n| port | 8080 |" in converted.text


def test_docx_title_falls_back_to_the_first_heading() -> None:
    assert convert(docx_bytes([(1, "Release Notes"), (0, "Fixed things.")]), DOCX).title == "Release Notes"


def test_docx_failures_are_named() -> None:
    assert failure(os.urandom(2048), DOCX) == "corrupt"
    assert failure(b"", DOCX) == "corrupt"
    # A password-protected Office file is an OLE container holding an "EncryptedPackage" stream.
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500) + "EncryptedPackage".encode("utf-16-le") + bytes(500)
    assert failure(ole, DOCX) == "encrypted"
    assert failure(docx_bytes([(0, "   ")]), DOCX) == "no_text"


def test_html_headings_become_markdown_and_scripts_disappear() -> None:
    raw = b"""<!doctype html><html><head><title> Field  Notes </title><style>p{color:red}</style></head>
    <body><!-- a comment --><script>var hidden = "<p>never</p>";</script>
    <h1>Birds <em>of</em> Prey</h1><p>Hawks <b>hunt</b> by day.</p>Loose text.
    <ul><li>kestrel</li><li>osprey</li></ul><h2>Owls</h2><pre>hoot  hoot\n  twice</pre>
    <table><tr><td>barn</td><td>tawny</td></tr></table><p>caf\xc3\xa9</p></body></html>"""
    converted = convert(raw, "text/html")
    assert converted.title == "Field Notes"
    assert converted.text == (
        "# Birds of Prey\n\nHawks hunt by day.\n\nLoose text.\n\n- kestrel\n\n- osprey\n\n## Owls\n\n"
        "```\nhoot  hoot\n  twice\n```\n\nbarn tawny\n\ncafé\n")


def test_html_title_falls_back_to_the_first_heading_and_charsets_are_honoured() -> None:
    assert convert(b"<h2>Only Heading</h2><p>text</p>", "text/html").title == "Only Heading"
    latin1 = '<meta charset="iso-8859-1"><p>na\xefve caf\xe9</p>'.encode("latin-1")
    assert convert(latin1, "text/html").text == "naïve café\n"


def test_html_without_text_is_named() -> None:
    assert failure(b"", "text/html") == "no_text"
    assert failure(b"<html><body><script>only()</script></body></html>", "text/html") == "no_text"


def test_a_missing_converter_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # as if the extra were not installed
    assert failure(pdf_bytes(["Text."]), "application/pdf") == "needs_documents_extra"
    assert "**/*.pdf" not in config_mod.default_include_globs()


def test_default_globs_hold_documents_when_the_extra_is_installed() -> None:
    assert {"**/*.pdf", "**/*.docx", "**/*.html", "**/*.htm"} <= set(config_mod.default_include_globs())
    # Each format's glob joins the defaults with the module converting it; the standard library's with the extra.
    # Pictures join only with [formats] ocr (tests/formats/test_ocr.py).
    assert {g.removeprefix("**/*") for g in config_mod.DOCUMENT_INCLUDE_GLOBS} == set(FORMATS) - set(IMAGE_SUFFIXES)
    assert {g.removeprefix("**/*") for g in config_mod.IMAGE_INCLUDE_GLOBS} == set(IMAGE_SUFFIXES)
    for suffix, fmt in FORMATS.items():
        if suffix in IMAGE_SUFFIXES:
            continue
        module = config_mod.DOCUMENT_INCLUDE_GLOBS["**/*" + suffix]
        assert module == fmt.module or (fmt.module in sys.stdlib_module_names and module == "docx")


def test_helper_processes_convert_as_inline_conversion_does() -> None:
    pdfs = [(f"doc{i}", f"file{i}", pdf_bytes([f"Page one of report {i}.", f"Page two, item {i * 7}."],
                                              title=f"Report {i}" if i % 2 else None), "application/pdf")
            for i in range(12)]
    jobs = [*pdfs, ("bad", "bad", os.urandom(1000), "application/pdf"), ("md", "Notes", "# Notes\n\nplain text")]
    chunker = Chunker(64, 8, helpers=1, threshold=1)
    try:
        future = chunker.submit(jobs)
        assert chunker._pool is not None  # the helper process really ran
        got = chunker.result(future, jobs)
    finally:
        chunker.close()
    for (doc_id, fallback, raw, content_type), done in zip(pdfs, got, strict=False):
        expected = convert(raw, content_type)
        assert done.failure is None and done.converted is not None
        assert done.converted.text == expected.text
        assert done.converted.title == (expected.title or fallback)
        rows = chunk_rows(doc_id, done.converted.title, expected.text, 64, 8)
        assert [(c.id, c.idx, c.text, c.content_hash, c.heading, c.start) for c in done.chunks] == rows
    assert got[-2].failure == "corrupt" and got[-2].chunks == []
    assert got[-1].converted is None and got[-1].chunks[0].text.startswith("# Notes")


def test_pdf_dates_are_read_from_their_own_form() -> None:
    from context_harness.formats.documents import pdf_date

    assert pdf_date("D:20250131120000+01'00'") == dt.datetime(2025, 1, 31, 11, 0, tzinfo=dt.UTC)
    assert pdf_date("D:20250131") == dt.datetime(2025, 1, 31, tzinfo=dt.UTC)
    assert pdf_date("D:2025013112Z") == dt.datetime(2025, 1, 31, 12, tzinfo=dt.UTC)
    assert pdf_date("D:20251341") is None and pdf_date("yesterday") is None and pdf_date(None) is None
    assert pdf_date("D:20250131120000+99'00'") is None  # an offset past a day: no date, not a corrupt PDF
    converted = convert(pdf_bytes(["Text."]), "application/pdf")  # fpdf2 stamps its creation date
    assert converted.created is not None and abs(converted.created - dt.datetime.now(dt.UTC)) < dt.timedelta(days=1)
