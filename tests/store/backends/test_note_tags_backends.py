"""On both backends (the embedded store and a real PostgreSQL): tags given to note_write without
front matter are found by the ``tags`` filter at once and after the note is read again from its file
alone."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import NoteWriteRequest, SearchFilters, SearchRequest
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio


async def test_note_write_tags_are_found_by_the_tags_filter_on_every_backend(
        workspace: Workspace, backend: str, url: str | None) -> None:
    fake.register()
    write_sample_docs(workspace)
    config = backend_config(workspace, backend, url)
    config.connectors.filesystem["docs"].writable = True
    assert config.connectors.filesystem["docs"].front_matter is False  # the default

    async def tagged(h: Harness, mode: str) -> list[str]:
        request = SearchRequest(query="event loop", mode=mode, filters=SearchFilters(tags=["asyncio"]))  # type: ignore[arg-type]
        return [r.source_id for r in (await h.search(request)).results]

    async with Harness.open(config) as h:
        await h.sync()
        await h.note_write(NoteWriteRequest(source="docs", path="inbox/loop.md", title="Loops", tags=["asyncio", "io"],
                                            content="The event loop runs one task at a time."))
        await h.note_write(NoteWriteRequest(source="docs", path="inbox/other.md", content="Another event loop."))
        for mode in ("keyword", "hybrid"):
            assert await tagged(h, mode) == ["inbox/loop.md"], mode
        note = workspace.docs / "inbox" / "loop.md"
        assert note.read_text(encoding="utf-8").startswith("# Loops\n\nTags: asyncio, io\n\n")
        kept = note.read_bytes()
        note.unlink()  # gone from the index, then read again from the file alone
        await h.sync()
        assert await tagged(h, "keyword") == []
        note.write_bytes(kept)
        await h.sync("all", full=True)
        assert await tagged(h, "keyword") == ["inbox/loop.md"]
