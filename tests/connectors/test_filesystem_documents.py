"""PDF, DOCX and HTML files in a filesystem connector, synced by the real Harness and searched."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from context_harness.core.harness import Harness
from context_harness.formats import documents
from context_harness.ingest import chunk_worker
from context_harness.models import GetRequest, SearchRequest, SyncSummary
from support.documents import docx_bytes, pdf_bytes
from support.workspace import Workspace

pytestmark = pytest.mark.anyio

FILLER = " ".join(f"filler{i % 37} sentence part." for i in range(120))  # long sections: one chunk each
HTML = f"""<!doctype html><html><head><title>Greenhouse Handbook</title></head><body>
<h1>Watering</h1><p>Tomatoes want deep watering twice a week. {FILLER}</p>
<h2>Drip irrigation</h2><p>A drip line saves rainwater for the cucumbers. {FILLER}</p></body></html>""".encode()


def write_documents(ws: Workspace) -> None:
    (ws.docs / "report.pdf").write_bytes(pdf_bytes(
        ["Quarterly figures for the lighthouse fund.", "Page two: the keeper ordered walrus-proof doors."],
        title="Lighthouse Report"))
    (ws.docs / "guide.docx").write_bytes(docx_bytes(
        [(1, "Setup"), (0, "Unpack the telescope. " + FILLER), (2, "Calibration"),
         (0, "Align the finderscope on Vega. " + FILLER)],
        title="Telescope Guide"))
    (ws.docs / "garden.html").write_bytes(HTML)
    ws.write("notes.md", "# Notes\n\nPlain markdown still works.\n")


def write_failures(ws: Workspace) -> None:
    (ws.docs / "secret.pdf").write_bytes(pdf_bytes(["Launch codes."], user_password="hunter2"))
    (ws.docs / "broken.pdf").write_bytes(os.urandom(5000))
    (ws.docs / "scan.pdf").write_bytes(pdf_bytes(["", ""]))


async def first_hit(h: Harness, query: str):
    results = (await h.search(SearchRequest(query=query, mode="keyword"))).results
    assert results, query
    return results[0]


async def test_documents_are_converted_searchable_and_titled(workspace: Workspace) -> None:
    write_documents(workspace)
    async with Harness.open(workspace.config()) as h:
        report = await h.sync()
        assert report.sources[0].added == 4 and report.sources[0].skipped == 0
        pdf = await first_hit(h, "walrus")  # on the PDF's second page
        assert (pdf.source_id, pdf.title) == ("report.pdf", "Lighthouse Report")
        docx = await first_hit(h, "finderscope")
        assert (docx.title, docx.heading) == ("Telescope Guide", "Setup > Calibration")
        html = await first_hit(h, "cucumbers")
        assert (html.title, html.heading) == ("Greenhouse Handbook", "Watering > Drip irrigation")
        got = await h.get(GetRequest(id=html.id))
        assert got.content_type == "text/html" and got.body.startswith("# Watering\n\n")
        assert "<p>" not in got.body
        assert (await h.get(GetRequest(id=pdf.id))).content_type == "application/pdf"
        assert (await first_hit(h, "markdown")).source_id == "notes.md"


async def test_unchanged_documents_are_not_converted_again_and_edits_are(workspace: Workspace) -> None:
    write_documents(workspace)
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        path = workspace.docs / "report.pdf"
        os.utime(path, ns=(7, 7_000_000_000))  # same bytes, new mtime: the content hash decides
        again = await h.sync()
        assert (again.sources[0].unchanged, again.sources[0].updated) == (4, 0)
        path.write_bytes(pdf_bytes(["Now about narwhals."], title="Lighthouse Report"))
        os.utime(path, ns=(9, 9_000_000_000))
        edited = await h.sync()
        assert edited.sources[0].updated == 1
        assert (await h.search(SearchRequest(query="walrus", mode="keyword"))).results == []
        assert (await first_hit(h, "narwhals")).title == "Lighthouse Report"


async def test_a_new_converter_version_converts_unchanged_documents_again(
        workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    write_documents(workspace)
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        monkeypatch.setattr(documents, "CONVERTER_VERSION", documents.CONVERTER_VERSION + 1)
        again = (await h.sync()).sources[0]
        assert (again.updated, again.unchanged) == (3, 1)  # the three documents; notes.md is untouched
        assert (await first_hit(h, "walrus")).title == "Lighthouse Report"
        assert (await h.sync()).sources[0].unchanged == 4


async def test_failures_are_skipped_counted_named_and_never_fatal(workspace: Workspace) -> None:
    write_documents(workspace)
    write_failures(workspace)
    async with Harness.open(workspace.config()) as h:
        summary = (await h.sync()).sources[0]
        assert summary.added == 4
        assert summary.skipped_reasons == {"corrupt": 1, "encrypted": 1, "no_text": 1}
        assert {(i.source_id, i.reason) for i in summary.skipped_items} == {
            ("broken.pdf", "corrupt"), ("secret.pdf", "encrypted"), ("scan.pdf", "no_text")}
        notes = (await h.sources()).sources[0].notes or ""
        for name in ("corrupt 1 (broken.pdf)", "encrypted 1 (secret.pdf)", "no_text 1 (scan.pdf)"):
            assert name in notes
        assert (await first_hit(h, "walrus")).source_id == "report.pdf"
        assert (await h.stats()).documents == 4
        # They are tried again (and named again) on the next sync, never stored half-way.
        again = (await h.sync()).sources[0]
        assert again.skipped == 3 and again.unchanged == 4 and again.added == 0


async def test_a_document_that_breaks_leaves_the_index(workspace: Workspace) -> None:
    write_documents(workspace)
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        path = workspace.docs / "report.pdf"
        path.write_bytes(pdf_bytes(["Classified."], user_password="pw"))
        os.utime(path, ns=(3, 3_000_000_000))
        summary = (await h.sync()).sources[0]
        assert (summary.updated, summary.deleted, summary.skipped_reasons) == (0, 1, {"encrypted": 1})
        assert (await h.search(SearchRequest(query="walrus", mode="keyword"))).results == []


async def test_a_dry_run_converts_to_report_failures_and_writes_nothing(workspace: Workspace) -> None:
    write_documents(workspace)
    write_failures(workspace)
    async with Harness.open(workspace.config()) as h:
        summary = (await h.sync(dry_run=True)).sources[0]
        assert summary.added == 4 and summary.skipped_reasons == {"corrupt": 1, "encrypted": 1, "no_text": 1}
        assert (await h.stats()).documents == 0


async def test_without_the_extra_an_explicit_pdf_glob_says_what_to_install(
        workspace: Workspace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # as if `context-harness[documents]` were not installed
    write_documents(workspace)
    (workspace.docs / "second.pdf").write_bytes(pdf_bytes(["More."]))
    workspace.write_config("include_globs = ['**/*.md', '**/*.pdf', '**/*.html']\n")
    with caplog.at_level(logging.WARNING):
        async with Harness.open(workspace.config()) as h:
            summary = (await h.sync()).sources[0]
    assert summary.added == 2  # notes.md and garden.html (its converter is installed)
    assert summary.skipped_reasons == {"needs_documents_extra": 2}
    assert {i.source_id for i in summary.skipped_items} == {"report.pdf", "second.pdf"}
    hints = [r.getMessage() for r in caplog.records if "documents extra" in r.getMessage()]
    assert len(hints) == 1 and f"{sys.executable} -m pip install -e '" in hints[0] and "[documents]'" in hints[0]


async def test_a_large_sync_converts_in_the_helper_processes(workspace: Workspace,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty PDFs cost enough (a document counts as 32 text files) for the sync to start a helper."""
    pools: list[object] = []
    real_pool = chunk_worker.ChunkPool

    def recording_pool(*args, **kwargs):
        pools.append(real_pool(*args, **kwargs))
        return pools[-1]

    monkeypatch.setattr(chunk_worker, "ChunkPool", recording_pool)
    monkeypatch.setattr(chunk_worker, "available_cores", lambda: 2)  # one helper, on any machine
    for i in range(40):
        (workspace.docs / f"r{i:02d}.pdf").write_bytes(pdf_bytes(
            [f"Survey {i} counted {i * 3} puffins.", f"Appendix of survey {i}: token{i}x."], title=f"Survey {i}"))
    (workspace.docs / "bad.pdf").write_bytes(b"%PDF-1.4 truncated")
    async with Harness.open(workspace.config()) as h:
        summary: SyncSummary = (await h.sync()).sources[0]
        assert pools, "the sync chunked in process"
        assert summary.added == 40 and summary.skipped_reasons == {"corrupt": 1}
        for i in (0, 17, 39):
            hit = await first_hit(h, f"token{i}x")
            assert (hit.title, hit.source_id) == (f"Survey {i}", f"r{i:02d}.pdf")


def test_ctx_sync_names_the_files_it_skipped(workspace: Workspace) -> None:
    write_documents(workspace)
    write_failures(workspace)
    done = subprocess.run([sys.executable, "-m", "context_harness", "sync", "--config", str(workspace.config_path),
                           "--progress", "none"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "4 added" in done.stdout and "3 skipped" in done.stdout
    for line in ("skipped broken.pdf: corrupt", "skipped secret.pdf: encrypted", "skipped scan.pdf: no_text"):
        assert line in done.stdout
