"""Documents, not only text: PDF, DOCX, HTML and more -> Markdown-ish text, a title and metadata.

The converters come from the optional extra ``context-harness[documents]``: ``pypdfium2`` (PDF),
``python-docx`` (DOCX) and ``lxml`` (HTML) here; slides and ODT (``office.py``), spreadsheets and CSV
(``sheets.py``), EPUB (``ebooks.py``), notebooks (``notebooks.py``) and e-mail (``mail.py``) in
modules of their own, each library imported only when a document is converted. Headings
become Markdown ``#`` headings (HTML ``<h1>``-``<h6>``, DOCX "Heading N" and "Title" styles, PDF
bookmarks at the top of their page) so the chunker's heading paths work. Titles come from the
document's metadata (PDF ``/Title``, DOCX core properties, HTML ``<title>``), else its first heading
(DOCX, HTML), else None (the caller falls back to the file name). A document that cannot be
converted raises ``ConversionFailed`` with a short reason: ``encrypted``, ``corrupt``, ``no_text``
(empty pages), ``needs_ocr`` (scanned pages, with ``[formats] ocr`` off; with it on, ``formats/ocr.py``
reads them and pictures), ``ocr_timeout``, ``needs_documents_extra``, or a bound that a hostile
file passed (``too_large``: a zip that unpacks far past its size; ``too_many_cells``,
``too_many_messages``, ``too_many_parts``). Conversion runs in the sync, in the chunk helper processes on large syncs.
"""

from __future__ import annotations

import datetime as dt
import importlib
import importlib.util
import io
import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from context_harness.config.install import InstallHint
from context_harness.errors import HarnessError

CONVERTER_VERSION = 3  # part of a converted document's content hash: a better converter re-converts (3: scans
# are told apart as needs_ocr, and read with [formats] ocr; .eml files link to the message they answer)
EXTRA_HINT = InstallHint("documents")  # the command for this install (a checkout, a git URL, uv, pipx)


@dataclass(frozen=True)
class DocumentFormat:
    name: str  # "PDF"
    content_type: str
    module: str  # the import that converts it (from the documents extra)


