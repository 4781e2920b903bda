"""PPTX, XLSX, ODS, CSV, ODT, EPUB, notebooks, .eml and .mbox: files written by each format's own library,
converted (title, author, dates, sections) and then found through a real sync and keyword search."""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import time
import zipfile

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.formats.documents import FORMATS, IMAGE_SUFFIXES, ConversionFailed, ConvertOptions, convert
from context_harness.ingest.chunk_worker import chunk_rows
from context_harness.models import GetRequest, SearchRequest
from context_harness.store.records import document_id
from support.office_files import (
    epub_bytes,
    mbox_bytes,
    message,
    notebook_bytes,
    ods_bytes,
    odt_bytes,
    pptx_bytes,
    xlsx_bytes,
)
from support.workspace import Workspace

UTC = dt.UTC


def kind(suffix: str) -> str:
    return FORMATS[suffix].content_type


def deck() -> bytes:
    return pptx_bytes([("Dredging the Harbour", ["Deepen the channel to twelve metres", "Before the spring tides"],
                        "Mention the cormorant colony on the breakwater."),
                       (None, ["A slide without a title about lighthouse keepers"], "")],
                      title="Harbour Plans", author="Ada Lovelace")


def test_pptx_a_section_per_slide_with_notes() -> None:
    converted = convert(deck(), kind(".pptx"))
    assert converted.title == "Harbour Plans" and converted.author == "Ada Lovelace"
    assert converted.text == ("# Dredging the Harbour\n\n- Deepen the channel to twelve metres\n- Before the spring tides"
                              "\n\nNotes: Mention the cormorant colony on the breakwater.\n\n# Slide 2\n\n"
                              "A slide without a title about lighthouse keepers\n")
    # A deck without a title of its own: the first slide's title stands in.
    untitled = pptx_bytes([("Quarterly Review", ["Sales rose."], "")])
    assert convert(untitled, kind(".pptx")).title == "Quarterly Review"


def ledger_rows(count: int) -> list[list[object]]:
    return [["item", "cost", "bought"]] + [[f"widget {i}", i * 1.5, dt.date(2024, 1, 1 + i % 28)]
                                           for i in range(count)]


def test_xlsx_a_section_per_sheet_and_the_header_leads_every_group_of_rows() -> None:
    raw = xlsx_bytes({"Ledger": ledger_rows(40), "Notes": [["topic"], ["the otter budget"]]},
                     title="Accounts 2024", author="Grace Hopper")
    converted = convert(raw, kind(".xlsx"))
    assert converted.title == "Accounts 2024" and converted.author == "Grace Hopper"
    assert converted.created is not None
    assert converted.text.startswith("# Ledger\n\n| item | cost | bought |\n| --- | --- | --- |\n"
                                     "| widget 0 | 0 | 2024-01-01 |\n| widget 1 | 1.5 | 2024-01-02 |")
    assert "# Notes\n\n| topic |\n| --- |\n| the otter budget |\n" in converted.text
    # At the default chunk size every chunk of rows reads on its own: it starts with the header.
    rows = chunk_rows("d", converted.title, converted.text, 128, 0)
    ledger = [r[2] for r in rows if "widget" in r[2]]
    assert len(ledger) > 5 and all("| item | cost | bought |" in text for text in ledger)
    assert sum(text.count("| widget") for text in ledger) == 40


def test_a_ten_thousand_row_sheet_converts_in_time() -> None:
    raw = xlsx_bytes({"Big": ledger_rows(10_000)})
    started = time.perf_counter()
    text = convert(raw, kind(".xlsx")).text
    elapsed = time.perf_counter() - started
    assert text.count("| widget") == 10_000 and text.count("| item | cost | bought |") > 10_000 // 8
    assert elapsed < 5 * 1.5, elapsed  # 1.1-1.4 s on a loaded 2-core machine (openpyxl's parser): 5x headroom


def test_library_default_authors_name_nobody() -> None:
    assert convert(xlsx_bytes({"S": [["a"], ["b"]]}), kind(".xlsx")).author is None  # openpyxl writes "openpyxl"


