"""Real files of the documents extra's newer formats, each written by its own library (python-pptx,
openpyxl, odfpy, ebooklib, nbformat, the standard library's email and mailbox): never hand-made bytes."""

from __future__ import annotations

import datetime as dt
import io
import mailbox
import tempfile
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import Any


def pptx_bytes(slides: Sequence[tuple[str | None, list[str], str]], *, title: str | None = None,
               author: str | None = None) -> bytes:
    """A deck: per slide (title or None, body paragraphs, speaker notes)."""
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    if title:
        deck.core_properties.title = title
    if author:
        deck.core_properties.author = author
    for slide_title, body, notes in slides:
        if slide_title is None:
            slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title placeholder
            slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(3)).text_frame.text = "\n".join(body)
        else:
            slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
            slide.shapes.title.text = slide_title
            slide.placeholders[1].text_frame.text = "\n".join(body)
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_bytes(sheets: dict[str, list[list[Any]]], *, title: str | None = None, author: str | None = None) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.properties.title = title
    if author:
        book.properties.creator = author  # else openpyxl's own "openpyxl"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def ods_bytes(sheets: dict[str, list[list[str]]], *, title: str | None = None) -> bytes:
    from odf import dc
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    if title:
        doc.meta.addElement(dc.Title(text=title))
    for name, rows in sheets.items():
        table = Table(name=name)
        for row in rows:
            tr = TableRow()
            for value in row:
                cell = TableCell(valuetype="string")
                cell.addElement(P(text=value))
                tr.addElement(cell)
            table.addElement(tr)
        doc.spreadsheet.addElement(table)
    out = io.BytesIO()
    doc.write(out)
    return out.getvalue()


def odt_bytes(blocks: Sequence[tuple[int, str]], *, title: str | None = None, author: str | None = None) -> bytes:
    """An ODT of (outline level, text) blocks: 0 is a paragraph, -1 a list item."""
    from odf import dc, meta
    from odf.opendocument import OpenDocumentText
    from odf.text import H, List, ListItem, P

    doc = OpenDocumentText()
    if title:
        doc.meta.addElement(dc.Title(text=title))
    if author:
        doc.meta.addElement(meta.InitialCreator(text=author))
    doc.meta.addElement(meta.CreationDate(text="2024-03-05T10:00:00"))
    for level, text in blocks:
        if level > 0:
            doc.text.addElement(H(outlinelevel=level, text=text))
        elif level == 0:
            doc.text.addElement(P(text=text))
        else:
            items = List()
            item = ListItem()
            item.addElement(P(text=text))
            items.addElement(item)
            doc.text.addElement(items)
    out = io.BytesIO()
    doc.write(out)
    return out.getvalue()


def epub_bytes(chapters: Sequence[tuple[str, str]], *, title: str, author: str) -> bytes:
    """An EPUB of (chapter title, chapter HTML body) in reading order, with a table of contents."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title(title)
    book.set_language("en")
    book.add_author(author)
    book.add_metadata("DC", "date", "2021-06-01")
    items = []
    for number, (chapter_title, body) in enumerate(chapters, 1):
        item = epub.EpubHtml(title=chapter_title, file_name=f"chapter{number}.xhtml", lang="en")
        item.content = body
        book.add_item(item)
        items.append(item)
    book.toc = tuple(items)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def notebook_bytes(cells: Sequence[tuple[str, str]], *, output: str = "", title: str | None = None) -> bytes:
    """A notebook of (kind, source) cells, ``markdown`` or ``code``; each code cell prints ``output``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    if title:
        nb.metadata["title"] = title
        nb.metadata["authors"] = [{"name": "Ada Lovelace"}]
    for kind, source in cells:
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(source))
        else:
            outputs = [nbformat.v4.new_output("stream", text=output)] if output else []
            nb.cells.append(nbformat.v4.new_code_cell(source, outputs=outputs))
    return nbformat.writes(nb).encode("utf-8")


def message(subject: str, sender: str, to: str, body: str, *, when: dt.datetime, message_id: str,
            in_reply_to: str | None = None, html: bool = False) -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = sender
    msg["To"] = to
    msg["Date"] = when
    msg["Message-ID"] = message_id
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
    msg.set_content(body, subtype="html" if html else "plain")
    return msg


def mbox_bytes(messages: Sequence[EmailMessage]) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "box.mbox"
        box = mailbox.mbox(path)
        for msg in messages:
            box.add(msg)
        box.flush()
        box.close()
        return path.read_bytes()
