"""Spreadsheets and CSV: XLSX (``openpyxl``, read-only), ODS (``odfpy``) and CSV (the standard
library's ``csv``) as text, a ``#`` section per sheet.

A sheet's rows become Markdown tables in groups of at most ``ROW_GROUP_TOKENS`` estimated tokens,
each group led by the sheet's header row (its first row with any text), so that a chunk of rows
reads on its own: ``| name | city |`` tells what ``| Ada | London |`` is. The chunker keeps a group
whole when ``[chunking] max_tokens`` is at least that (128 by default); with a smaller size a group
is cut at its lines and only its first piece carries the header. Empty rows are left out, and empty
cells at a row's end.

A workbook may claim or repeat far more cells than it holds (a 10 kB ODS can repeat a cell a million
times; an XLSX can place one cell at row 1,048,576): at most ``MAX_CELLS`` cells are read, repeats and
skipped rows counted, and a sheet past that is skipped as ``too_many_cells`` (an ODS is bounded in
its XML's tags before that: ``office.check_odf``). Reading a 10,000-row sheet of three columns takes
about 1 s (XLSX, ``openpyxl``'s parser), 5 s (ODS, ``odfpy``'s DOM), 0.1 s (CSV) on a loaded core.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import warnings
import zipfile
from collections.abc import Iterable, Iterator
from typing import Any

from context_harness.common.text import estimate_tokens
from context_harness.formats.documents import ConversionFailed, Converted, ConvertOptions, check_zip
from context_harness.formats.office import check_odf, odf_metadata

MAX_CELLS = 250_000  # cells read per workbook (a 10,000-row sheet of 20 columns is 200,000): openpyxl reads
# about 30,000 cells a second on a loaded core, so a workbook costs 8 s at most
CSV_MAX_CELLS = 2_000_000  # cells read per CSV file (a cell costs about a microsecond)
ROW_GROUP_TOKENS = 100  # estimated tokens of a group of rows with its header: a chunk of 128 holds one
CSV_SNIFF_BYTES = 8192  # what the dialect is guessed from


class CellBudget:
    """Counts the cells read; ``too_many_cells`` past ``MAX_CELLS``."""

    def __init__(self, limit: int = MAX_CELLS) -> None:
        self.left = limit

    def take(self, cells: int) -> None:
        self.left -= max(1, cells)
        if self.left < 0:
            raise ConversionFailed("too_many_cells")


def cell_text(value: Any) -> str:
    """A cell's value as table text: numbers without a needless ``.0``, dates in ISO form, no line
    breaks and no bare ``|`` (it would end the cell)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    elif isinstance(value, dt.datetime):
        value = value.date() if value.time() == dt.time() else value
    text = value.isoformat() if isinstance(value, dt.date | dt.time) else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def sheet_blocks(name: str | None, rows: Iterable[list[str]]) -> list[str]:
    """A sheet as blocks: its ``#`` heading (when it has a name) and its rows in groups, each group a
    Markdown table led by the header row. Rows are lists of cell texts (``cell_text``)."""
    header: list[str] | None = None
    lead: list[str] = []
    lead_tokens = 0
    blocks: list[str] = []
    group: list[str] = []
    tokens = 0
    for cells in rows:
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        line = _line(cells)
        if header is None:
            header = cells
            lead = [line, _line(["---"] * len(cells))]
            lead_tokens = tokens = estimate_tokens("\n".join(lead))
            continue
        size = estimate_tokens(line)
        if group and tokens + size > ROW_GROUP_TOKENS:
            blocks.append("\n".join(lead + group))
            group, tokens = [], lead_tokens
        group.append(line)
        tokens += size
    if header is None:
        return []
    blocks.append("\n".join(lead + group))
    return ([f"# {name}"] if name else []) + blocks


# -- XLSX (openpyxl) ------------------------------------------------------------------------------