def test_an_xlsx_whose_properties_openpyxl_cannot_read_still_converts() -> None:
    raw = xlsx_bytes({"Sheet": [["name"], ["Ada"]]}, title="People")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "docProps/core.xml":
                data = re.sub(rb"(<dcterms:created[^>]*>)[^<]*", rb"\g<1>not a date", data)
            archive.writestr(info, data)
    converted = convert(out.getvalue(), kind(".xlsx"))
    assert converted.title is None and converted.text == "# Sheet\n\n| name |\n| --- |\n| Ada |\n"


def test_ods_and_csv_read_as_sheets() -> None:
    ods = convert(ods_bytes({"Tides": [["day", "high water"], ["monday", "5.1 m"]]}, title="Tide Table"),
                  kind(".ods"))
    assert ods.title == "Tide Table"
    assert ods.text == "# Tides\n\n| day | high water |\n| --- | --- |\n| monday | 5.1 m |\n"
    csv = convert(b"name;city\nAda;London\nGrace;\"New York | NY\"\n", kind(".csv"))
    assert csv.title is None  # the file's name stands in
    assert csv.text == "| name | city |\n| --- | --- |\n| Ada | London |\n| Grace | New York \\| NY |\n"


def test_odt_headings_lists_and_metadata() -> None:
    raw = odt_bytes([(1, "Herons"), (0, "Herons wade in shallow water."), (-1, "grey heron"), (2, "Egrets"),
                     (0, "Egrets are white.")], title="Field Guide", author="Rachel Carson")
    converted = convert(raw, kind(".odt"))
    assert (converted.title, converted.author) == ("Field Guide", "Rachel Carson")
    assert converted.created == dt.datetime(2024, 3, 5, 10, 0)
    assert converted.text == ("# Herons\n\nHerons wade in shallow water.\n\n- grey heron\n\n## Egrets\n\n"
                              "Egrets are white.\n")


def book() -> bytes:
    return epub_bytes([("The Whale", "<h1>The Whale</h1><p>A white whale swam past the harpoon boat.</p>"),
                       ("The Storm", "<p>Waves crashed over the deck.</p><h2>Aftermath</h2><p>Calm at dawn.</p>")],
                      title="Sea Stories", author="Herman Melville")


def test_epub_chapters_in_reading_order_with_title_and_author() -> None:
    converted = convert(book(), kind(".epub"))
    assert (converted.title, converted.author) == ("Sea Stories", "Herman Melville")
    assert converted.created == dt.datetime(2021, 6, 1)
    assert converted.text == ("# The Whale\n\nA white whale swam past the harpoon boat.\n\n# The Storm\n\n"
                              "Waves crashed over the deck.\n\n### Aftermath\n\nCalm at dawn.\n")


def notebook() -> bytes:
    return notebook_bytes([("markdown", "# Orbit Maths\n\nKepler's third law relates period and distance."),
                           ("code", "period = semi_major_axis ** 1.5\nprint('```')")],
                          output="SECRET OUTPUT 42")


def test_notebook_markdown_as_text_code_fenced_outputs_left_out() -> None:
    converted = convert(notebook(), kind(".ipynb"))
    assert converted.title == "Orbit Maths"
    assert converted.text == ("# Orbit Maths\n\nKepler's third law relates period and distance.\n\n"
                              "````python\nperiod = semi_major_axis ** 1.5\nprint('```')\n````\n")
    assert convert(b"\xef\xbb\xbf" + notebook(), kind(".ipynb")).text == converted.text  # a BOM is no harm
    titled = convert(notebook_bytes([("code", "x = 1")], title="Scratch"), kind(".ipynb"))
    assert (titled.title, titled.author) == ("Scratch", "Ada Lovelace")


def test_notebook_outputs_when_asked() -> None:
    import nbformat

    nb = nbformat.reads(notebook().decode(), as_version=4)
    nb.cells[1].outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": "1.837"},
                                                      execution_count=1))
    nb.cells[1].outputs.append(nbformat.v4.new_output("error", ename="ValueError", evalue="orbit too eccentric",
                                                      traceback=["long traceback"]))
    raw = nbformat.writes(nb).encode()
    with_outputs = convert(raw, kind(".ipynb"), ConvertOptions(notebook_outputs=True)).text
    assert with_outputs.endswith("````\n\n```output\nSECRET OUTPUT 42\n1.837\nValueError: orbit too eccentric\n```\n")
    assert "SECRET" not in convert(raw, kind(".ipynb")).text


