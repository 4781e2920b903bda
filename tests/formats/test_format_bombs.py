"""Hostile files of the newer formats, each made by its own library and then inflated: zips that unpack
far past their size, spreadsheets that claim or repeat millions of cells, notebooks of too many cells,
mailboxes of too many messages, messages of too many parts. Each is skipped with its own reason,
quickly and without holding what it claims, in ``convert`` and in a sync."""

from __future__ import annotations

import datetime as dt
import io
import json
import time
import tracemalloc
import zipfile
from collections.abc import Callable

import pytest

from context_harness.core.harness import Harness
from context_harness.formats import mail, notebooks, office, sheets
from context_harness.formats.documents import FORMATS, ZIP_MAX_UNPACKED, ConversionFailed, convert
from support.office_files import (
    epub_bytes,
    mbox_bytes,
    message,
    ods_bytes,
    odt_bytes,
    pptx_bytes,
    xlsx_bytes,
)
from support.workspace import Workspace

BOUND = 5 * 1.0  # seconds: each is refused in well under 0.2 s here; 5x headroom over a slow second


def failure(raw: bytes, suffix: str) -> tuple[str, float]:
    started = time.perf_counter()
    with pytest.raises(ConversionFailed) as caught:
        convert(raw, FORMATS[suffix].content_type)
    return caught.value.reason, time.perf_counter() - started


def inflated(raw: bytes, extra: int) -> bytes:
    """``raw`` (a real zip-based file) with one more part of ``extra`` zero bytes, written in pieces."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info, source.read(info.filename))
        with archive.open("padding.xml", "w", force_zip64=True) as part:
            block = bytes(1 << 20)
            for _ in range(extra >> 20):
                part.write(block)
    return out.getvalue()


MAKERS: dict[str, Callable[[], bytes]] = {
    ".pptx": lambda: pptx_bytes([("Seed", ["A seed slide."], "")]),
    ".xlsx": lambda: xlsx_bytes({"Seed": [["a"], ["b"]]}),
    ".ods": lambda: ods_bytes({"Seed": [["a"], ["b"]]}),
    ".odt": lambda: odt_bytes([(0, "A seed paragraph.")]),
    ".epub": lambda: epub_bytes([("Seed", "<p>A seed chapter.</p>")], title="Seed", author="Nobody"),
}


@pytest.mark.parametrize("suffix", sorted(MAKERS))
def test_a_zip_that_unpacks_far_past_its_size_is_too_large(suffix: str) -> None:
    seed = MAKERS[suffix]()
    assert convert(seed, FORMATS[suffix].content_type).text  # the file itself converts
    bomb = inflated(seed, ZIP_MAX_UNPACKED + (8 << 20))
    assert len(bomb) < 200_000  # 40 MB of zeros in a file far under the default max_file_size of 2 MB
    tracemalloc.start()
    try:
        reason, seconds = failure(bomb, suffix)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reason == "too_large" and seconds < BOUND and peak < 4 * len(bomb) + 1_000_000


def odf_with_content(raw: bytes, content: bytes) -> bytes:
    """An OpenDocument file made by odfpy with its ``content.xml`` replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info, content if info.filename == "content.xml" else source.read(info.filename))
    return out.getvalue()


