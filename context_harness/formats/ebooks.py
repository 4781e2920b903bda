"""E-books: EPUB (``ebooklib``) as text, a ``#`` section per chapter in reading (spine) order.

A chapter is headed by its title in the book's table of contents (its headings one level deeper),
else by its own headings; chapters without text (a cover picture) are left out. The book's title,
author (``dc:creator``) and date (``dc:date``) come from its package metadata. An EPUB is a zip:
``check_zip`` bounds it before ``ebooklib`` reads it (``ebooklib`` holds every part in memory).
"""

from __future__ import annotations

import datetime as dt
import io
import posixpath
import warnings
from typing import Any

from context_harness.formats.documents import ConversionFailed, Converted, ConvertOptions, check_zip, html_text


def epub(raw: bytes, options: ConvertOptions) -> Converted:
    check_zip(raw)
    import ebooklib
    from ebooklib import epub as epub_lib

    with warnings.catch_warnings():  # ebooklib warns of options whose defaults will change
        warnings.simplefilter("ignore")
        book = epub_lib.read_epub(io.BytesIO(raw), options={"ignore_ncx": False})
    titles = _toc_titles(book.toc)
    blocks: list[str] = []
    for idref, *_ in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or _is_nav(item, epub_lib):
            continue  # pictures, styles, and the table of contents itself
        blocks += _chapter(item.get_content(), titles.get(posixpath.normpath(item.get_name())))
    return Converted(_meta(book, "title"), "\n\n".join(blocks), _meta(book, "creator"), _date(_meta(book, "date")))


def _is_nav(item: Any, epub_lib: Any) -> bool:
    return isinstance(item, epub_lib.EpubNav) or "nav" in (getattr(item, "properties", None) or [])


def _chapter(content: bytes, title: str | None) -> list[str]:
    try:
        text = html_text(content, base_level=1 if title else 0).text.strip()
    except ConversionFailed:
        return []
    if not text:
        return []
    if not title:
        return [text]
    first, _, rest = text.partition("\n\n")
    if first.lstrip("#").strip() == title and first.startswith("#"):
        text = rest  # the chapter's own heading repeats its title
    return [f"# {title}"] + ([text] if text.strip() else [])


def _toc_titles(toc: Any, depth: int = 0) -> dict[str, str]:
    """The table of contents' title of each chapter file (its first entry: not a section within it)."""
    titles: dict[str, str] = {}
    if depth > 16:
        return titles
    for entry in toc:
        if isinstance(entry, tuple | list) and len(entry) == 2:
            section, children = entry
            _add_title(titles, section)
            for name, title in _toc_titles(children, depth + 1).items():
                titles.setdefault(name, title)
        else:
            _add_title(titles, entry)
    return titles


def _add_title(titles: dict[str, str], entry: Any) -> None:
    href, title = getattr(entry, "href", None), " ".join(str(getattr(entry, "title", "") or "").split())
    if href and title:
        titles.setdefault(posixpath.normpath(str(href).split("#", 1)[0]), title)


def _meta(book: Any, name: str) -> str | None:
    values = book.get_metadata("DC", name)
    return " ".join(str(values[0][0]).split()) or None if values else None


def _date(value: str | None) -> dt.datetime | None:
    """``dc:date``: a year, a date or a date-time."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        return dt.datetime.fromisoformat(text if len(text) != 4 else text + "-01-01")
    except ValueError:
        return None