def thread() -> list:
    first = message("Boat launch", "Ann <ann@example.org>", "crew@example.org", "The boat launches at noon.",
                    when=dt.datetime(2024, 1, 1, 10, tzinfo=UTC), message_id="<launch@example.org>")
    reply = message("Re: Boat launch", "Bob <bob@example.org>", "Ann <ann@example.org>",
                    "<p>I will bring the <b>champagne</b>.</p>", when=dt.datetime(2024, 1, 1, 11, tzinfo=UTC),
                    message_id="<reply@example.org>", in_reply_to="<launch@example.org>", html=True)
    return [first, reply]


def test_eml_subject_sender_date_and_headers() -> None:
    converted = convert(thread()[1].as_bytes(), kind(".eml"))
    assert (converted.title, converted.author) == ("Re: Boat launch", "Bob <bob@example.org>")
    assert converted.created == dt.datetime(2024, 1, 1, 11, tzinfo=UTC)
    assert converted.metadata["in_reply_to"] == "<launch@example.org>"
    assert converted.metadata["to"] == "Ann <ann@example.org>"
    assert converted.text == "I will bring the champagne.\n"


def test_eml_encoded_headers_and_charsets_are_decoded() -> None:
    msg = message("Café ☕ order", "Zoë <zoe@example.org>", "bob@example.org", "", when=dt.datetime(2024, 2, 2, tzinfo=UTC),
                  message_id="<cafe@example.org>")
    msg.set_content("Ein Stück Kuchen für 3 €.", charset="iso-8859-15", cte="quoted-printable")
    raw = msg.as_bytes()
    assert b"=?utf-8?" in raw and "Café".encode() not in raw  # the subject travels RFC 2047-encoded
    converted = convert(raw, kind(".eml"))
    assert (converted.title, converted.author) == ("Café ☕ order", "Zoë <zoe@example.org>")
    assert converted.text == "Ein Stück Kuchen für 3 €.\n"


def test_mbox_a_section_per_message_and_replies_name_their_parent() -> None:
    converted = convert(mbox_bytes(thread()), kind(".mbox"))
    assert converted.title is None and converted.metadata == {"messages": 2}
    assert (converted.created, converted.updated) == (dt.datetime(2024, 1, 1, 10, tzinfo=UTC),
                                                      dt.datetime(2024, 1, 1, 11, tzinfo=UTC))
    sections = converted.text.split("\n# ")
    assert sections[0].startswith("# Boat launch\n\nFrom: Ann <ann@example.org> · To: crew@example.org · Date: ")
    assert sections[1].startswith("Re: Boat launch\n\nFrom: Bob")
    assert "In reply to: Boat launch (Ann <ann@example.org>, Mon, 01 Jan 2024 10:00:00 +0000)" in sections[1]


@pytest.mark.parametrize("suffix", [".pptx", ".xlsx", ".ods", ".odt", ".epub", ".ipynb"])
def test_damaged_files_are_corrupt(suffix: str) -> None:
    with pytest.raises(ConversionFailed) as caught:
        convert(os.urandom(3000), kind(suffix))
    assert caught.value.reason == "corrupt"


def test_default_globs_name_every_format() -> None:
    # Pictures are read only by OCR: their globs join with [formats] ocr (tests/formats/test_ocr.py).
    assert {f"**/*{s}" for s in FORMATS if s not in IMAGE_SUFFIXES} <= set(config_mod.default_include_globs())