def test_an_ods_of_too_many_elements_is_refused_before_odfpy_builds_them() -> None:
    seed = ods_bytes({"Seed": [["a"]]})
    original = zipfile.ZipFile(io.BytesIO(seed)).read("content.xml")
    row = b"<table:table-row><table:table-cell/></table:table-row>"
    at = original.index(b"</table:table>")
    bomb = odf_with_content(seed, original[:at] + row * (office.ODF_MAX_TAGS // 3 + 1000) + original[at:])
    reason, seconds = failure(bomb, ".ods")
    assert reason == "too_many_cells" and seconds < BOUND
    odt = odt_bytes([(0, "A seed paragraph.")])
    text = zipfile.ZipFile(io.BytesIO(odt)).read("content.xml")
    at = text.index(b"</office:text>")
    reason, seconds = failure(odf_with_content(odt, text[:at] + b"<text:p/>" * (office.ODF_MAX_TAGS + 1) + text[at:]),
                              ".odt")
    assert reason == "too_large" and seconds < BOUND


def test_an_ods_that_repeats_a_cell_a_million_times_is_too_many_cells() -> None:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    table = Table(name="Bomb")
    header = TableRow()
    header.addElement(TableCell())
    header.childNodes[-1].addElement(P(text="name"))
    table.addElement(header)
    row = TableRow(numberrowsrepeated=1_000_000)
    cell = TableCell(numbercolumnsrepeated=1_000_000)
    cell.addElement(P(text="boom"))
    row.addElement(cell)
    table.addElement(row)
    doc.spreadsheet.addElement(table)
    out = io.BytesIO()
    doc.write(out)
    assert len(out.getvalue()) < 20_000
    reason, seconds = failure(out.getvalue(), ".ods")
    assert reason == "too_many_cells" and seconds < BOUND
    # Empty cells repeated to the sheet's edge (what office suites write) cost nothing.
    doc = OpenDocumentSpreadsheet()
    table = Table(name="Edges")
    for text in ("name", "Ada"):
        row = TableRow()
        cell = TableCell()
        cell.addElement(P(text=text))
        row.addElement(cell)
        row.addElement(TableCell(numbercolumnsrepeated=16_383))
        table.addElement(row)
    table.addElement(TableRow(numberrowsrepeated=1_048_574))
    doc.spreadsheet.addElement(table)
    out = io.BytesIO()
    doc.write(out)
    assert convert(out.getvalue(), FORMATS[".ods"].content_type).text == "# Edges\n\n| name |\n| --- |\n| Ada |\n"


def test_an_xlsx_whose_cells_lie_far_apart_is_too_many_cells() -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "name"
    sheet["A1048576"] = "the last row"  # a million rows between: read as empty, each counted
    out = io.BytesIO()
    book.save(out)
    for raw in (out.getvalue(), wide_xlsx(20)):
        reason, seconds = failure(raw, ".xlsx")
        assert reason == "too_many_cells" and seconds < BOUND


def wide_xlsx(rows: int) -> bytes:
    """Rows with a cell in column A and one in column XFD: each row 16,384 cells wide."""
    import openpyxl

    book = openpyxl.Workbook()
    for r in range(1, rows + 1):
        book.active.cell(row=r, column=1, value="left")
        book.active.cell(row=r, column=16_384, value="right")
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_a_notebook_of_too_many_cells_is_refused_before_nbformat_reads_it() -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1")  # made once (each is validated), copied with ids of their own
    nb.cells = [{**cell, "id": f"cell-{n}"} for n in range(notebooks.MAX_CELLS + 1)]
    raw = json.dumps(nb).encode()  # nbformat.writes would validate every cell first (seconds)
    reason, seconds = failure(raw, ".ipynb")
    assert reason == "too_many_cells" and seconds < BOUND
    deep = b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert failure(deep, ".ipynb")[0] == "corrupt"  # nesting bounded: no RecursionError, no hang


def test_a_mailbox_of_too_many_messages_and_a_message_of_too_many_parts() -> None:
    when = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    one = message("Hi", "a@example.org", "b@example.org", "x", when=when, message_id="<1@example.org>")
    reason, seconds = failure(mbox_bytes([one]) * (mail.MAX_MESSAGES + 1), ".mbox")
    assert reason == "too_many_messages" and seconds < BOUND
    parts = message("Parts", "a@example.org", "b@example.org", "body", when=when, message_id="<2@example.org>")
    for n in range(mail.MAX_PARTS + 1):
        parts.add_attachment(b"x", maintype="application", subtype="octet-stream", filename=f"{n}.bin")
    reason, seconds = failure(parts.as_bytes(), ".eml")
    assert reason == "too_many_parts" and seconds < BOUND


@pytest.mark.anyio
async def test_a_sync_skips_each_bomb_by_name_and_indexes_the_rest(workspace: Workspace) -> None:
    (workspace.docs / "bomb.pptx").write_bytes(inflated(MAKERS[".pptx"](), ZIP_MAX_UNPACKED + (8 << 20)))
    (workspace.docs / "wide.xlsx").write_bytes(wide_xlsx(sheets.MAX_CELLS // 16_384 + 2))
    workspace.write("note.md", "# Note\n\nStill indexed.\n")
    async with Harness.open(workspace.config()) as h:
        summary = (await h.sync()).sources[0]
        notes = (await h.sources()).sources[0].notes or ""
    assert summary.added == 1 and summary.skipped_reasons == {"too_large": 1, "too_many_cells": 1}
    assert "too_large 1 (bomb.pptx)" in notes and "too_many_cells 1 (wide.xlsx)" in notes
