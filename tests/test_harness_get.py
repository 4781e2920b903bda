"""Paged ``get`` on a real Harness over a ~262 kB generated Markdown manual: default windows, paging
exactness, chunk windows holding a search hit's snippet, the whole document on request, bad windows."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from context_harness import config as config_mod
from context_harness.common.validation import parse_get
from context_harness.core.harness import Harness
from context_harness.errors import BadRequest
from context_harness.models import GetRequest, SearchRequest
from support.workspace import long_markdown, marker, write_long_document

pytestmark = pytest.mark.anyio
BODY = long_markdown()


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[Any]:
    async with Harness.open(config_mod.load(write_long_document(tmp_path))) as h:
        await h.sync()
        yield h


async def manual_id(h: Harness) -> str:
    hits = (await h.search(SearchRequest(query=marker(0), mode="keyword"))).results
    assert hits[0].source_id == "manual.md"
    return hits[0].id


def words(text: str) -> str:
    return " ".join(text.split())


async def test_default_get_is_a_window_under_25_kb(kb) -> None:
    doc = await kb.get(await manual_id(kb))
    payload = doc.model_dump(mode="json")
    assert len(BODY) >= 262_000 and payload["total_chars"] == len(BODY)
    assert len(json.dumps(payload, ensure_ascii=False).encode()) <= 25_000
    assert payload["truncated"] is True and payload["range"]["start"] == 0
    assert payload["next_offset"] == payload["range"]["end"] == len(payload["body"])
    assert 15_000 <= len(payload["body"]) <= 20_000 and BODY.startswith(payload["body"])
    assert payload["body"].endswith("\n")  # cut at a line or paragraph break
    # every seed key is still there, and the chunks are those in the window, without their text again
    assert {"id", "source", "source_id", "source_url", "title", "author", "created_at", "updated_at",
            "content_type", "body", "metadata", "chunks"} <= set(payload)
    chunks = payload["chunks"]
    assert chunks[0]["index"] == 0 and all(c["text"] == "" for c in chunks)
    assert chunks[-1]["start"] < payload["range"]["end"] <= chunks[-1]["end"]


async def test_following_next_offset_reproduces_the_body(kb) -> None:
    doc_id = await manual_id(kb)
    pieces, offset, seen_chunks = [], 0, []
    while offset is not None:
        doc = await kb.get(GetRequest(id=doc_id, offset=offset, max_chars=7_000))
        assert doc.range is not None and doc.range.start == offset and doc.range.end == offset + len(doc.body)
        assert 0 < len(doc.body) <= 7_000
        pieces.append(doc.body)
        seen_chunks.extend(c.index for c in doc.chunks)
        offset = doc.next_offset
    assert "".join(pieces) == BODY  # no overlap, nothing missing
    assert len(pieces) >= 262_000 // 7_000
    whole = await kb.get(GetRequest(id=doc_id, max_chars=0))
    assert sorted(set(seen_chunks)) == [c.index for c in whole.chunks]


async def test_windows_never_split_a_character(kb) -> None:
    doc_id = await manual_id(kb)
    offset: int | None = 0
    while offset is not None:
        doc = await kb.get(GetRequest(id=doc_id, offset=offset, max_chars=1_000))
        assert doc.body.encode("utf-8").decode("utf-8") == doc.body
        assert BODY[offset:offset + len(doc.body)] == doc.body
        offset = doc.next_offset


@pytest.mark.parametrize("section", [0, 7, 40, 110])
async def test_get_chunk_of_a_hit_holds_its_snippet(kb, section) -> None:
    [hit] = (await kb.search(SearchRequest(query=marker(section), mode="keyword", limit=1))).results
    assert hit.chunk is not None and hit.heading is not None and f"Section {section}:" in hit.heading
    doc = await kb.get(GetRequest(id=hit.id, chunk=hit.chunk))
    snippet = words(hit.snippet.removeprefix("… ").removesuffix(" …"))
    assert marker(section) in snippet and snippet in words(doc.body)
    assert doc.truncated and len(doc.body) <= 20_000
    assert hit.chunk in [c.index for c in doc.chunks]
    own = next(c for c in doc.chunks if c.index == hit.chunk)
    assert own.heading == hit.heading and own.start is not None and own.end is not None
    assert marker(section) in BODY[own.start:own.end]


async def test_chunk_window_with_a_small_budget_starts_at_the_chunk(kb) -> None:
    [hit] = (await kb.search(SearchRequest(query=marker(50), mode="keyword", limit=1))).results
    doc = await kb.get(GetRequest(id=hit.id, chunk=hit.chunk, max_chars=300))
    own = next(c for c in doc.chunks if c.index == hit.chunk)
    assert doc.range is not None and doc.range.start == own.start and len(doc.body) <= 300
    assert doc.next_offset == doc.range.end


async def test_max_chars_zero_returns_the_whole_document(kb, tmp_path) -> None:
    doc_id = await manual_id(kb)
    whole = await kb.get(GetRequest(id=doc_id, max_chars=0))
    assert whole.body == BODY and whole.truncated is False and whole.next_offset is None
    assert whole.range is not None and (whole.range.start, whole.range.end) == (0, len(BODY))
    stored = kb.store.chunks(doc_id)
    assert [(c.index, c.text) for c in whole.chunks] == [(c.idx, c.text) for c in stored]
    spans = [(c.start, c.end) for c in whole.chunks]
    assert spans[0][0] == 0 and spans[-1][1] == len(BODY)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))  # contiguous
    # scripts (Lua's and agents' context.get) get the whole document too
    assert kb.get_sync(doc_id).body == BODY


async def test_a_config_of_zero_returns_whole_documents(tmp_path) -> None:
    config = config_mod.load(write_long_document(tmp_path, server="sync_on_start = false\nget_max_chars = 0"))
    async with Harness.open(config) as h:
        await h.sync()
        doc = await h.get(await manual_id(h))
    assert doc.body == BODY and not doc.truncated


async def test_small_documents_are_whole_with_chunk_texts(kb) -> None:
    [hit] = (await kb.search(SearchRequest(query="tantivy rust", limit=1))).results
    doc = await kb.get(hit.id)
    assert doc.truncated is False and doc.next_offset is None and doc.total_chars == len(doc.body)
    assert doc.chunks and all(c.text for c in doc.chunks)


async def test_chunks_are_located_with_overlap_too(tmp_path) -> None:
    config = config_mod.load(write_long_document(tmp_path, chunking="max_tokens = 128\noverlap_tokens = 32"))
    async with Harness.open(config) as h:
        await h.sync()
        for section in (3, 60):
            [hit] = (await h.search(SearchRequest(query=marker(section), mode="keyword", limit=1))).results
            doc = await h.get(GetRequest(id=hit.id, chunk=hit.chunk, max_chars=2_000))
            assert words(hit.snippet.removeprefix("… ").removesuffix(" …")) in words(doc.body)
        whole = await h.get(GetRequest(id=hit.id, max_chars=0))
    stored = {c.index: c.text for c in whole.chunks}
    for c in whole.chunks:  # each chunk's own words (after the overlap) lie in its span
        assert c.start is not None and c.end is not None
        assert words(stored[c.index]).split()[-1] in BODY[c.start:c.end]


@pytest.mark.parametrize("arguments, fragment", [
    ({"offset": -1}, "offset must be 0 or more"),
    ({"chunk": -2}, "chunk must be 0 or more"),
    ({"max_chars": -5}, "max_chars must be between 0 (the whole document) and 1000000"),
    ({"max_chars": 1_000_001}, "max_chars must be between 0"),
    ({"chunk": 1, "offset": 5}, "either 'chunk' or 'offset'"),
    ({"offset": "ten"}, "offset"),
    ({"page": 2}, "page: unknown argument"),
])
def test_bad_windows_are_bad_requests(arguments, fragment) -> None:
    with pytest.raises(BadRequest) as info:
        parse_get({"id": "abc", **arguments})
    assert fragment in info.value.message


async def test_windows_outside_the_document_are_bad_requests(kb) -> None:
    doc_id = await manual_id(kb)
    whole = await kb.get(GetRequest(id=doc_id, max_chars=0))
    with pytest.raises(BadRequest, match=f"offset {len(BODY) + 1} is past the end of the document "
                                          f"\\({len(BODY)} characters\\)"):
        await kb.get(GetRequest(id=doc_id, offset=len(BODY) + 1))
    count = len(whole.chunks)
    with pytest.raises(BadRequest, match=f"chunk {count} is out of range: this document has {count} chunks"):
        await kb.get(GetRequest(id=doc_id, chunk=count))
    end = await kb.get(GetRequest(id=doc_id, offset=len(BODY)))
    assert end.body == "" and end.next_offset is None and end.chunks == []


async def test_stored_chunk_starts_are_the_spans_found_from_the_texts(kb) -> None:
    from context_harness.common.passages import chunk_spans

    doc_id = await manual_id(kb)
    chunks = kb.store.chunks(doc_id)
    stored = [(c.start, end) for c, end in zip(chunks, [*(c.start for c in chunks[1:]), len(BODY)], strict=True)]
    assert stored == chunk_spans(BODY, [c.text for c in chunks], kb.config.chunking.overlap_tokens)


async def test_chunks_stored_without_starts_are_placed_from_their_texts(kb) -> None:
    """A workspace synced before chunk starts were stored (schema 1) places hits and windows the same way
    until its next sync re-chunks it."""
    doc_id = await manual_id(kb)
    before = [(await kb.search(SearchRequest(query=marker(s), mode="keyword", limit=1))).results[0]
              for s in (3, 77)]
    window = await kb.get(GetRequest(id=doc_id, chunk=before[1].chunk))
    with kb.store.transaction() as conn:
        conn.execute("UPDATE chunks SET start=NULL")
    after = [(await kb.search(SearchRequest(query=marker(s), mode="keyword", limit=1))).results[0]
             for s in (3, 77)]
    assert [(h.chunk, h.heading) for h in after] == [(h.chunk, h.heading) for h in before]
    assert await kb.get(GetRequest(id=doc_id, chunk=before[1].chunk)) == window
    await kb.sync(full=True)
    assert None not in [c.start for c in kb.store.chunks(doc_id)]


@pytest.mark.parametrize("max_chars", [300, 2_000, None, 0])
async def test_a_window_read_alone_is_the_window_of_the_whole_document(kb, max_chars) -> None:
    """The embedded store reads a window's chunks and slice of the body alone (``windows.read_window``);
    the answer is the one computed over the whole document, for chunks and offsets anywhere."""
    from context_harness.search import windows

    doc_id = await manual_id(kb)
    row, chunks = kb.store.document_with_chunks(doc_id)
    default, overlap = kb.config.server.get_max_chars, kb.config.chunking.overlap_tokens
    requests = [GetRequest(id=doc_id, chunk=k, max_chars=max_chars) for k in range(0, len(chunks), 7)]
    requests += [GetRequest(id=doc_id, chunk=len(chunks) - 1, max_chars=max_chars)]
    requests += [GetRequest(id=doc_id, offset=o, max_chars=max_chars)
                 for o in (0, 1, 4_999, 100_000, len(BODY) - 301, len(BODY) - 1, len(BODY))]
    for request in requests:
        alone = windows.read_window(kb.store, doc_id, request, default)
        assert alone == windows.document_window(row, chunks, request, default, overlap), request
    assert windows.read_window(kb.store, doc_id, None, default) == windows.document_window(row, chunks, None,
                                                                                         default, overlap)


@pytest.fixture
async def huge(tmp_path: Path) -> AsyncIterator[tuple[Harness, str, str]]:
    """A document of about 1.3 million characters: longer than the ceiling of a ``get``."""
    body = long_markdown(1_300_000)
    config = config_mod.load(write_long_document(tmp_path))
    (tmp_path / "docs" / "manual.md").write_text(body, encoding="utf-8")
    async with Harness.open(config) as h:
        await h.sync()
        yield h, await manual_id(h), body


async def test_max_chars_zero_is_cut_at_the_ceiling_with_the_offset_to_read_on(huge) -> None:
    from context_harness.models import MAX_GET_CHARS

    h, doc_id, body = huge
    assert len(body) > MAX_GET_CHARS == 1_000_000
    # chunk 0 lies under the title, whose section is the whole document (a chunk's window is its section)
    for request in (GetRequest(id=doc_id, chunk=0, max_chars=0), GetRequest(id=doc_id, max_chars=0)):
        doc = await h.get(request)
        assert MAX_GET_CHARS * 3 // 4 <= len(doc.body) <= MAX_GET_CHARS and doc.truncated is True
        assert doc.total_chars == len(body) and doc.next_offset == doc.range.end
    rest = await h.get(GetRequest(id=doc_id, offset=doc.next_offset, max_chars=0))
    assert doc.body + rest.body == body and rest.next_offset is None
    script = h.get_sync(doc_id)  # Lua's and agents' context.get: the whole document, up to the ceiling too
    assert script.body == doc.body and script.next_offset == doc.next_offset


async def test_a_window_costs_the_window_not_the_document(huge) -> None:
    """Reading a window allocates in proportion to the window: well under the document's size (the
    whole-document read allocated its body and every chunk's text, over 2.6 MB here)."""
    import tracemalloc

    h, doc_id, body = huge
    middle = len(body) // 2
    chunk = (await h.get(GetRequest(id=doc_id, offset=middle))).chunks[0].index
    tracemalloc.start()
    try:
        for request in (GetRequest(id=doc_id, offset=middle), GetRequest(id=doc_id, chunk=chunk)):
            tracemalloc.reset_peak()
            doc = h.get_sync(doc_id, request)
            assert len(doc.body) <= 18_000
            assert tracemalloc.get_traced_memory()[1] < 400_000, request
    finally:
        tracemalloc.stop()
