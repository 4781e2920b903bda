"""reStructuredText read as structure with docutils: the document's title and its sections.

``read_rest(text)`` parses the text with docutils and returns the title (the over-and-underlined
document title docutils promotes, else the first section's title) and the body: the reST source
with each section title rewritten as a Markdown ATX heading (``#`` for the document title, moved to
the top above the labels and comments docutils allows before it, one more ``#`` per level below it,
at most six) and its adornment lines dropped, every other line kept as written. The chunker splits
and labels chunks by ``#`` headings, so reST sections become chunk boundaries and the ``heading`` of
search results through the one code path Markdown takes. Lines of the source that the chunker would
take for a heading or a code fence (``# x``, ```` ``` ````, ``~~~``) are indented so they stay text.
Links (``:doc:``, ``:ref:``, toctree entries, hyperlink references and the labels ``.. _label:``)
are read from the body by ``common/links.py``.

Parsing is bounded and silent: docutils reports nothing (``report_level`` and ``halt_level`` 5, a
warning stream that discards), reads no other file (``file_insertion_enabled`` and ``raw_enabled``
off: ``.. include::`` and ``.. raw:: :file:`` read nothing) and fetches no URL; texts over
``MAX_PARSED`` characters or with tables past ``MAX_TABLE_COLUMNS``/``MAX_TABLE_CELLS`` are not
parsed, and a parse stops at its next piece of text once past ``PARSE_SECONDS``. Text docutils
cannot parse (a ``RecursionError`` from deep nesting, any exception of the parser) or stopped falls
back to plain text: ``None`` is returned and the caller keeps the file as it is.

Titles in Chinese, Japanese or Korean are underlined as their writers count them: one ``=`` a
character, where docutils wants one a column (two for a wide character) and reads a title of two
characters underlined ``==`` as a paragraph. Before the parse (only), an adornment at least as long
as its title's characters is widened to the title's columns (``_widened``); the lines keep their
places, so the body is rewritten from the source as written.
"""

from __future__ import annotations

import io
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

MAX_PARSED = 512 * 1024  # characters of reST parsed (the largest file of CPython's docs is ~0.3 MB)
PARSE_SECONDS = 5.0  # a parse still running after this stops at its next piece of text, and the file stays text
MAX_TABLE_COLUMNS = 64  # tables wider than this, or with more cells in all, are not parsed: docutils' table
MAX_TABLE_CELLS = 20_000  # parsers take a table whole and grow faster than its size (a 64x1000 one took 13 s)
SPHINX_ROLES = (  # read as their text (a role docutils does not know costs it two messages each time)
    "doc", "ref", "any", "term", "keyword", "option", "envvar", "token", "numref", "download", "abbr", "command",
    "dfn", "file", "guilabel", "kbd", "mailheader", "makevar", "manpage", "menuselection", "mimetype",
    "newsgroup", "program", "regexp", "samp", "pep", "rfc", "func", "meth", "class", "mod", "data", "attr",
    "exc", "obj", "const", "attr", "type", "macro", "member", "var", "expr", "texpr", "enum", "enumerator",
    "struct", "union", "cdata", "cfunc", "cmacro", "ctype", "cmember", "opcode", "pdbcmd", "source", "issue",
    "gh", "py:func", "py:meth", "py:class", "py:mod", "py:data", "py:attr", "py:exc", "py:obj", "py:const",
    "c:func", "c:macro", "c:type", "c:member", "c:data", "c:var", "c:expr", "cpp:func", "cpp:class",
    "cpp:type", "cpp:member", "std:ref", "std:doc", "std:term", "js:func", "js:class", "math", "eq")