def xlsx(raw: bytes, options: ConvertOptions) -> Converted:
    check_zip(raw)
    import openpyxl

    with warnings.catch_warnings():  # openpyxl warns of styles and extensions it does not read
        warnings.simplefilter("ignore")
        try:
            book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
        except Exception:  # openpyxl fails a whole workbook on a bad date in its properties: read it without them
            book = openpyxl.load_workbook(io.BytesIO(_without(raw, "docProps/core.xml")), read_only=True,
                                          data_only=True)
        try:
            budget = CellBudget()
            blocks: list[str] = []
            for sheet in book.worksheets:
                if hasattr(sheet, "reset_dimensions"):
                    sheet.reset_dimensions()  # the file's own claim of its size is not trusted
                    blocks += sheet_blocks(sheet.title, _xlsx_rows(sheet, budget))
            props = book.properties
        finally:
            book.close()
    return Converted(props.title, "\n\n".join(blocks), props.creator, props.created, props.modified)


def _without(raw: bytes, name: str) -> bytes:
    """The zip ``raw`` without its part ``name`` (already bounded by ``check_zip``)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if info.filename != name:
                archive.writestr(info, source.read(info.filename))
    return out.getvalue()


def _xlsx_rows(sheet: Any, budget: CellBudget) -> Iterator[list[str]]:
    for values in sheet.iter_rows(values_only=True):
        budget.take(len(values))
        yield [cell_text(v) for v in values]


# -- ODS (odfpy) ----------------------------------------------------------------------------------

def ods(raw: bytes, options: ConvertOptions) -> Converted:
    check_odf(raw, "too_many_cells")
    from odf import opendocument
    from odf.table import Table

    doc = opendocument.load(io.BytesIO(raw))
    budget = CellBudget()
    blocks: list[str] = []
    for table in doc.spreadsheet.getElementsByType(Table):
        blocks += sheet_blocks(str(table.getAttribute("name") or "") or None, _ods_rows(table, budget))
    return odf_metadata(doc, "\n\n".join(blocks))


def _ods_rows(table: Any, budget: CellBudget) -> Iterator[list[str]]:
    """A table's rows with their repeats (``number-rows-repeated``, ``number-columns-repeated``)
    spelled out, empty ones only as far as text follows them."""
    from odf.table import TableRow

    for row in table.getElementsByType(TableRow):
        cells = _ods_cells(row, budget)
        if not any(cells):
            continue
        repeat = _repeat(row, "numberrowsrepeated")
        budget.take(len(cells) * (repeat - 1))
        for _ in range(repeat):
            yield list(cells)


def _ods_cells(row: Any, budget: CellBudget) -> list[str]:
    from odf import teletype
    from odf.text import P

    cells: list[str] = []
    empty = 0  # empty cells not added yet: only when text follows them
    for cell in row.childNodes:
        if cell.qname[1] not in ("table-cell", "covered-table-cell"):
            continue
        repeat = _repeat(cell, "numbercolumnsrepeated")
        text = " ".join(" ".join(teletype.extractText(p).split()) for p in cell.getElementsByType(P)).strip()
        if not text:
            empty += repeat
            continue
        budget.take(empty + repeat)
        cells += [""] * empty + [text.replace("|", "\\|")] * repeat
        empty = 0
    return cells


def _repeat(element: Any, attribute: str) -> int:
    try:
        return max(1, int(element.getAttribute(attribute) or 1))
    except ValueError:
        return 1


# -- CSV (the standard library) -------------------------------------------------------------------

def csv_text(raw: bytes, options: ConvertOptions) -> Converted:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    try:
        dialect: Any = csv.Sniffer().sniff(text[:CSV_SNIFF_BYTES], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    budget = CellBudget(CSV_MAX_CELLS)

    def rows() -> Iterator[list[str]]:
        for cells in csv.reader(io.StringIO(text, newline=""), dialect):
            budget.take(len(cells))
            yield [cell_text(c) for c in cells]

    return Converted(None, "\n\n".join(sheet_blocks(None, rows())))
