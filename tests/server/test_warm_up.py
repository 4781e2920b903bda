"""The first search need not wait for the vector index and the model: a client's first request
(listing tools, as a rule) starts loading them in the background."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.server.mcp import build_server
from support.workspace import write_knowledge_base

pytestmark = pytest.mark.anyio


def cold(backend) -> list[str]:
    """Mark ``backend``'s vector index stale; returns a list that gets "embedder" when its model warms."""
    backend.mark_stale()
    warmed: list[str] = []
    warm = backend.embedder.warm
    backend.embedder.warm = lambda: (warmed.append("embedder"), warm())[1]
    return warmed


async def warmed_up(warmed: list[str]) -> None:
    with anyio.fail_after(10):
        while not warmed:
            await anyio.sleep(0.01)


async def test_listing_tools_warms_up_search_in_the_background(tmp_path) -> None:
    fake.register()
    async with Harness.open(config_mod.load(write_knowledge_base(tmp_path, embedding="fake"))) as harness:
        await harness.sync()
        backend = harness.semantic()
        warmed = cold(backend)
        async with harness.serving(), Client(build_server(harness)) as client:
            assert warmed == []  # connecting alone starts nothing
            await client.list_tools()
            await warmed_up(warmed)
            await client.list_tools()
        assert warmed == ["embedder"]  # once per server
        assert backend._index is not None and not backend._stale  # the vector index is loaded
        assert len(backend.embedder.query_cache) == 0  # without running a search


async def test_a_client_that_never_lists_tools_still_gets_a_warm_up(tmp_path) -> None:
    fake.register()
    async with Harness.open(config_mod.load(write_knowledge_base(tmp_path, embedding="fake"))) as harness:
        await harness.sync()
        backend = harness.semantic()
        warmed = cold(backend)
        async with harness.serving(), Client(build_server(harness)) as client:
            await client.list_resources()  # the first request is not tools/list
            await warmed_up(warmed)
            await client.list_prompts()
        assert warmed == ["embedder"]
        assert backend._index is not None and not backend._stale


async def test_nothing_to_warm_when_searches_would_not_use_it(tmp_path) -> None:
    fake.register()
    config_path = write_knowledge_base(tmp_path, embedding="fake")
    async with Harness.open(config_mod.load(config_path)) as harness:
        assert not harness.warm_up()  # no vectors yet
        await harness.sync()
        assert harness.warm_up()
    config_path.write_text(config_path.read_text() + '\n[retrieval]\ndefault_mode = "keyword"\n')
    async with Harness.open(config_mod.load(config_path)) as harness:
        assert not harness.warm_up()
    async with Harness.open(config_mod.load(write_knowledge_base(tmp_path / "off"))) as harness:  # disabled
        await harness.sync()
        assert not harness.warm_up()
