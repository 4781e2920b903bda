"""``get`` reads a window of a long document in proportion to the window on both backends (the
embedded store and PostgreSQL, one round trip there), and answers exactly what the window computed
over the whole document is: chunks and offsets anywhere, every budget, empty documents, the
console's headings."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.errors import BadRequest, NotFound
from context_harness.models import GetRequest
from context_harness.search import windows
from support.workspace import Workspace, backend_config, long_markdown

pytestmark = pytest.mark.anyio
BODY = long_markdown()
BACKENDS = ["embedded", "postgres"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_windows_read_alone_are_the_windows_of_the_whole_document(workspace: Workspace, backend: str,
                                                                        request: pytest.FixtureRequest) -> None:
    workspace.write("manual.md", BODY)
    workspace.write("empty.md", "")
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    async with Harness.open(backend_config(workspace, backend, url, embedding="disabled")) as h:
        await h.sync()
        ids = {(await h.get(d.id)).source_id: d.id for d in (await h.document_listing()).documents}
        doc_id = ids["manual.md"]
        assert isinstance(h.store, windows.WindowedReads)
        row, chunks = h.store.document_with_chunks(doc_id)
        default, overlap = h.config.server.get_max_chars, h.config.chunking.overlap_tokens
        for max_chars in (300, 5_000, None, 0):
            requests = [GetRequest(id=doc_id, chunk=k, max_chars=max_chars) for k in range(0, len(chunks), 11)]
            requests += [GetRequest(id=doc_id, offset=o, max_chars=max_chars)
                         for o in (0, 7, 123_457, len(BODY) - 1, len(BODY))]
            for get in requests:
                alone = windows.read_window(h.store, doc_id, get, default)
                assert alone == windows.document_window(row, chunks, get, default, overlap), get
        with pytest.raises(BadRequest, match=f"this document has {len(chunks)} chunks"):
            await h.get(GetRequest(id=doc_id, chunk=len(chunks)))
        with pytest.raises(BadRequest, match="past the end"):
            await h.get(GetRequest(id=doc_id, offset=len(BODY) + 1))
        with pytest.raises(NotFound):
            await h.get(GetRequest(id="0" * 24, chunk=2))
        empty = await h.get(ids["empty.md"])
        assert empty.body == "" and empty.chunks == [] and not empty.truncated
        near = await h.document_headings(doc_id, 40, 10)
        assert (near.first, near.count) == (30, len(chunks))
        assert near.headings == [c.heading for c in chunks[30:51]]
        with pytest.raises(NotFound):
            await h.document_headings("0" * 24, 0, 10)