FORMATS = {
    ".pdf": DocumentFormat("PDF", "application/pdf", "pypdfium2"),
    ".docx": DocumentFormat(
        "DOCX", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
    ".html": DocumentFormat("HTML", "text/html", "lxml"),
    ".htm": DocumentFormat("HTML", "text/html", "lxml"),
    ".pptx": DocumentFormat(
        "PPTX", "application/vnd.openxmlformats-officedocument.presentationml.presentation", "pptx"),
    ".xlsx": DocumentFormat("XLSX", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "openpyxl"),
    ".ods": DocumentFormat("ODS", "application/vnd.oasis.opendocument.spreadsheet", "odf"),
    ".odt": DocumentFormat("ODT", "application/vnd.oasis.opendocument.text", "odf"),
    ".csv": DocumentFormat("CSV", "text/csv", "csv"),
    ".epub": DocumentFormat("EPUB", "application/epub+zip", "ebooklib"),
    ".ipynb": DocumentFormat("notebook", "application/x-ipynb+json", "nbformat"),
    ".eml": DocumentFormat("e-mail", "message/rfc822", "email"),
    ".mbox": DocumentFormat("mbox", "application/mbox", "mailbox"),
    # Pictures are read only by OCR (``[formats] ocr``, formats/ocr.py); Pillow decodes them (a dependency).
    ".png": DocumentFormat("PNG", "image/png", "PIL"),
    ".jpg": DocumentFormat("JPEG", "image/jpeg", "PIL"),
    ".jpeg": DocumentFormat("JPEG", "image/jpeg", "PIL"),
    ".tif": DocumentFormat("TIFF", "image/tiff", "PIL"),
    ".tiff": DocumentFormat("TIFF", "image/tiff", "PIL"),
}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
CONVERTED_TYPES = frozenset(f.content_type for f in FORMATS.values())


class ConversionFailed(Exception):
    """A document that could not be converted; ``reason`` is the skip reason the sync counts."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ConvertOptions:
    """How documents are read (``[formats]``); the same for every document of a sync."""

    notebook_outputs: bool = False  # the text outputs of notebooks' code cells
    ocr: bool = False  # read scanned PDF pages (no text layer) and pictures by OCR (formats/ocr.py)
    ocr_page_seconds: float = 60.0  # past this a page's OCR stops and the page is skipped (ocr_timeout)


@dataclass
class Converted:
    """A converted document: its text, and what its own metadata says (the file's name and times
    stand in for what it does not)."""

    title: str | None
    text: str
    author: str | None = None
    created: dt.datetime | None = None
    updated: dt.datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # e-mail: from, to, cc, date, message_id ...


Converter = Callable[[bytes, ConvertOptions], Converted]


def document_format(suffix: str) -> DocumentFormat | None:
    return FORMATS.get(suffix.lower())


def available(fmt: DocumentFormat) -> bool:
    """Whether the library converting ``fmt`` can be imported (the documents extra is installed)."""
    try:
        return importlib.util.find_spec(fmt.module) is not None
    except (ImportError, ValueError):
        return False


def convert(raw: bytes, content_type: str, options: ConvertOptions | None = None) -> Converted:
    """Convert one document; raises ``ConversionFailed``. Never raises anything else for bad input."""
    converter = _converter(content_type)
    try:
        converted = converter(raw, options or ConvertOptions())
    except (ConversionFailed, HarnessError):  # HarnessError: OCR's models missing or damaged, not the file
        raise
    except ImportError:
        raise ConversionFailed("needs_documents_extra") from None
    except Exception:  # a library's own error on a damaged file: whatever it is, the file is corrupt
        raise ConversionFailed("corrupt") from None
    text = _CONTROL.sub("", converted.text).strip()
    if not text:
        raise ConversionFailed("no_text")
    title = " ".join((converted.title or "").split()) or None
    if title and _PLACEHOLDER_TITLE.match(title):
        title = None
    author = " ".join((converted.author or "").split()) or None
    if author and _PLACEHOLDER_AUTHOR.match(author):
        author = None
    return Converted(title, text + "\n", author, _date(converted.created), _date(converted.updated),
                     converted.metadata)


def _converter(content_type: str) -> Converter:
    """The function converting ``content_type``: here, or in the module named (imported when needed)."""
    name = _CONVERTERS.get(content_type)
    if name is None:
        raise ValueError(f"no converter for {content_type}")
    if callable(name):
        return name
    module, function = name.split(":")
    converter: Converter = getattr(importlib.import_module(f"{__package__}.{module}"), function)
    return converter


def _date(value: object) -> dt.datetime | None:
    """A metadata date as a datetime, or None (a format's field may hold anything)."""
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    return None


# Authors that name nothing: what libraries that write Office files put there by default.
_PLACEHOLDER_AUTHOR = re.compile(r"(?i)^(openpyxl|python-docx|python-pptx|unknown|author|user|administrator)$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff\ufffe\uffff]")
_SPACE = re.compile(r"\s+")
# Titles that name nothing: what word processors write into a PDF's /Title by default.
_PLACEHOLDER_TITLE = re.compile(
    r"(?i)^(untitled(-\d+)?|microsoft \w+ - .*|[^\s/\\]+\.(docx?|pdf|pptx?|xlsx?|odt|rtf|txt|tex|dvi|indd))$")


# -- PDF (pypdfium2) ------------------------------------------------------------------------------

MAX_BOOKMARKS = 5000
_PDFIUM = threading.Lock()  # PDFium is not thread-safe; one document at a time per process


def _pdf(raw: bytes, options: ConvertOptions) -> Converted:
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    with _PDFIUM:
        try:
            doc = pdfium.PdfDocument(raw)
        except pdfium.PdfiumError as exc:
            locked = getattr(exc, "err_code", None) in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY)
            raise ConversionFailed("encrypted" if locked else "corrupt") from None
    try:
        with _PDFIUM:
            info = doc.get_metadata_dict()
            headings = _pdf_bookmarks(doc)
            texts, scanned = _pdf_text_layer(doc, pdfium_c.FPDF_PAGEOBJ_IMAGE)
        skipped = {}
        if scanned and options.ocr:
            from context_harness.formats import ocr

            pages_read = ocr.pdf_pages(doc, scanned, _PDFIUM, options.ocr_page_seconds, pdfium_c.FPDF_PAGEOBJ_IMAGE)
            for index, page in pages_read.items():
                texts[index] = page.text
                if page.skipped:
                    skipped[str(index + 1)] = page.skipped
        elif scanned:
            skipped = {str(index + 1): "needs_ocr" for index in scanned}
    finally:
        with _PDFIUM:
            doc.close()
    pages = []
    for i, text in enumerate(texts):
        if text:
            pages.extend(headings.get(i, []))
            pages.append(text)
    if not pages and skipped:
        raise ConversionFailed(next(iter(skipped.values())))
    metadata: dict[str, Any] = {"ocr_pages": len(scanned)} if scanned and options.ocr else {}
    if skipped:
        metadata["pages_skipped"] = skipped
    return Converted(info.get("Title") or None, "\n\n".join(pages), info.get("Author") or None,
                     pdf_date(info.get("CreationDate")), pdf_date(info.get("ModDate")), metadata)


MAX_PAGE_OBJECTS = 10_000  # objects looked at for a picture on a page without text


def _pdf_text_layer(doc: Any, image_type: int) -> tuple[list[str], list[int]]:
    """Each page's text layer, and the pages (0-based) without one that show a picture: scans, for OCR."""
    texts, scanned = [], []
    for i in range(len(doc)):
        page = doc[i]
        textpage = page.get_textpage()
        text = textpage.get_text_bounded().replace("\r\n", "\n").replace("\r", "\n").strip()
        textpage.close()
        if not text and any(obj.type == image_type for obj in itertools.islice(page.get_objects(), MAX_PAGE_OBJECTS)):
            scanned.append(i)
        page.close()
        texts.append(text)
    return texts, scanned


_PDF_DATE = re.compile(r"D:(\d{4})(\d\d)?(\d\d)?(\d\d)?(\d\d)?(\d\d)?(?:([Zz+-])(\d\d)?'?(\d\d)?)?")


def pdf_date(value: str | None) -> dt.datetime | None:
    """A PDF date string (``D:20250131120000+01'00'``) as a datetime, or None when it is not one."""
    match = _PDF_DATE.match(value or "")
    if not match:
        return None
    year, month, day, hour, minute, second, sign, off_h, off_m = match.groups()
    try:
        zone = dt.UTC
        if sign in ("+", "-") and off_h:
            offset = dt.timedelta(hours=int(off_h), minutes=int(off_m or 0))
            zone = dt.timezone(offset if sign == "+" else -offset)  # ValueError past 24 hours
        return dt.datetime(int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
                           int(second or 0), tzinfo=zone)
    except ValueError:
        return None


def _pdf_bookmarks(doc: Any) -> dict[int, list[str]]:
    """The outline (bookmarks) as ``#`` headings placed before the page each one points to: a
    page-granular heading path (a section starting mid-page is placed at its page's top)."""
    headings: dict[int, list[str]] = {}
    for count, bookmark in enumerate(doc.get_toc(max_depth=6)):
        if count >= MAX_BOOKMARKS:
            break
        dest = bookmark.get_dest()
        text = " ".join((bookmark.get_title() or "").split())
        page = dest.get_index() if dest is not None else None
        if text and page is not None:
            headings.setdefault(page, []).append("#" * (bookmark.level + 1) + " " + text)
    return headings


# -- zip-based formats: DOCX, PPTX, XLSX, ODS, ODT, EPUB -------------------------------------------

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a password-protected Office file is an OLE container
# DOCX, PPTX, XLSX, EPUB and the OpenDocument formats are zips: what their parts unpack to, not their
# size, is what parsing holds (a 180 kB DOCX whose XML unpacked to 50 MB took 660 MB and 8 s). Their
# parts may unpack to at most this plus twice the file's size (pictures hardly compress); more is a
# zip bomb, skipped as ``too_large`` before any library parses it.
ZIP_MAX_UNPACKED = 32 << 20
DOCX_MAX_UNPACKED = ZIP_MAX_UNPACKED


def check_zip(raw: bytes) -> None:
    """Raise ``ConversionFailed``: ``encrypted`` for a password-protected Office file (an OLE
    container), ``too_large`` for a zip that unpacks far past its size (see ``ZIP_MAX_UNPACKED``)."""
    if raw.startswith(_OLE_MAGIC):
        raise ConversionFailed("encrypted" if "EncryptedPackage".encode("utf-16-le") in raw else "corrupt")
    if _unpacked_size(raw) > ZIP_MAX_UNPACKED + 2 * len(raw):
        raise ConversionFailed("too_large")


def _unpacked_size(raw: bytes) -> int:
    """The bytes a zip's members unpack to, as its directory declares them (reading never yields more:
    ``zipfile`` stops at the declared size and fails the CRC); 0 for a damaged zip (``corrupt`` later)."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        return 0


# -- DOCX (python-docx) ---------------------------------------------------------------------------

def _docx(raw: bytes, options: ConvertOptions) -> Converted:
    check_zip(raw)
    import docx
    from docx.oxml.ns import qn

    doc = docx.Document(io.BytesIO(raw))
    styles = {s.style_id: s.name or "" for s in doc.styles}
    walker = _DocxWalker(styles, qn)
    walker.container(doc.element.body)
    props = doc.core_properties
    return Converted(props.title or walker.first_heading, "\n\n".join(walker.blocks), props.author, props.created,
                     props.modified)


class _DocxWalker:
    """Paragraphs in order; headings as ``#`` lines, list items as ``-``, table rows as ``| a | b |``."""

    def __init__(self, styles: dict[str, str], qn: Any) -> None:
        self.styles = styles
        self.blocks: list[str] = []
        self.first_heading: str | None = None
        self.P, self.TBL, self.SDT, self.TR, self.TC = (qn(t) for t in ("w:p", "w:tbl", "w:sdt", "w:tr", "w:tc"))
        self.SDT_CONTENT, self.T, self.TAB, self.BR, self.CR = (
            qn(t) for t in ("w:sdtContent", "w:t", "w:tab", "w:br", "w:cr"))
        self.P_STYLE, self.NUM = qn("w:pStyle"), qn("w:numPr")
        self.VAL = qn("w:val")

    def container(self, element: Any) -> None:
        for child in element.iterchildren():
            if child.tag == self.P:
                self.paragraph(child)
            elif child.tag == self.TBL:
                self.table(child)
            elif child.tag == self.SDT:
                for content in child.iterchildren(self.SDT_CONTENT):
                    self.container(content)

    def text(self, p: Any) -> str:
        parts = []
        for node in p.iter(self.T, self.TAB, self.BR, self.CR):
            parts.append(node.text or "" if node.tag == self.T else "\t" if node.tag == self.TAB else "\n")
        return "".join(parts).strip()

    def paragraph(self, p: Any) -> None:
        text = self.text(p)
        if not text:
            return
        style_el = p.find(f".//{self.P_STYLE}")
        style = self.styles.get(style_el.get(self.VAL), "") if style_el is not None else ""
        level = 1 if style == "Title" else int(style[8:]) if re.fullmatch(r"Heading [1-9]", style) else 0
        if level:
            line = " ".join(text.split())
            self.first_heading = self.first_heading or line
            self.blocks.append("#" * min(level, 6) + " " + line)
        elif style.startswith("List") or p.find(f".//{self.NUM}") is not None:
            self.blocks.append("- " + text)
        else:
            self.blocks.append(text)

    def table(self, tbl: Any) -> None:
        rows = []
        for tr in tbl.iter(self.TR):
            cells = [" ".join(" ".join(self.text(p) for p in tc.iter(self.P)).split())
                     for tc in tr.iterchildren(self.TC)]
            if any(cells):
                rows.append("| " + " | ".join(cells) + " |")
        if rows:
            self.blocks.append("\n".join(rows))


# -- HTML (lxml) ----------------------------------------------------------------------------------

_HTML_SKIPPED = frozenset({"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object",
                           "canvas", "select", "button"})
_HTML_BLOCKS = frozenset({"p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "ul", "ol",
                          "li", "table", "thead", "tbody", "tfoot", "tr", "blockquote", "br", "hr", "dl", "dt",
                          "dd", "figure", "figcaption", "form", "address", "details", "summary", "caption",
                          "body", "html"})
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}