SUFFIXES = (".rst", ".rst.txt", ".rest")
CONTENT_TYPE = "text/x-rst"
_SETTINGS = {
    "report_level": 5, "halt_level": 5, "file_insertion_enabled": False, "raw_enabled": False,
    "_disable_config": True, "input_encoding": "unicode", "output_encoding": "unicode", "traceback": False,
    "embed_stylesheet": False, "character_level_inline_markup": False, "line_length_limit": 100_000,
    "pep_references": False, "rfc_references": False, "smart_quotes": False, "sectsubtitle_xform": False,
}
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")
_ROLE = re.compile(r":[\w.+:-]+:`([^`]*)`")
_NAMED = re.compile(r"^(.*?)\s*<[^<>]+>$", re.DOTALL)
_STRAY = re.compile(r"^(?:#{1,6}(?:[ \t]|$)|[ \t]{0,3}(?:`{3,}|~{3,}))")
_GRID_BORDER = re.compile(r"\+(?:[-=]+\+)+")
_SIMPLE_BORDER = re.compile(r"=+(?:[ \t]+=+)+")
_REGISTERED: list[bool] = []


@dataclass(frozen=True)
class Structured:
    title: str | None
    body: str


def is_rest(name: str) -> bool:
    """Whether the file ``name`` is reStructuredText (``.rst``, ``.rest`` or a site's ``.rst.txt``)."""
    return name.lower().endswith(SUFFIXES)


def read_rest(text: str) -> Structured | None:
    """The title and the body with Markdown headings, or None when the text is not parsed (over
    ``MAX_PARSED``, or docutils failed on it): the caller keeps it as plain text."""
    if len(text) > MAX_PARSED:
        log.info("reStructuredText of %d characters not parsed (over %d): kept as text", len(text), MAX_PARSED)
        return None
    if "+-" in text or "+=" in text or "= " in text:
        widest, cells = _tables(text)
        if widest > MAX_TABLE_COLUMNS or cells > MAX_TABLE_CELLS:
            log.info("reStructuredText with tables of %d columns, %d cells not parsed (over %d, %d): kept as text",
                     widest, cells, MAX_TABLE_COLUMNS, MAX_TABLE_CELLS)
            return None
    try:
        document = _parse(_widened(text) if not text.isascii() else text)
    except TooSlow:
        log.info("reStructuredText took over %.0f s to parse: kept as text", PARSE_SECONDS)
        return None
    except RecursionError:
        log.info("reStructuredText nested too deeply to parse: kept as text")
        return None
    except Exception as exc:  # any failure of the parser on hostile input leaves plain text
        log.info("reStructuredText not parsed (%s): kept as text", type(exc).__name__)
        return None
    return _structure(text, document)


class TooSlow(Exception):
    """A parse past ``PARSE_SECONDS``."""


def _parse(text: str) -> Any:
    from docutils import frontend, utils
    from docutils.parsers.rst import Parser, states

    # docutils' inline parser, which every paragraph, title and table cell passes through, stops the
    # parse once past the deadline (a check per piece of text costs nothing measurable).
    inliner = states.Inliner()
    inline = inliner.parse
    deadline = time.monotonic() + PARSE_SECONDS

    def parse_inline(*args: Any, **kwargs: Any) -> Any:
        if time.monotonic() > deadline:
            raise TooSlow
        return inline(*args, **kwargs)

    inliner.parse = parse_inline
    _register_roles()
    parser = Parser(inliner=inliner)
    settings = frontend.get_default_settings(parser)
    for key, value in _SETTINGS.items():
        setattr(settings, key, value)
    settings.warning_stream = io.StringIO()  # never stderr, never stdout
    document = utils.new_document("<rst>", settings)
    document.reporter.stream = False  # report nothing anywhere
    parser.parse(text, document)
    from docutils.transforms.frontmatter import DocTitle

    document.transformer.add_transform(DocTitle)
    document.transformer.apply_transforms()
    return document


def _widened(text: str) -> str:
    """``text`` with each title's under- and overline that is as long as the title's characters but
    shorter than its columns (a title of wide characters) lengthened to its columns; nothing else
    changes, lines and their order included."""
    from docutils.utils import column_width

    lines = text.split("\n")
    for i in range(1, len(lines)):
        adornment = _ADORNMENT.match(lines[i].rstrip("\r"))
        title = lines[i - 1].strip()
        if adornment is None or not title or title.isascii() or _ADORNMENT.match(title):
            continue
        mark, length, width = adornment.group(1), len(lines[i].rstrip()), column_width(title)
        if len(title) <= length < width:
            end = "\r" if lines[i].endswith("\r") else ""
            lines[i] = mark * width + end
            over = lines[i - 2].rstrip() if i >= 2 else ""
            if over and set(over) == {mark} and len(over) == length:
                lines[i - 2] = mark * width + end
    return "\n".join(lines)


