"""Documents as MCP resources: listed after the agent catalog, by id, in pages; subscribers hear
``resources/updated`` when their document changes and ``resources/list_changed`` when documents come
or go (2025-era ``resources/subscribe`` and 2026-07-28 listen streams)."""

from __future__ import annotations

import warnings

import anyio
import mcp.types as t
import pytest
from mcp import Client, MCPError
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated

from context_harness.core.harness import Harness
from context_harness.server.mcp import PAGE_SIZE, build_server
from context_harness.store.records import document_id

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


# -- subscriptions: resources/updated and resources/list_changed ---------------------------------

async def subscribed_workspace(workspace) -> None:
    workspace.write("alpha.md", "# Alpha\n\nFirst words.\n")
    workspace.write("beta.md", "# Beta\n\nOther words.\n")


def doc_uri(source_id: str) -> str:
    return "ctx://documents/" + document_id("filesystem:docs", source_id)


async def test_legacy_subscribers_hear_of_their_document_and_of_the_list(workspace) -> None:
    await subscribed_workspace(workspace)
    updated: list[str] = []
    list_changed = anyio.Event()
    got_update = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, t.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            got_update.set()
        elif isinstance(message, t.ResourceListChangedNotification):
            list_changed.set()

    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        alpha, beta = doc_uri("alpha.md"), doc_uri("beta.md")
        async with Client(build_server(harness), mode="legacy", message_handler=on_message) as client:
            capabilities = client.server_capabilities.resources
            assert capabilities is not None and capabilities.subscribe and capabilities.list_changed
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # resources/subscribe is deprecated for 2026-era servers only
                await client.subscribe_resource(alpha)
                await client.subscribe_resource(alpha + "?chunk=0")
                with pytest.raises(MCPError, match="only documents"):
                    await client.subscribe_resource("agent://nobody")
            workspace.write("beta.md", "# Beta\n\nChanged, but nobody asked.\n")
            await harness.sync()
            workspace.write("alpha.md", "# Alpha\n\nNew words.\n")
            await harness.sync()
            with anyio.fail_after(5):
                await got_update.wait()
                await anyio.sleep(0.2)  # both URIs of the subscription
            assert sorted(updated) == [alpha, alpha + "?chunk=0"] and beta not in updated
            assert not list_changed.is_set()  # nothing came or went
            workspace.write("gamma.md", "# Gamma\n\nNew document.\n")
            await harness.sync()
            with anyio.fail_after(5):
                await list_changed.wait()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.unsubscribe_resource(alpha)
                await client.unsubscribe_resource(alpha + "?chunk=0")
            updated.clear()
            workspace.write("alpha.md", "# Alpha\n\nOnce more.\n")
            await harness.sync()
            await anyio.sleep(0.3)
            assert updated == []


async def test_listen_streams_hear_of_their_document_and_of_the_list(workspace) -> None:
    await subscribed_workspace(workspace)
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        alpha = doc_uri("alpha.md")
        async with Client(build_server(harness)) as client:
            async with client.listen(resources_list_changed=True, resource_subscriptions=[alpha]) as subscription:
                workspace.write("beta.md", "# Beta\n\nChanged, but nobody asked.\n")
                workspace.write("alpha.md", "# Alpha\n\nNew words.\n")
                await harness.sync()
                with anyio.fail_after(5):
                    assert await subscription.__anext__() == ResourceUpdated(uri=alpha)
                (workspace.docs / "beta.md").unlink()
                await harness.sync()
                with anyio.fail_after(5):
                    assert isinstance(await subscription.__anext__(), ResourcesListChanged)


async def test_a_watched_edit_reaches_a_subscriber_without_a_sync_call(workspace) -> None:
    await subscribed_workspace(workspace)
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        alpha = doc_uri("alpha.md")
        async with harness.serving(), Client(build_server(harness)) as client:
            async with client.listen(resource_subscriptions=[alpha]) as subscription:
                await anyio.sleep(0.5)  # the watcher is up
                workspace.write("alpha.md", "# Alpha\n\nSaved in an editor.\n")
                with anyio.fail_after(10):
                    assert await subscription.__anext__() == ResourceUpdated(uri=alpha)
            text = (await client.read_resource(alpha)).contents[0].text
            assert "Saved in an editor." in text
