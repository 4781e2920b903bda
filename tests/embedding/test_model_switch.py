"""Changing the embedding model without losing search (``ingest/reembed.py``), on both backends:
searches keep answering semantically from the current vectors while a next set fills, progress shows
in ``sources``/``stats``, the swap is atomic, a switch back drops the next set, and a run killed with
SIGKILL resumes where it stopped. The embedders are the deterministic fake one registered the real
way, and a slow variant of it ("slow", 32 dims) as the new model."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import anyio
import numpy as np
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.embedding.base import EmbedderIdentity
from context_harness.embedding.providers import default_providers
from context_harness.models import SearchRequest
from support.workspace import Workspace

pytestmark = pytest.mark.anyio

OLD, NEW = "fake:hashing-bow-64:64", "slow:hashing-bow-32:32"
DOCS = 48
BACKENDS = ["embedded", "postgres"]


class SlowEmbedder(fake.FakeEmbedder):
    """The fake embedder in 32 dims under provider "slow", taking ``delay`` seconds per text."""

    delay = 0.0

    def __init__(self, dims: int = 32) -> None:
        super().__init__(dims)
        self.identity = EmbedderIdentity("slow", f"hashing-bow-{dims}", dims)

    def _embed(self, texts: list[str]) -> np.ndarray:
        time.sleep(self.delay * len(texts))
        return super()._embed(texts)


def register(delay: float = 0.0) -> None:
    SlowEmbedder.delay = delay
    fake.register()
    default_providers.register("slow", lambda config: SlowEmbedder(config.dims or 32), replace=True)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(backend: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_url") if backend == "postgres" else None


def configure(workspace: Workspace, url: str | None, embedding: str) -> config_mod.Config:
    db = 'path = "data/ctx.sqlite"\n' + (f'backend = "postgres"\nurl = "{url}"\n' if url else "")
    workspace.config_path.write_text(
        f"[db]\n{db}\n[embedding]\n{embedding}\n\n[connectors.filesystem.docs]\nroot = \"docs\"\n", encoding="utf-8")
    return workspace.config()


def write_corpus(workspace: Workspace, n: int = DOCS) -> None:
    """``n`` one-chunk notes, each with a word of its own (``word{i}``) and a shared one."""
    for i in range(n):
        workspace.write(f"note{i:03}.md", f"# Note {i}\n\nword{i} appears here beside the shared garden text {i}.\n")


async def top(h: Harness, query: str) -> tuple[str, str]:
    """(title of the first semantic result, the embedder whose vectors answered); ``wordN`` asks for
    note N in its own words (a hashed bag of words tells notes apart by whole texts, not one word)."""
    if (number := query.removeprefix("word")).isdigit():
        query = f"Note {number} word{number} appears here beside the shared garden text {number}"
    response = await h.search(SearchRequest(query=query, mode="semantic", explain=True, limit=3))
    assert response.results, f"no results for {query!r}"
    first = response.results[0]
    assert first.explain is not None
    embedder = next(n for n in first.explain.notes if n.startswith("embedder="))
    return first.title or "", embedder.removeprefix("embedder=")


async def synced_with_old_model(workspace: Workspace, url: str | None) -> config_mod.Config:
    register()
    write_corpus(workspace)
    async with Harness.open(configure(workspace, url, 'provider = "fake"')) as h:
        assert (await h.sync()).embedding.embedded == DOCS
    return configure(workspace, url, 'provider = "slow"\ndims = 32\nbatch_size = 1')


async def test_a_switch_searches_the_old_vectors_shows_progress_and_swaps(workspace: Workspace, url: str | None) -> None:
    new_config = await synced_with_old_model(workspace, url)
    old_config = configure(workspace, url, 'provider = "fake"')
    async with Harness.open(new_config) as h, Harness.open(old_config) as replica:
        assert await top(replica, "word7") == ("Note 7", OLD)  # a replica whose config is not changed yet
        status = (await h.stats()).embedding
        assert status["mismatch"] and status["switch"] is None and status["stored_identity"] == OLD
        assert await top(h, "word7") == ("Note 7", OLD)  # the old vectors, queried with the old embedder

        summary = await h.embed(limit=16)  # part of the switch, as a run cut short would leave it
        assert summary.embedded == 16 and summary.pending == DOCS - 16 and summary.embedder == NEW
        for status in ((await h.stats()).embedding, (await h.sources()).embedding):
            assert status["switch"] == {"to": NEW, "done": 16, "total": DOCS,
                                        "text": f"re-embedding for hashing-bow-32: 16 of {DOCS} chunks"}
        assert await top(h, "word30") == ("Note 30", OLD)
        cover = (await h.search(SearchRequest(query="word30", explain=True))).explain
        assert cover is not None and (cover.mode, cover.embedder) == ("hybrid", OLD)
        assert cover.switch == f"re-embedding for hashing-bow-32: 16 of {DOCS} chunks"

        summary = await h.embed()
        assert summary.embedded == DOCS - 16 and summary.pending == 0
        status = (await h.stats()).embedding
        assert status["switch"] is None and not status["mismatch"]
        assert status["stored_identity"] == NEW and status["vectors"] == DOCS
        assert await top(h, "word30") == ("Note 30", NEW)
        await anyio.sleep(0.15)  # a replica looks for another process's writes every 0.1 s
        assert await top(replica, "word30") == ("Note 30", NEW)  # follows the swap, with the new set's embedder
        assert h.vectors is not None
        meta = h.vectors.meta()  # type: ignore[attr-defined]
        assert not [key for key in meta if key.startswith("next.")] and meta["identity"] == NEW
    async with Harness.open(new_config) as h:  # a new process: the new set, nothing left to do
        assert await top(h, "word12") == ("Note 12", NEW)
        assert (await h.embed()).embedded == 0
    if url is None:  # the old set is gone with the swap
        with sqlite3.connect(workspace.root / "data" / "ctx.sqlite") as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            dims = {len(row[0]) // 4 for row in conn.execute("SELECT vector FROM embeddings")}
        assert "embeddings_next" not in tables and dims == {32}


async def test_vectors_stored_before_settings_were_recorded_are_searched_too(workspace: Workspace) -> None:
    """Vectors from before this version carry no settings: their embedder is found from the identity."""
    new_config = await synced_with_old_model(workspace, None)
    with sqlite3.connect(workspace.root / "data" / "ctx.sqlite") as conn:
        assert conn.execute("DELETE FROM embedding_meta WHERE key = 'config'").rowcount == 1
    async with Harness.open(new_config) as h:
        assert await top(h, "word21") == ("Note 21", OLD)
        await h.embed()
        assert await top(h, "word21") == ("Note 21", NEW)


async def test_searches_answer_throughout_and_the_swap_is_atomic(workspace: Workspace, url: str | None) -> None:
    new_config = await synced_with_old_model(workspace, url)
    SlowEmbedder.delay = 0.02  # 8 texts a commit: ~0.16 s each, ~1 s for the switch
    seen: list[str] = []
    progress: list[int] = []
    finished = anyio.Event()
    async with Harness.open(new_config) as h:

        async def search_meanwhile() -> None:
            deadline = time.monotonic() + 60
            i = 0
            while not finished.is_set():
                assert time.monotonic() < deadline, "the switch did not finish within 60 s"
                word = i % DOCS
                title, embedder = await top(h, f"word{word}")
                assert title == f"Note {word}"  # a query vector never meets the other set's vectors
                seen.append(embedder)
                switch = (await h.stats()).embedding["switch"]
                if switch is not None:
                    progress.append(switch["done"])
                i += 1
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(search_meanwhile)
            await anyio.sleep(0.1)
            summary = await h.embed()
            await anyio.sleep(0.2)  # the index of this process follows the swap
            finished.set()
        assert summary.embedded == DOCS
        assert await top(h, "word3") == ("Note 3", NEW)
    assert seen[0] == OLD and set(seen) <= {OLD, NEW}
    flips = [i for i in range(1, len(seen)) if seen[i] != seen[i - 1]]
    assert len(flips) <= 1, f"the searched set went back and forth: {seen}"  # swapped once, never back
    assert any(0 < done < DOCS for done in progress), f"no progress seen mid-switch: {progress}"
    assert progress == sorted(progress)


async def test_a_serving_knowledge_base_switches_by_itself(workspace: Workspace, url: str | None) -> None:
    """``serving()``: the sync on start asks for the background embedding, which runs the switch."""
    await synced_with_old_model(workspace, url)
    SlowEmbedder.delay = 0.005
    config = configure(workspace, url, 'provider = "slow"\ndims = 32\nbatch_size = 1')
    workspace.config_path.write_text(workspace.config_path.read_text() + "\n[server]\nwatch = false\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        assert config.server.sync_on_start
        deadline = time.monotonic() + 30
        while (await h.stats()).embedding["stored_identity"] != NEW:
            assert time.monotonic() < deadline, "the server did not switch within 30 s"
            title, _ = await top(h, "word11")
            assert title == "Note 11"
            await anyio.sleep(0.02)
        await anyio.sleep(0.15)
        assert await top(h, "word11") == ("Note 11", NEW)


async def test_progress_reads_never_fail_while_sets_are_swapped(workspace: Workspace, url: str | None) -> None:
    """The progress read (what ``stats``, ``sources`` and ``explain`` show) in another thread through
    20 swaps: the next set's table goes away under it (on PostgreSQL that was an UndefinedTable error
    in 39 of 40 swaps before it was caught)."""
    import threading

    await synced_with_old_model(workspace, url)
    async with Harness.open(configure(workspace, url, 'provider = "fake"')) as h:
        vectors = h.vectors
        assert vectors is not None
        failures: list[str] = []
        reads = [0]
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                try:
                    vectors.next_counts()  # type: ignore[attr-defined]
                    reads[0] += 1
                except Exception as exc:
                    failures.append(repr(exc))

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for i in range(20):
                identity = EmbedderIdentity("fake", f"hashing-bow-{32 + i % 2}", 32 + i % 2)
                vectors.begin_next(identity, "{}")  # type: ignore[attr-defined]
                pending = vectors.pending_next()  # type: ignore[attr-defined]
                vectors.put_next([(p.content_hash, np.ones(identity.dims)) for p in pending])  # type: ignore[attr-defined]
                assert vectors.swap_next()  # type: ignore[attr-defined]
        finally:
            stop.set()
            reader.join(30)
        assert not failures, failures[:3]
        assert reads[0] > 0


async def test_switching_back_before_the_end_drops_the_next_set(workspace: Workspace, url: str | None) -> None:
    new_config = await synced_with_old_model(workspace, url)
    async with Harness.open(new_config) as h:
        await h.embed(limit=8)
        assert (await h.stats()).embedding["switch"]["done"] == 8
    async with Harness.open(configure(workspace, url, 'provider = "fake"')) as h:  # back to the old model
        status = (await h.stats()).embedding
        assert status["switch"] is None and not status["mismatch"]
        assert (await h.embed()).embedded == 0  # nothing to embed again: the old set is whole
        assert h.vectors is not None and h.vectors.next_identity() is None  # type: ignore[attr-defined]
        assert await top(h, "word5") == ("Note 5", OLD)
    async with Harness.open(new_config) as h:  # and forward again: from zero, the next set was dropped
        summary = await h.embed()
        assert summary.embedded == DOCS and (await h.stats()).embedding["stored_identity"] == NEW


async def test_chunks_added_during_a_switch_are_searchable_in_both_sets(workspace: Workspace, url: str | None) -> None:
    new_config = await synced_with_old_model(workspace, url)
    async with Harness.open(new_config) as h:
        await h.embed(limit=8)
        workspace.write(f"note{DOCS:03}.md", f"# Note {DOCS}\n\nword{DOCS} appears here beside the shared garden "
                        f"text {DOCS}.\n")
        await h.sync(embed=False)
        await h.embed(limit=8)  # the new chunk goes into the current set too, with the current set's embedder
        assert await top(h, f"word{DOCS}") == (f"Note {DOCS}", OLD)
        assert (await h.stats()).embedding["pending_chunks"] == 0
        summary = await h.embed()
        assert summary.pending == 0 and (await h.stats()).embedding["vectors"] == DOCS + 1
        assert await top(h, f"word{DOCS}") == (f"Note {DOCS}", NEW)


async def test_rebuild_still_replaces_everything_at_once(workspace: Workspace, url: str | None) -> None:
    new_config = await synced_with_old_model(workspace, url)
    async with Harness.open(new_config) as h:
        await h.embed(limit=8)
        summary = await h.embed(rebuild=True)
        assert summary.embedded == DOCS and summary.embedder == NEW
        status = (await h.stats()).embedding
        assert status["switch"] is None and status["stored_identity"] == NEW
        assert await top(h, "word9") == ("Note 9", NEW)


_KILLED_RUN = textwrap.dedent("""
    import sys, time, anyio
    from context_harness import config
    from context_harness.core.harness import Harness
    from context_harness.embedding import fake
    from context_harness.embedding.base import EmbedderIdentity
    from context_harness.embedding.providers import default_providers

    class Slow(fake.FakeEmbedder):  # SlowEmbedder of the test, 0.05 s a text
        def __init__(self):
            super().__init__(32)
            self.identity = EmbedderIdentity("slow", "hashing-bow-32", 32)

        def _embed(self, texts):
            time.sleep(0.05 * len(texts))
            return super()._embed(texts)

    fake.register()
    default_providers.register("slow", lambda config: Slow(), replace=True)

    async def main():
        async with Harness.open(config.load(sys.argv[1])) as h:
            await h.embed()

    anyio.run(main)
