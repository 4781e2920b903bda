"""Scanned pages made for the OCR tests and benchmark: text laid out by fpdf2 (a real PDF with a text
layer), rasterised by pypdfium2, then saved by Pillow as a PDF page that is only a picture (no text
layer), or as an image file; optionally turned a little and speckled, as a scanner leaves a page."""

from __future__ import annotations

import io
import random
from collections.abc import Sequence

Line = tuple[str, int, str]  # (font: Helvetica, Times, Courier; size in points; text)


def text_pdf(pages: Sequence[Sequence[Line]]) -> bytes:
    """A PDF with a text layer: each page's paragraphs in their fonts."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(True, margin=15)
    for page in pages:
        pdf.add_page()
        for font, size, text in page:
            pdf.set_font(font, size=size)
            pdf.multi_cell(0, size * 0.6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(size * 0.4)
    return bytes(pdf.output())


def page_pictures(raw: bytes, dpi: int = 200, rotate: float = 0.0, noise: float = 0.0, seed: int = 7) -> list:
    """Each page of a PDF as a gray Pillow picture at ``dpi``: turned by ``rotate`` degrees and with
    ``noise`` (a fraction of pixels flipped to black or white) when asked."""
    import pypdfium2 as pdfium
    from PIL import Image

    doc = pdfium.PdfDocument(raw)
    pictures = []
    rng = random.Random(seed)
    try:
        for index in range(len(doc)):
            page = doc[index]
            picture = page.render(scale=dpi / 72).to_pil().convert("L")
            page.close()
            if rotate:
                picture = picture.rotate(rotate, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=255)
            if noise:
                pixels = picture.load()
                width, height = picture.size
                for _ in range(int(width * height * noise)):
                    pixels[rng.randrange(width), rng.randrange(height)] = rng.choice((0, 255))
            pictures.append(picture)
    finally:
        doc.close()
    return pictures


def scanned_pdf(pictures: Sequence, dpi: int = 200) -> bytes:
    """The pictures as a PDF of picture-only pages (what a scanner writes: no text layer)."""
    out = io.BytesIO()
    first, *rest = pictures
    first.save(out, format="PDF", resolution=dpi, save_all=True, append_images=list(rest))
    return out.getvalue()


def image_file(picture: object, kind: str = "PNG") -> bytes:
    out = io.BytesIO()
    picture.save(out, format=kind)  # type: ignore[attr-defined]
    return out.getvalue()


def mixed_pdf(text_page: Sequence[Line], scanned_page: Sequence[Line], dpi: int = 200) -> bytes:
    """A PDF whose first page has a text layer and whose second is a scan of ``scanned_page``: pypdfium2
    puts the scanned PDF's page after the text one."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(text_pdf([text_page]))
    scan = pdfium.PdfDocument(scanned_pdf(page_pictures(text_pdf([scanned_page]), dpi), dpi))
    try:
        doc.import_pages(scan)
        out = io.BytesIO()
        doc.save(out)
        return out.getvalue()
    finally:
        scan.close()
        doc.close()
