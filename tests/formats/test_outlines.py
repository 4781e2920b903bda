"""reStructuredText (docutils), AsciiDoc and Org read as title and sections; reST links; reST parsing
bounded, silent and reading no other file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from context_harness.common.links import Link, extract_links, link_key
from context_harness.formats import outlines, rest
from context_harness.ingest.chunking import chunk_markdown

INTRO = textwrap.dedent("""\
    .. _tut-intro:

    *********************************
    An Informal Introduction
    *********************************

    In the following examples, input and output are told apart. See :ref:`tut-calc` and
    :doc:`../library/functions`.

    .. _tut-calc:

    Using Python as a Calculator
    ============================

    Let's try some simple Python commands.

    Numbers
    -------

    The interpreter acts as a simple calculator::

       >>> 2 + 2
       4

    Text
    ----

    Python can manipulate text, in :mod:`str` objects.

    First Steps Towards Programming
    ===============================

    Of course, we can use Python for more complicated tasks.
    """)


def test_rest_title_is_the_over_and_underlined_document_title() -> None:
    read = rest.read_rest(INTRO)
    assert read is not None
    assert read.title == "An Informal Introduction"  # not the file name, not the first underlined section


def test_rest_sections_become_markdown_headings_and_chunk_headings() -> None:
    read = rest.read_rest(INTRO)
    assert read is not None
    lines = read.body.splitlines()
    assert "# An Informal Introduction" in lines
    assert "## Using Python as a Calculator" in lines
    assert "### Numbers" in lines and "### Text" in lines
    assert "## First Steps Towards Programming" in lines
    assert not any(set(line) <= {"*", "=", "-"} and line for line in lines)  # adornments dropped
    assert ".. _tut-calc:" in lines and "   >>> 2 + 2" in lines  # everything else kept as written
    chunks = chunk_markdown(read.body, max_tokens=30)
    paths = {" > ".join(c.heading_path) for c in chunks}
    assert "An Informal Introduction > Using Python as a Calculator > Numbers" in paths
    assert "An Informal Introduction > First Steps Towards Programming" in paths


def test_rest_without_a_document_title_takes_the_first_section_and_roles_read_as_text() -> None:
    read = rest.read_rest(":mod:`asyncio` --- Asynchronous I/O\n===================================\n\n"
                          "Text.\n\nRunners\n=======\n\nMore.\n")
    assert read is not None
    assert read.title == "asyncio --- Asynchronous I/O"
    assert read.body.startswith("# asyncio --- Asynchronous I/O\n")


def test_rest_lines_the_chunker_would_misread_stay_text() -> None:
    read = rest.read_rest("Title\n=====\n\nA line.\n\n.. code::\n\n   x\n\n``` stray\n\n~~~~~\n\nend\n")
    assert read is not None
    chunks = chunk_markdown(read.body, max_tokens=200)
    assert [c.heading_path for c in chunks] == [["Title"]]
    assert "end" in chunks[0].text


WIDE_TITLES = [
    ("==\n概要\n==\n\n正文。\n\n第一节\n---\n\n内容。\n", "概要", ["# 概要", "## 第一节"]),  # one mark a character
    ("はじめに\n========\n\n本文です。\n\n手順\n----\n\n内容。\n", "はじめに", ["# はじめに", "## 手順"]),  # one a column
    ("개요\r\n==\r\n\r\n본문.\r\n", "개요", ["# 개요"]),
    ("مقدمة\n=====\n\nنص.\n\nالخطوات\n-------\n\nنص.\n", "مقدمة", ["# مقدمة", "## الخطوات"]),
    ("ภาษาไทย\n=======\n\nเนื้อหา\n\nบทนำ\n----\n\nเนื้อหา\n", "ภาษาไทย", ["# ภาษาไทย", "## บทนำ"]),
]


@pytest.mark.parametrize(("text", "title", "headings"), WIDE_TITLES)
def test_rest_titles_in_any_script(text: str, title: str, headings: list[str]) -> None:
    """A title of wide characters underlined one mark a character (docutils counts columns, and read
    ``概要`` over ``==`` as a paragraph) is a title all the same; Arabic and Thai ones too."""
    read = rest.read_rest(text)
    assert read is not None and read.title == title
    assert [line.rstrip("\r") for line in read.body.splitlines() if line.startswith("#")] == headings
    assert not any(set(line.strip()) <= set("=-") and line.strip() for line in read.body.splitlines())
    assert [h.lstrip("# ") for h in headings] in [c.heading_path for c in chunk_markdown(read.body, 8)]


def test_markdown_asciidoc_and_org_titles_in_any_script() -> None:
    from context_harness.formats.markdown import first_heading

    assert first_heading("发布流程\n====\n\n正文。") == "发布流程"
    assert first_heading("# دليل الإصدار #\n") == "دليل الإصدار"
    assert first_heading("```\n# 不是\n```\n# ภาษาไทย\n") == "ภาษาไทย"
    assert outlines.structured("a.adoc", "= 发布流程\n\n== 第一节\n\n内容\n") == outlines.Structured(
        "发布流程", "# 发布流程\n\n## 第一节\n\n内容\n")
    assert outlines.structured("a.org", "#+TITLE: 発表\n* 第一節\n内容\n").title == "発表"


def test_include_and_raw_file_read_nothing(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRETVALUE\n")
    text = (f"Title\n=====\n\n.. include:: {secret}\n\n.. raw:: html\n   :file: {secret}\n\n"
            f".. csv-table::\n   :file: {secret}\n\n.. include:: /etc/passwd\n\nEnd.\n")
    read = rest.read_rest(text)
    assert read is not None and read.title == "Title"
    assert "TOPSECRETVALUE" not in read.body and "root:" not in read.body


def test_rest_parsing_prints_nothing() -> None:
    """Errors of every level (unknown roles and directives, bad tables, an include) go nowhere: not
    to stdout (the JSON-RPC wire in stdio mode), not to stderr."""
    hostile = ("Title\n=====\n\n:nosuch:`x` `unclosed\n\n.. nosuch::\n\n   body\n\n+---+\n| x\n\n"
               ".. include:: /etc/passwd\n\n.. _dup:\n\n.. _dup:\n\nSub\n--\n\nx\n")
    code = ("import sys; from context_harness.formats.rest import read_rest; "
            f"r = read_rest({hostile!r}); assert r is not None and r.title == 'Title', r")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


def _grid(columns: int, rows: int) -> str:
    border = "+" + "---+" * columns + "\n"
    return border + ("|" + "   |" * columns + "\n" + border) * rows


def _simple(columns: int, rows: int) -> str:
    border = "  ".join(["===="] * columns) + "\n"
    return border + ("  ".join(["abcd"] * columns) + "\n") * rows + border


HOSTILE = {
    "lists nested 650 deep": "".join("  " * i + "- x\n\n" for i in range(650)),
    "block quotes nested 1,000 deep": "".join(" " * i + "x\n\n" for i in range(1000)),
    "a 1,000-column grid table": _grid(1000, 10),
    "a 64 x 1,000 grid table": _grid(64, 1000),
    "a 16 x 5,500 simple table": _simple(16, 5500),
    "a simple table at the cell bound": _simple(64, 310),
    "one link name 8,000 times": "Title\n=====\n\n" + "Some `link <x>`_ words.\n\n- a\n- b\n\n" * 8000,
    "over the size bound": "Title\n=====\n\n" + "x" * rest.MAX_PARSED,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_rest_is_bounded_and_falls_back_to_text(name: str) -> None:
    """Each shape is refused before parsing (size, table width or cells), stops at the parse deadline
    or fails (nesting) within the bound; what is returned is text or None (the file stays as it is)."""
    text = HOSTILE[name][:rest.MAX_PARSED + 100]
    started = time.perf_counter()
    read = rest.read_rest(text)
    took = time.perf_counter() - started
    assert took < 5 * (rest.PARSE_SECONDS + 2), took  # measured at most 5.1 s (the deadline), 2 loaded cores
    assert read is None or isinstance(read.body, str)


def test_parsing_stops_at_the_deadline(monkeypatch) -> None:
    monkeypatch.setattr(rest, "PARSE_SECONDS", 0.0)
    assert rest.read_rest("Title\n=====\n\nText.\n") is None
    monkeypatch.undo()
    assert rest.read_rest("Title\n=====\n\nText.\n") is not None


def test_rest_txt_copies_and_kinds_by_name() -> None:
    assert outlines.kind_of("_sources/tutorial/intro.rst.txt") == "rest"
    assert outlines.kind_of("A.RST") == "rest"
    assert outlines.kind_of("notes.txt") is None
    assert outlines.kind_of("guide.adoc") == "asciidoc" and outlines.kind_of("plan.org") == "org"
    read = outlines.structured("_sources/tutorial/intro.rst.txt", INTRO)
    assert read is not None and read.title == "An Informal Introduction"


def test_asciidoc_title_and_sections() -> None:
    text = ("= User Guide\nAuthor Name\n:toc:\n\nIntro.\n\n== Install\n\nSteps.\n\n=== From source\n\n"
            "----\n== not a heading (in a listing block)\n----\n\n== Use\n\nMore.\n")
    read = outlines.read_asciidoc(text)
    assert read.title == "User Guide"
    assert "## Install" in read.body and "### From source" in read.body and "## Use" in read.body
    assert "== not a heading (in a listing block)" in read.body
    paths = [c.heading_path for c in chunk_markdown(read.body, max_tokens=8)]
    assert ["User Guide", "Install", "From source"] in paths and ["User Guide", "Use"] in paths
    assert outlines.read_asciidoc("== First Section\n\ntext\n").title == "First Section"


def test_org_title_and_sections() -> None:
    text = ("#+TITLE: Garden Plans\n#+AUTHOR: me\n\n# a comment, not a heading\n\n* Spring\n\nSow.\n\n"
            "** TODO Beans :veg:\n\n#+BEGIN_SRC sh\n* not a heading\n#+END_SRC\n\n*bold* is not a heading\n")
    read = outlines.read_org(text)
    assert read.title == "Garden Plans"
    assert "# Spring" in read.body.splitlines() and "## TODO Beans :veg:" in read.body.splitlines()
    assert "* not a heading" in read.body and "*bold* is not a heading" in read.body
    paths = [c.heading_path for c in chunk_markdown(read.body, max_tokens=8)]
    assert ["Spring", "TODO Beans :veg:"] in paths
    assert not any("a comment" in " ".join(p) for p in paths)
    assert outlines.read_org("* First\n\ntext\n").title == "First"


def test_rest_links_doc_ref_toctree_hyperlinks_and_labels() -> None:
    body = textwrap.dedent("""\
        .. _intro-label:

        Title
        =====

        See :doc:`../library/os`, :doc:`the API <api/index>`, :ref:`Calc <tut-calc>`, :ref:`tut-intro`,
        `a page <other.rst>`_, `Python <https://www.python.org>`_ and :func:`print`.

        .. toctree::
           :maxdepth: 2

           intro
           Whatever <appendix>
           self
           https://example.org

        .. _external: https://example.org/x
        """)
    links = extract_links(body, "tutorial/index.rst")
    keys = {(link.kind, link_key(link, "tutorial/index.rst")) for link in links}
    assert keys == {("markdown", "library/os.rst"), ("markdown", "tutorial/api/index.rst"),
                    ("ref", "rst-label:tut-calc"), ("ref", "rst-label:tut-intro"),
                    ("markdown", "tutorial/other.rst"), ("markdown", "tutorial/intro.rst"),
                    ("markdown", "tutorial/appendix.rst"), ("label", "rst-label:intro-label")}
    site = extract_links(body, "_sources/tutorial/index.rst.txt")
    assert Link("markdown", "../library/os.rst.txt") in site  # a site's copies link to its copies
    assert extract_links(body, "tutorial/index.md") == []  # reST roles only in reST documents