def _html(raw: bytes, options: ConvertOptions) -> Converted:
    return html_text(raw)


def html_text(raw: bytes, base_level: int = 0) -> Converted:
    """An HTML page's text, headings ``base_level`` deeper (an EPUB chapter's, an HTML e-mail's)."""
    import lxml.etree
    import lxml.html

    try:
        raw.decode("utf-8")
        parser = lxml.html.HTMLParser(encoding="utf-8")
    except UnicodeDecodeError:
        parser = lxml.html.HTMLParser()  # the document's own <meta charset>, else Latin-1
    try:
        root = lxml.html.document_fromstring(raw.removeprefix(b"\xef\xbb\xbf"), parser=parser)
    except lxml.etree.ParserError:  # "Document is empty"
        raise ConversionFailed("no_text") from None
    title_el = root.find(".//title")
    title = _SPACE.sub(" ", title_el.text_content()).strip() if title_el is not None else ""
    body = root.find("body")
    walker = _HtmlWalker(base_level)
    walker.walk(body if body is not None else root, lxml.etree.iterwalk)
    return Converted(title or walker.first_heading, "\n\n".join(walker.blocks))


class _HtmlWalker:
    """Text in document order: blocks become paragraphs, headings ``#`` lines, ``<pre>`` fenced code."""

    def __init__(self, base_level: int = 0) -> None:
        self.blocks: list[str] = []
        self.first_heading: str | None = None
        self.base_level = base_level
        self._line: list[str] = []

    def flush(self) -> None:
        text = _SPACE.sub(" ", "".join(self._line)).strip()
        self._line.clear()
        if text:
            self.blocks.append(text)

    def walk(self, root: Any, iterwalk: Any) -> None:
        events = iterwalk(root, events=("start", "end"))
        for event, el in events:
            tag = el.tag.lower() if isinstance(el.tag, str) else None  # None: a comment or instruction
            if event == "start":
                if tag is None or tag in _HTML_SKIPPED or tag in _HTML_HEADINGS or tag == "pre":
                    events.skip_subtree()
                    self.whole(tag, el)
                    continue
                if tag in _HTML_BLOCKS:
                    self.flush()
                if tag == "li":
                    self._line.append("- ")
                if el.text:
                    self._line.append(el.text)
            else:
                if tag in _HTML_BLOCKS:
                    self.flush()
                elif tag in ("td", "th"):
                    self._line.append(" ")
                if el.tail and el is not root:
                    self._line.append(el.tail)
        self.flush()

    def whole(self, tag: str | None, el: Any) -> None:
        """An element taken in one piece (its subtree is not walked): a heading, code, or nothing."""
        if tag in _HTML_HEADINGS:
            self.flush()
            text = _SPACE.sub(" ", el.text_content()).strip()
            if text:
                self.first_heading = self.first_heading or text
                self.blocks.append("#" * min(6, _HTML_HEADINGS[tag] + self.base_level) + " " + text)
        elif tag == "pre":
            self.flush()
            code = el.text_content().strip("\n")
            if code.strip():
                self.blocks.append("```\n" + code.replace("```", "`\u200b``") + "\n```")


