"""A DOCX is a zip: one that unpacks to far more than its size (a zip bomb) is skipped as
``too_large`` before anything parses it, in ``convert`` and in a sync, while a large genuine one
still converts."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import pytest

from context_harness.core.harness import Harness
from context_harness.formats.documents import DOCX_MAX_UNPACKED, FORMATS, ConversionFailed, convert
from support.documents import docx_bytes
from support.workspace import Workspace

pytestmark = pytest.mark.anyio
DOCX = FORMATS[".docx"].content_type
PARAGRAPH = b"<w:p><w:r><w:t>bomb text here</w:t></w:r></w:p>"


def padded_docx(xml_bytes: int) -> bytes:
    """A real DOCX whose document.xml is padded with paragraphs to about ``xml_bytes`` (written in
    pieces: the test never holds the unpacked XML)."""
    source = zipfile.ZipFile(io.BytesIO(docx_bytes([(1, "Seed"), (0, "A seed paragraph.")])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename != "word/document.xml":
                archive.writestr(info.filename, data)
                continue
            at = data.index(b"<w:body>") + len(b"<w:body>")
            with archive.open(info.filename, "w", force_zip64=True) as part:
                part.write(data[:at])
                block = PARAGRAPH * 20_000
                for _ in range(xml_bytes // len(block)):
                    part.write(block)
                part.write(data[at:])
    return out.getvalue()


def test_a_docx_that_unpacks_far_past_its_size_is_too_large_before_parsing() -> None:
    bomb = padded_docx(DOCX_MAX_UNPACKED + (8 << 20))
    assert len(bomb) < 1_000_000  # under the default max_file_size of 2 MB
    tracemalloc.start()
    try:
        with pytest.raises(ConversionFailed) as info:
            convert(bomb, DOCX)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.reason == "too_large" and peak < 4 * len(bomb) + 1_000_000


def test_a_large_genuine_docx_still_converts() -> None:
    converted = convert(padded_docx(8 << 20), DOCX)
    assert converted.text.endswith("# Seed\n\nA seed paragraph.\n") and converted.text.count("bomb text here") > 100_000


async def test_a_sync_skips_the_bomb_and_names_it(workspace: Workspace) -> None:
    (workspace.docs / "bomb.docx").write_bytes(padded_docx(DOCX_MAX_UNPACKED + (8 << 20)))
    workspace.write("note.md", "# Note\n\nStill indexed.\n")
    config = workspace.config()
    config.connectors.filesystem["docs"].include_globs = ["**/*.md", "**/*.docx"]
    async with Harness.open(config) as h:
        summary = (await h.sync()).sources[0]
    assert summary.added == 1 and summary.skipped_reasons == {"too_large": 1}
    assert [(i.source_id, i.reason) for i in summary.skipped_items] == [("bomb.docx", "too_large")]
