"""An open Harness sees another writer's commits (here another Harness on the same workspace, with its
own SQLite connections and Tantivy index object, as another process has): keyword results at once,
semantic results after one cheap check, and no reload of anything while nothing changes."""

from __future__ import annotations

import time

import anyio
import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def fake_provider() -> None:
    fake.register()


async def titles(h: Harness, query: str, mode: str) -> list[str | None]:
    return [r.title for r in (await h.search(SearchRequest(query=query, mode=mode, limit=3))).results]


async def seconds_until(h: Harness, query: str, mode: str, title: str) -> float:
    started = time.monotonic()
    with anyio.fail_after(5):
        while title not in await titles(h, query, mode):
            await anyio.sleep(0.005)
    return time.monotonic() - started


async def test_a_reader_sees_another_writers_commits_and_reloads_nothing_meanwhile(sample_docs) -> None:
    sample_docs.config_path.write_text(sample_docs.config_path.read_text().replace('"disabled"', '"fake"'))
    config = sample_docs.config()
    async with Harness.open(config) as first:
        await first.sync()
    async with Harness.open(config) as reader, Harness.open(config) as writer:
        assert (await titles(reader, "sandbox timeout", "semantic"))[0] == "Lua Sandbox"
        assert reader.index is not None
        index, backend = reader.index.index, reader.semantic()
        vector_index = backend.index()
        calls = {"reload": 0, "refresh": 0}
        reload, refresh = index.reload, vector_index.refresh

        def counted_reload() -> None:
            calls["reload"] += 1
            reload()

        def counted_refresh() -> tuple[int, int]:
            calls["refresh"] += 1
            return refresh()

        reader.index.index = CountedReloads(index, counted_reload)
        vector_index.refresh = counted_refresh  # type: ignore[method-assign]
        for mode in ("keyword", "semantic", "hybrid") * 20:  # ~0.3 s of searches while nothing changes
            await titles(reader, "sandbox timeout", mode)
            await anyio.sleep(0.005)
        assert calls == {"reload": 0, "refresh": 0}

        sample_docs.write("otters.md", "# Otters\n\nSea otters hold hands while they sleep in kelp forests.\n")
        await writer.sync(embed=False)
        assert await seconds_until(reader, "otters kelp", "keyword", "Otters") < 0.3
        assert "Otters" not in await titles(reader, "otters kelp", "semantic")  # no vector yet
        await writer.embed()
        assert await seconds_until(reader, "otters kelp", "semantic", "Otters") < 0.5
        assert backend.index() is vector_index and calls["refresh"] >= 1  # applied, not reloaded
        assert calls["reload"] >= 1 and (await titles(reader, "otters kelp", "hybrid"))[0] == "Otters"


class CountedReloads:
    """Stands in for the ``tantivy.Index``, counting reloads."""

    def __init__(self, index, reload) -> None:
        self._index = index
        self.reload = reload

    def __getattr__(self, name: str):
        return getattr(self._index, name)