# -- pictures (OCR) ---------------------------------------------------------------------------------

def _image(raw: bytes, options: ConvertOptions) -> Converted:
    """An image file read by OCR (``formats/ocr.py``); ``needs_ocr`` with ``[formats] ocr`` off. A frame
    past the bounds is skipped and named in ``pages_skipped``; the others are read."""
    if not options.ocr:
        raise ConversionFailed("needs_ocr")
    from context_harness.formats import ocr

    try:
        texts, skipped, frames = ocr.image_pages(raw, options.ocr_page_seconds)
    except ocr.PageSkipped as skip:
        raise ConversionFailed(skip.reason) from None
    if not texts and skipped:
        raise ConversionFailed(next(iter(skipped.values())))
    return Converted(None, "\n\n".join(texts),
                     metadata={"ocr_pages": frames, **({"pages_skipped": skipped} if skipped else {})})


_CONVERTERS: dict[str, Converter | str] = {
    "application/pdf": _pdf,
    FORMATS[".docx"].content_type: _docx,
    "text/html": _html,
    FORMATS[".pptx"].content_type: "office:pptx",
    FORMATS[".odt"].content_type: "office:odt",
    FORMATS[".xlsx"].content_type: "sheets:xlsx",
    FORMATS[".ods"].content_type: "sheets:ods",
    "text/csv": "sheets:csv_text",
    "application/epub+zip": "ebooks:epub",
    FORMATS[".ipynb"].content_type: "notebooks:notebook",
    "message/rfc822": "mail:eml",
    "application/mbox": "mail:mbox",
    "image/png": _image,
    "image/jpeg": _image,
    "image/tiff": _image,
}
