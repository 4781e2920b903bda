"""Documents as MCP resources: listed after the agent catalog, by id, in pages."""

from __future__ import annotations

import pytest
from mcp import Client

from context_harness.harness import Harness
from context_harness.server.mcp import PAGE_SIZE, build_server

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


async def list_all(client: Client) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        result = await client.list_resources(cursor=cursor, cache_mode="refresh")
        pages.append([r.uri for r in result.resources])
        cursor = result.next_cursor
        if cursor is None:
            return pages


async def test_documents_are_listed_after_the_catalog_in_pages(workspace, mode) -> None:
    workspace.write_config('[agents.helper]\ndescription = "Helps"\nsystem_prompt = "Help."\n')
    for i in range(PAGE_SIZE + 30):
        workspace.write(f"note{i:03d}.md", f"# Note {i}\n\nText {i}.\n")
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        ids = sorted(d.id for d in harness.document_listing_sync(limit=1000).documents)
        async with Client(build_server(harness), mode=mode) as client:
            pages = await list_all(client)
    assert [len(p) for p in pages] == [PAGE_SIZE, 31]  # the catalog's last page is filled with documents
    uris = [uri for page in pages for uri in page]
    assert uris == ["agent://helper", *(f"ctx://documents/{doc_id}" for doc_id in ids)]  # no gaps, no repeats
    assert len(ids) == PAGE_SIZE + 30


async def test_an_empty_knowledge_base_lists_only_the_catalog(workspace, mode) -> None:
    workspace.write_config('[agents.helper]\ndescription = "Helps"\nsystem_prompt = "Help."\n')
    async with Harness.open(workspace.config()) as harness:
        async with Client(build_server(harness), mode=mode) as client:
            assert await list_all(client) == [["agent://helper"]]


async def test_document_listing_pages_by_id(workspace) -> None:
    for i in range(7):
        workspace.write(f"n{i}.md", f"# N{i}\n\nbody\n")
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        seen, cursor = [], None
        while True:
            page = await harness.document_listing(cursor, 3)
            assert len(page.documents) <= 3
            seen.extend(d.id for d in page.documents)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == sorted(seen) and len(set(seen)) == 7
        assert {d.title for d in (await harness.document_listing(None, 10)).documents} == {f"N{i}" for i in range(7)}
