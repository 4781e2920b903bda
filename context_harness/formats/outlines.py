"""Text formats with their own headings, read as title and sections: reStructuredText (by docutils,
``rest.py``), AsciiDoc and Org (their heading lines only).

``structured(name, text)`` gives the title and a body whose headings are Markdown ATX headings, the
form the chunker splits and labels chunks by, or None for a file of no such format (or one not
parsed: it stays plain text).

AsciiDoc and Org are read by a small, careful scan of heading lines, nothing else: AsciiDoc's
``= Title`` (the document title) and ``== Section`` .. ``====== Section`` outside delimited blocks
(``----``, ``....``, ``====``, ``****``, ``++++``, ``____``, ``////``, ```` ``` ````); Org's
``#+TITLE:`` and ``* Heading`` (one ``*`` per level, TODO keywords and tags kept as written) outside
``#+BEGIN_..``/``#+END_..`` blocks. Every other line is kept as written; one that the chunker would
take for a heading or fence (an Org ``# comment``) is indented so it stays text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from context_harness.formats.rest import CONTENT_TYPE as REST_TYPE
from context_harness.formats.rest import Structured, is_rest, read_rest

ASCIIDOC_SUFFIXES = (".adoc", ".asciidoc", ".asc")
ORG_SUFFIXES = (".org",)
READER_VERSION = 1  # part of such a file's fingerprint (filesystem, git): a better reading re-reads it
CONTENT_TYPES = {"rest": REST_TYPE, "asciidoc": "text/asciidoc", "org": "text/org"}

_ADOC_HEADING = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*$")
_ADOC_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|\+{4,}|_{4,}|/{4,}|`{3,})[ \t]*$")
_ORG_TITLE = re.compile(r"^#\+title:[ \t]*(.*?)[ \t]*$", re.IGNORECASE)
_ORG_HEADING = re.compile(r"^(\*+)[ \t]+(.*?)[ \t]*$")
_ORG_BEGIN = re.compile(r"^[ \t]*#\+begin_(\w+)", re.IGNORECASE)
_ORG_END = re.compile(r"^[ \t]*#\+end_(\w+)", re.IGNORECASE)
_STRAY = re.compile(r"^(?:#{1,6}(?:[ \t]|$)|[ \t]{0,3}(?:`{3,}|~{3,}))")


def kind_of(name: str) -> str | None:
    """``rest``, ``asciidoc``, ``org`` or None, by the file name's ending (any case)."""
    lower = name.lower()
    if is_rest(lower):
        return "rest"
    if lower.endswith(ASCIIDOC_SUFFIXES):
        return "asciidoc"
    if lower.endswith(ORG_SUFFIXES):
        return "org"
    return None


def structured(name: str, text: str) -> Structured | None:
    """The title and Markdown-headed body of the file ``name`` (see the module), or None."""
    reader: Callable[[str], Structured | None] | None = {
        "rest": read_rest, "asciidoc": read_asciidoc, "org": read_org}.get(kind_of(name) or "")
    return reader(text) if reader else None


def read_asciidoc(text: str) -> Structured:
    title = first = None
    block: str | None = None
    out = []
    for line in text.splitlines():
        delimiter = _ADOC_DELIMITER.match(line)
        if delimiter:
            marker = delimiter.group(1)
            block = None if block == marker else (block or marker)
            out.append(line)
            continue
        heading = None if block else _ADOC_HEADING.match(line)
        if heading:
            level, name = len(heading.group(1)), heading.group(2)
            if level == 1 and title is None and first is None:
                title = name
            first = first or name
            out.append("#" * level + " " + name)
            continue
        out.append("    " + line if _STRAY.match(line) and not block else line)
    return Structured(title or first, _joined(out, text))


def read_org(text: str) -> Structured:
    title = first = None
    block: str | None = None
    out = []
    for line in text.splitlines():
        if block:
            end = _ORG_END.match(line)
            block = None if end and end.group(1).lower() == block else block
            out.append("    " + line if _STRAY.match(line) else line)
            continue
        begin = _ORG_BEGIN.match(line)
        if begin:
            block = begin.group(1).lower()
            out.append(line)
            continue
        keyword = _ORG_TITLE.match(line)
        if keyword and title is None and keyword.group(1):
            title = keyword.group(1)
        heading = _ORG_HEADING.match(line)
        if heading and heading.group(2):
            name = heading.group(2)
            first = first or name
            out.append("#" * min(len(heading.group(1)), 6) + " " + name)
            continue
        out.append("    " + line if _STRAY.match(line) else line)
    return Structured(title or first, _joined(out, text))


def _joined(lines: list[str], text: str) -> str:
    return "\n".join(lines) + ("\n" if text.endswith(("\n", "\r")) else "")