@pytest.mark.anyio
async def test_each_format_is_titled_sectioned_and_found_by_a_sync(workspace: Workspace) -> None:
    files = {
        "harbour.pptx": deck(), "ledger.xlsx": xlsx_bytes({"Ledger": ledger_rows(30)}, title="Accounts 2024"),
        "tides.ods": ods_bytes({"Tides": [["day", "high water"], ["monday", "marigold tide"]]}, title="Tide Table"),
        "people.csv": b"name,city\nAda,Zanzibar\n",
        "guide.odt": odt_bytes([(1, "Herons"), (0, "Herons wade in shallow estuaries.")], title="Field Guide"),
        "sea.epub": book(), "orbits.ipynb": notebook(), "launch.eml": thread()[0].as_bytes(),
        "crew.mbox": mbox_bytes(thread()), "broken.pptx": os.urandom(2000),
    }
    for name, raw in files.items():
        (workspace.docs / name).write_bytes(raw)
    workspace.write("note.md", "# Note\n\nStill indexed.\n")
    expected = {  # file: (title, a phrase in it, the heading it is found under)
        "harbour.pptx": ("Harbour Plans", "cormorant colony", "Dredging the Harbour"),
        "ledger.xlsx": ("Accounts 2024", "widget 27", "Ledger"), "tides.ods": ("Tide Table", "marigold", "Tides"),
        "people.csv": ("people", "Zanzibar", None), "guide.odt": ("Field Guide", "estuaries", "Herons"),
        "sea.epub": ("Sea Stories", "harpoon", "The Whale"), "orbits.ipynb": ("Orbit Maths", "semi_major_axis",
                                                                                "Orbit Maths"),
        "launch.eml": ("Boat launch", "noon", None), "crew.mbox": ("crew", "champagne", "Re: Boat launch"),
    }
    async with Harness.open(workspace.config()) as h:
        summary = (await h.sync()).sources[0]
        assert summary.added == len(expected) + 1
        assert summary.skipped_reasons == {"corrupt": 1}
        notes = (await h.sources()).sources[0].notes or ""
        assert "corrupt 1 (broken.pptx)" in notes
        for name, (title, phrase, heading) in expected.items():
            hits = [r for r in (await h.search(SearchRequest(query=phrase, mode="keyword"))).results
                    if r.source_id == name]
            assert hits and hits[0].title == title and hits[0].heading == heading, (name, hits)
        mail = await h.get(GetRequest(id=document_id("filesystem:docs", "launch.eml")))
        assert mail.author == "Ann <ann@example.org>" and mail.created_at == "2024-01-01T10:00:00Z"
        assert mail.metadata["message_id"] == "<launch@example.org>"
        outputs = await h.search(SearchRequest(query="SECRET OUTPUT", mode="keyword"))
        assert not [r for r in outputs.results if r.source_id == "orbits.ipynb"]


@pytest.mark.parametrize("suffix", [".pptx", ".xlsx"])
def test_password_protected_office_files_are_encrypted(suffix: str) -> None:
    # A password-protected Office file is an OLE container holding an "EncryptedPackage" stream.
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500) + "EncryptedPackage".encode("utf-16-le") + bytes(500)
    with pytest.raises(ConversionFailed) as caught:
        convert(ole, kind(suffix))
    assert caught.value.reason == "encrypted"


@pytest.mark.anyio
async def test_dates_created_from_the_metadata_updated_the_later_of_file_and_metadata(workspace: Workspace) -> None:
    # python-pptx keeps its template's dates (2013): the file's time is the later, and counts as updated.
    (workspace.docs / "deck.pptx").write_bytes(deck())
    (workspace.docs / "launch.eml").write_bytes(thread()[0].as_bytes())
    old = dt.datetime(2020, 5, 1, tzinfo=UTC).timestamp()
    os.utime(workspace.docs / "launch.eml", (old, old))
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        slides = await h.get(GetRequest(id=document_id("filesystem:docs", "deck.pptx")))
        mail = await h.get(GetRequest(id=document_id("filesystem:docs", "launch.eml")))
    assert slides.created_at is not None and slides.created_at.startswith("2013-")
    assert slides.updated_at is not None and slides.updated_at >= dt.datetime.now(UTC).strftime("%Y-%m-%d")
    assert (mail.created_at, mail.updated_at) == ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z")


@pytest.mark.anyio
async def test_turning_notebook_outputs_on_converts_notebooks_again(workspace: Workspace) -> None:
    (workspace.docs / "orbits.ipynb").write_bytes(notebook())

    async def found(config: config_mod.Config) -> bool:
        async with Harness.open(config) as h:
            await h.sync()
            hits = await h.search(SearchRequest(query="SECRET OUTPUT", mode="keyword"))
            return any(r.source_id == "orbits.ipynb" for r in hits.results)

    assert not await found(workspace.config())
    workspace.write_config("[formats]\nnotebook_outputs = true\n")
    assert await found(workspace.config())  # the file did not change: the setting re-reads it
    workspace.write_config("")
    assert not await found(workspace.config())