""")


@pytest.mark.slow
async def test_a_switch_killed_midway_resumes_where_it_stopped(workspace: Workspace, url: str | None) -> None:
    new_config = await synced_with_old_model(workspace, url)
    errors = workspace.root / "child-stderr.txt"
    with errors.open("wb") as stderr:
        child = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(workspace.config_path)],
                                 stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        done = 0
        async with Harness.open(new_config) as h:  # reads as the child writes
            deadline = time.monotonic() + 60
            while not 16 <= done < DOCS:
                assert child.poll() is None, errors.read_text()
                assert time.monotonic() < deadline, "the child never got a third of the way"
                switch = (await h.stats()).embedding["switch"]
                done = switch["done"] if switch else 0
                await anyio.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    register()
    async with Harness.open(new_config) as h:
        kept = (await h.stats()).embedding["switch"]["done"]
        assert 16 <= kept < DOCS  # what the killed run committed is still there
        assert await top(h, "word40") == ("Note 40", OLD)  # and searches still use the old set
        summary = await h.embed()
        assert summary.embedded == DOCS - kept  # resumed: only what was left
        assert (await h.stats()).embedding["stored_identity"] == NEW
        assert await top(h, "word40") == ("Note 40", NEW)


async def test_the_console_shows_a_switch_as_progress_not_as_an_error(workspace: Workspace) -> None:
    """The sources page during a switch: how far it is and which vectors searches use meanwhile;
    before it starts: that it will; never "run ctx embed rebuild" in the error's colour."""
    import html
    import re

    import httpx2

    from context_harness.server.http import build_app

    async def overview(h: Harness) -> str:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=build_app(h)),
                                      base_url="http://127.0.0.1") as ui:
            page = (await ui.get("/ui/sources")).text
        found = re.search(r'<dd id="embedding-summary">(.*?)</dd>', page, re.S)
        assert found, page
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())

    async with Harness.open(await synced_with_old_model(workspace, None)) as h:
        before = await overview(h)
        assert f"embedded by {OLD}; the configured model is {NEW}: re-embedding for it starts" in before
        assert "ctx embed rebuild" not in before
        await h.embed(limit=16)
        during = await overview(h)
        assert f"{DOCS} of {DOCS} chunks embedded by {OLD}; re-embedding for hashing-bow-32: 16 of {DOCS} chunks; " \
            f"searches use {OLD} until then" in during and "ctx embed rebuild" not in during
