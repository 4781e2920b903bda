"""Opening the console's search page starts loading the model and the vector index in the background,
as an MCP client's first request does, so the first hybrid search does not wait for them (about 0.9 s
with the bundled model, measured by ``benchmarks/ui.py --pages``)."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.server.http import build_app
from support.workspace import write_knowledge_base

pytestmark = pytest.mark.anyio


async def test_the_search_page_warms_up_search_in_the_background(tmp_path) -> None:
    fake.register()
    async with Harness.open(config_mod.load(write_knowledge_base(tmp_path, embedding="fake"))) as harness:
        await harness.sync()
        backend = harness.semantic()
        backend.mark_stale()
        warmed: list[str] = []
        warm = backend.embedder.warm
        backend.embedder.warm = lambda: (warmed.append("embedder"), warm())[1]
        async with harness.serving(), httpx2.AsyncClient(transport=httpx2.ASGITransport(app=build_app(harness)),
                                                          base_url="http://127.0.0.1") as ui:
            assert (await ui.get("/ui/sources")).status_code == 200
            await anyio.sleep(0.2)
            assert warmed == [], "a page other than search started the warm-up"
            assert (await ui.get("/ui/search")).status_code == 200  # the empty form, no query yet
            with anyio.fail_after(10):
                while not warmed:
                    await anyio.sleep(0.01)
            assert (await ui.get("/ui/search")).status_code == 200
        assert warmed == ["embedder"]  # once per server
        assert backend._index is not None and not backend._stale  # the vector index is loaded
        assert len(backend.embedder.query_cache) == 0  # without running a search
