"""Slides and OpenDocument text: PPTX (``python-pptx``) and ODT (``odfpy``) as Markdown-ish text.

A presentation is a ``#`` section per slide, headed by the slide's title (``Slide N`` when it has
none), its text frames, tables and grouped shapes in order, then its speaker notes as a
``Notes:`` paragraph. An ODT's headings keep their outline level; paragraphs, lists and tables
read as in a DOCX. Title, author and dates come from the file's own properties (the core
properties of a PPTX, the ``meta.xml`` of an OpenDocument file), the title else from the first
slide title or heading. Both are zips: ``check_zip`` bounds them first.

``odfpy`` builds a whole DOM of Python objects, about 70 µs an element (a 3 MB ``content.xml`` of
70,000 elements: 5 s): an OpenDocument file whose ``content.xml`` holds more than ``ODF_MAX_TAGS``
tags is skipped before it parses (``too_large``; a spreadsheet ``too_many_cells``), which bounds one
file to about 15 s of a loaded core.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from typing import Any

from context_harness.formats.documents import ConversionFailed, Converted, ConvertOptions, check_zip

MAX_DEPTH = 32  # nested groups of shapes, sections and lists read; deeper ones are left out
ODF_MAX_TAGS = 400_000  # start and end tags in content.xml (10,000 rows of 10 cells: 220,000)


# -- PPTX (python-pptx) ---------------------------------------------------------------------------

def pptx(raw: bytes, options: ConvertOptions) -> Converted:
    check_zip(raw)
    import pptx as pptx_lib

    deck = pptx_lib.Presentation(io.BytesIO(raw))
    blocks: list[str] = []
    first_title = None
    for number, slide in enumerate(deck.slides, 1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        first_title = first_title or title or None
        blocks.append("# " + (title or f"Slide {number}"))
        for shape in slide.shapes:
            if title_shape is None or shape.shape_id != title_shape.shape_id:
                _shape(shape, blocks, 0)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                blocks.append("Notes: " + notes)
    props = deck.core_properties
    return Converted(props.title or first_title, "\n\n".join(blocks), props.author, props.created, props.modified)


def _shape(shape: Any, blocks: list[str], depth: int) -> None:
    """A shape's text as blocks: a text frame's paragraphs (bulleted by level), a table's rows, a
    group's shapes in order."""
    if depth > MAX_DEPTH:
        return
    if getattr(shape, "shape_type", None) == 6:  # MSO_SHAPE_TYPE.GROUP
        for child in shape.shapes:
            _shape(child, blocks, depth + 1)
    elif getattr(shape, "has_table", False) and shape.has_table:
        rows = ["| " + " | ".join(" ".join(cell.text.split()).replace("|", "\\|") for cell in row.cells) + " |"
                for row in shape.table.rows]
        blocks.append("\n".join(r for r in rows if r.strip("| ")))
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        lines = []
        paragraphs = [p for p in shape.text_frame.paragraphs if p.text.strip()]
        for paragraph in paragraphs:
            text = " ".join(paragraph.text.split())
            lines.append("  " * paragraph.level + "- " + text if len(paragraphs) > 1 else text)
        if lines:
            blocks.append("\n".join(lines))


# -- ODT (odfpy) ----------------------------------------------------------------------------------

def check_odf(raw: bytes, reason: str) -> None:
    """``check_zip``, then ``ConversionFailed(reason)`` when ``content.xml`` holds more than
    ``ODF_MAX_TAGS`` tags (counted as it unpacks, a megabyte at a time)."""
    check_zip(raw)
    tags = 0
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive, archive.open("content.xml") as content:
            while block := content.read(1 << 20):
                tags += block.count(b"<")
                if tags > ODF_MAX_TAGS:
                    raise ConversionFailed(reason)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError):
        raise ConversionFailed("corrupt") from None


def odt(raw: bytes, options: ConvertOptions) -> Converted:
    check_odf(raw, "too_large")
    from odf import opendocument

    doc = opendocument.load(io.BytesIO(raw))
    walker = _OdtWalker()
    walker.container(doc.text, 0)
    converted = odf_metadata(doc, "\n\n".join(walker.blocks))
    converted.title = converted.title or walker.first_heading
    return converted


class _OdtWalker:
    """Headings as ``#`` lines by outline level, list items as ``-``, table rows as ``| a | b |``."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.first_heading: str | None = None

    def container(self, element: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for child in element.childNodes:
            kind = getattr(child, "qname", (None, None))[1]
            if kind == "h":
                self.heading(child)
            elif kind == "p":
                self.paragraph(child, "")
            elif kind == "list":
                self.items(child, depth + 1)
            elif kind == "table":
                self.table(child)
            elif kind in ("section", "index-body", "table-of-content"):
                self.container(child, depth + 1)

    def heading(self, element: Any) -> None:
        text = _text(element)
        if text:
            try:
                level = int(element.getAttribute("outlinelevel") or 1)
            except ValueError:
                level = 1
            self.first_heading = self.first_heading or text
            self.blocks.append("#" * min(max(level, 1), 6) + " " + text)

    def paragraph(self, element: Any, prefix: str) -> None:
        text = _text(element)
        if text:
            self.blocks.append(prefix + text)

    def items(self, element: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for item in element.childNodes:
            for child in getattr(item, "childNodes", []):
                kind = getattr(child, "qname", (None, None))[1]
                if kind in ("p", "h"):
                    self.paragraph(child, "  " * (depth - 1) + "- ")
                elif kind == "list":
                    self.items(child, depth + 1)

    def table(self, element: Any) -> None:
        from odf.table import TableCell, TableRow

        rows = []
        for row in element.getElementsByType(TableRow):
            cells = [_text(cell).replace("|", "\\|") for cell in row.getElementsByType(TableCell)]
            if any(cells):
                rows.append("| " + " | ".join(cells) + " |")
        if rows:
            self.blocks.append("\n".join(rows))


def _text(element: Any) -> str:
    from odf import teletype

    return " ".join(teletype.extractText(element).split())


def odf_metadata(doc: Any, text: str) -> Converted:
    """``text`` with the title, author and dates of an OpenDocument file's ``meta.xml``."""
    from odf import dc, meta

    def first(kind: Any) -> str | None:
        found = doc.meta.getElementsByType(kind)
        return (_text(found[0]) or None) if found else None

    author = first(dc.Creator) or first(meta.InitialCreator)
    return Converted(first(dc.Title), text, author, _iso(first(meta.CreationDate)), _iso(first(dc.Date)))


def _iso(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