def _tables(text: str) -> tuple[int, int]:
    """The most columns of a table and about how many cells the text's tables hold in all (grid
    tables' borders and rows; simple tables' rows between their borders)."""
    widest = cells = 0
    simple = 0  # the columns of the simple table being read, 0 outside one
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if _GRID_BORDER.fullmatch(stripped):
            columns = stripped.count("+") - 1
        elif stripped[0] == "|" and stripped[-1] in "|+":
            columns = stripped.count("|") - 1
        elif _SIMPLE_BORDER.fullmatch(stripped):
            columns = simple = len(stripped.split())
            if i + 1 >= len(lines) or not lines[i + 1].strip():
                simple = 0  # a border followed by a blank line ends the table
        else:
            columns = simple
        widest = max(widest, columns)
        cells += columns
    return widest, cells


def _register_roles() -> None:
    """Sphinx's roles as docutils roles that keep their text (registered once, in docutils' registry)."""
    if _REGISTERED:
        return
    from docutils import nodes
    from docutils.parsers.rst import roles

    def text_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                  options: Any = None, content: Any = None) -> tuple[list[Any], list[Any]]:
        return [nodes.literal(rawtext, _named(text))], []

    for name in SPHINX_ROLES:
        if name not in ("pep", "rfc", "math"):  # docutils' own
            roles.register_local_role(name, text_role)
    _REGISTERED.append(True)


def _structure(text: str, document: Any) -> Structured:
    from docutils import nodes

    lines = text.splitlines()
    replace: dict[int, str | None] = {}  # line index -> its new text (None: dropped)

    def heading(title: Any, level: int) -> str | None:
        if title.line is None:
            return None
        under = title.line - 1  # docutils gives a title the line of its underline
        at = under - 1
        if not (0 < under < len(lines) and _ADORNMENT.match(lines[under]) and lines[at].strip()):
            return None
        name = _plain(title) or lines[at].strip()
        replace[at] = "#" * min(level, 6) + " " + name
        replace[under] = None
        if at > 0 and _ADORNMENT.match(lines[at - 1]) and lines[at - 1][0] == lines[under][0]:
            replace[at - 1] = None
        return name

    title = None
    top = document.next_node(nodes.title) if document.get("title") else None
    if top is not None and top.parent is document:
        title = heading(top, 1)
    base = 2 if title else 1
    first = None
    for section in document.findall(nodes.section):
        depth = sum(1 for parent in _parents(section) if isinstance(parent, nodes.section))
        if section.children and isinstance(section[0], nodes.title):
            name = heading(section[0], base + depth)
            first = first or name
    out: list[str] = []
    if title:  # the document title leads the body: what precedes it (labels, comments) is under it
        at = next(i for i, text in replace.items() if text == "# " + title)
        replace[at] = None
        out += ["# " + title, ""]
    for i, line in enumerate(lines):
        if i in replace:
            new = replace[i]
            if new is not None:
                out.append(new)
        else:
            out.append("    " + line if _STRAY.match(line) else line)
    body = "\n".join(out) + ("\n" if text.endswith(("\n", "\r")) else "")
    return Structured(title or first, body)


def _parents(node: Any) -> list[Any]:
    found = []
    node = node.parent
    while node is not None:
        found.append(node)
        node = node.parent
    return found


def _plain(title: Any) -> str:
    """A title's text as read: an unknown role (``:mod:`asyncio```, a Sphinx role docutils does not
    know) as its text, a ``text <target>`` pair as its text."""
    from docutils import nodes

    parts = []
    for node in title.findall(lambda n: isinstance(n, (nodes.Text, nodes.problematic))):
        if isinstance(node, nodes.problematic):
            parts.append(_ROLE.sub(lambda m: _named(m.group(1)), node.astext()))
        elif not any(isinstance(p, nodes.problematic) for p in _parents(node)):
            parts.append(str(node))
    return " ".join("".join(parts).split())


def _named(text: str) -> str:
    match = _NAMED.match(text)
    name = match.group(1) if match and match.group(1) else text
    return name.lstrip("~!")
