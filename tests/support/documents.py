"""PDF, DOCX and HTML files made in the test (no binary fixtures): fpdf2 writes PDFs (plain,
encrypted, without text), python-docx writes DOCX files with headings and a core title."""

from __future__ import annotations

import io

import docx
from fpdf import FPDF


def pdf_bytes(pages: list[str], *, title: str | None = None, user_password: str | None = None,
              bookmarks: dict[int, list[tuple[int, str]]] | None = None) -> bytes:
    """A PDF with one page per text (an empty text makes a page without a text layer, like a scan);
    ``bookmarks`` maps a page's index to its outline entries (level from 0, title)."""
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    if user_password:
        pdf.set_encryption(owner_password="owner-" + user_password, user_password=user_password)
    pdf.set_font("Helvetica", size=11)
    for i, text in enumerate(pages):
        pdf.add_page()
        for level, name in (bookmarks or {}).get(i, []):
            pdf.start_section(name, level=level)
        if text:
            pdf.set_x(pdf.l_margin)
            pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def docx_bytes(blocks: list[tuple[int, str]], *, title: str | None = None,
               table: list[list[str]] | None = None) -> bytes:
    """A DOCX of (heading level, text) blocks: level 0 is a plain paragraph, 1-3 a "Heading N"."""
    document = docx.Document()
    if title:
        document.core_properties.title = title
    for level, text in blocks:
        if level:
            document.add_heading(text, level=level)
        else:
            document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                grid.cell(r, c).text = cell
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
