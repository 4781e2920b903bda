"""A documentation set in reStructuredText (and a site's ``.rst.txt`` copies, AsciiDoc, Org) through the
real Harness over a temporary folder: titles, sections as the headings of search results, ``:doc:``,
``:ref:`` and toctree links as links both ways and in the console's graph, nothing read by
``.. include::`` and nothing printed."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.models import GetRequest, RelatedRequest, SearchRequest
from context_harness.store.records import document_id

INDEX = """\
    Python Documentation
    ====================

    .. toctree::
       :maxdepth: 2

       tutorial/introduction
       Built-in functions <library/functions>
    """

INTRODUCTION = """\
    .. _tut-informal:

    **********************************
    An Informal Introduction to Python
    **********************************

    In the following examples, input and output are distinguished by prompts.

    .. _tut-calculator:

    Using Python as a Calculator
    ============================

    Let's try some simple Python commands. Start the interpreter and wait for the primary prompt. It
    should not take long. Every example here can be typed at the prompt as it is shown, and the
    interpreter answers each expression with its value, one line after the other, until you leave it
    with an end-of-file character or the exit function.

    Numbers
    -------

    The interpreter acts as a simple calculator: the operator for floor division
    returns an integer result. The built-in :func:`abs` is described in :ref:`built-in-funcs`.
    Expression syntax is straightforward: the operators for addition, subtraction, multiplication and
    true division work as in most other languages, and parentheses can be used for grouping. Integer
    numbers have one type, the ones with a fractional part another, and mixing them converts operands.

    Text
    ----

    Strings are enclosed in quotes. See :doc:`../library/functions` for every built-in.
    """

FUNCTIONS = """\
    .. _built-in-funcs:

    ******************
    Built-in Functions
    ******************

    The Python interpreter has a number of functions built into it. The tutorial's
    :ref:`calculator <tut-calculator>` uses some.

    .. function:: abs(x)

       Return the absolute value of a number, as the quadrangle theorem says.
    """


PAD = ("This paragraph only makes the section before the next one long enough to be a chunk of its own: "
       "the chunker starts a new chunk at a heading once the current one holds a fair amount of text, so "
       "short sections are packed together under the first heading, as Markdown sections are. ") * 2


def _id(source_id: str) -> str:
    return document_id("filesystem:docs", source_id)


@pytest.mark.anyio
async def test_a_rest_documentation_set_reads_as_structure(workspace, capfd) -> None:
    workspace.write("index.rst", INDEX)
    workspace.write("tutorial/introduction.rst", INTRODUCTION)
    workspace.write("library/functions.rst", FUNCTIONS)
    workspace.write("evil.rst", "Evil\n====\n\n.. include:: /etc/passwd\n\n.. raw:: html\n   :file: /etc/passwd\n")
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        intro = await harness.get(GetRequest(id=_id("tutorial/introduction.rst"), max_chars=0))
        assert intro.title == "An Informal Introduction to Python"  # the over-and-underlined document title
        assert intro.content_type == "text/x-rst"
        assert (await harness.get(GetRequest(id=_id("library/functions.rst")))).title == "Built-in Functions"

        hits = (await harness.search(SearchRequest(query="floor division", mode="keyword"))).results
        assert hits and hits[0].source_id == "tutorial/introduction.rst"
        assert hits[0].heading == "An Informal Introduction to Python > Using Python as a Calculator > Numbers"
        headings = {c.heading for c in (await harness.search(
            SearchRequest(query="quotes strings enclosed", mode="keyword"))).results}
        assert "An Informal Introduction to Python > Using Python as a Calculator > Text" in headings

        related = await harness.related(RelatedRequest(id=_id("tutorial/introduction.rst")))
        assert {i.source_id for i in related.links_to} == {"library/functions.rst"}  # :ref: and :doc:
        assert {i.source_id for i in related.linked_from} == {"index.rst", "library/functions.rst"}  # toctree, :ref:
        functions = await harness.related(RelatedRequest(id=_id("library/functions.rst")))
        assert {i.source_id for i in functions.linked_from} == {"index.rst", "tutorial/introduction.rst"}
        assert functions.unresolved == []

        graph = await harness.link_graph()
        names = {n["id"]: n["source_id"] for n in graph["nodes"]}
        edges = {(names[e["from"]], names[e["to"]]) for e in graph["edges"]}
        assert edges == {("index.rst", "tutorial/introduction.rst"), ("index.rst", "library/functions.rst"),
                         ("tutorial/introduction.rst", "library/functions.rst"),
                         ("library/functions.rst", "tutorial/introduction.rst")}

        evil = await harness.get(GetRequest(id=_id("evil.rst"), max_chars=0))
        assert evil.title == "Evil" and "root:" not in evil.body
        assert not (await harness.search(SearchRequest(query="root nologin bin bash", mode="keyword"))).results
    assert capfd.readouterr().out == ""  # nothing printed (stdout is the JSON-RPC wire in stdio mode)


@pytest.mark.anyio
async def test_a_sites_rst_txt_copies_asciidoc_and_org(workspace) -> None:
    workspace.write("_sources/tutorial/introduction.rst.txt", INTRODUCTION)
    workspace.write("_sources/library/functions.rst.txt", FUNCTIONS)
    workspace.write("guide.adoc", f"= User Guide\n\n{PAD}\n\n== Installing\n\nRun the quadrangle installer.\n")
    workspace.write("plan.org", f"#+TITLE: Garden Plans\n\n{PAD}\n\n* Spring\n\nSow the quadrangle beds.\n")
    workspace.write_config('include_globs = ["**/*.txt", "**/*.adoc", "**/*.org"]\n')
    config = workspace.config()
    async with Harness.open(config) as harness:
        await harness.sync()
        copy = await harness.get(GetRequest(id=_id("_sources/tutorial/introduction.rst.txt")))
        assert copy.title == "An Informal Introduction to Python" and copy.content_type == "text/x-rst"
        related = await harness.related(RelatedRequest(id=_id("_sources/tutorial/introduction.rst.txt")))
        assert {i.source_id for i in related.links_to} == {"_sources/library/functions.rst.txt"}
        assert {i.source_id for i in related.linked_from} == {"_sources/library/functions.rst.txt"}

        hits = {h.source_id: h for h in (await harness.search(
            SearchRequest(query="quadrangle", mode="keyword"))).results}
        assert hits["guide.adoc"].title == "User Guide" and hits["guide.adoc"].heading == "User Guide > Installing"
        assert hits["plan.org"].title == "Garden Plans" and hits["plan.org"].heading == "Spring"
        assert hits["_sources/library/functions.rst.txt"].heading == "Built-in Functions"
