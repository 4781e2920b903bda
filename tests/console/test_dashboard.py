"""The console's sources dashboard through the real app (a real Harness over a temporary workspace,
the HTTP app under uvicorn on 127.0.0.1 in the test's own event loop, so the test can embed beside it): totals, per-source counts and text sizes as the store holds them,
recent changes, and the embedding wording — "awaiting" with the button to press when nothing embeds,
"being embedded now" (never `ctx embed pending`) while this process embeds, in the page and in the
live rows alike."""

from __future__ import annotations

import html
import re
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
import uvicorn

from context_harness.console.sources import size_text, took_text
from context_harness.core.harness import Harness
from context_harness.embedding.fake import FakeEmbedder
from context_harness.embedding.providers import default_providers
from context_harness.errors import HarnessError
from context_harness.models import RecentRequest
from context_harness.server.http import build_app
from support.http import free_port

pytestmark = pytest.mark.anyio
LABEL = "filesystem:docs"


def row_of(page: str) -> str:
    match = re.search(rf'<tr data-source="{LABEL}">(.*?)</tr>', page, re.S)
    assert match, page
    return match.group(1)


def cells(row: str) -> list[str]:
    """The text of each ``<td>`` of a row, its whitespace collapsed."""
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split())
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


@asynccontextmanager
async def serving(h: Harness) -> AsyncIterator[httpx2.AsyncClient]:
    """The console of ``h`` served on a free port of 127.0.0.1, and a client of it."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(h), host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.02)
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as ui:
            yield ui
        server.should_exit = True


async def first_events(ui: httpx2.AsyncClient) -> dict[str, str]:
    """The first ``sources`` (the rows) and ``overview`` (the figures) events of ``/ui/sources/events``."""
    found: dict[str, str] = {}
    with anyio.fail_after(10):
        async with ui.stream("GET", "/ui/sources/events") as events:
            data: list[str] = []
            event = ""
            async for line in events.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and data:
                    found[event], data = "\n".join(data), []
                    if set(found) == {"sources", "overview"}:
                        return found
    raise AssertionError(f"the stream ended with {sorted(found)}")


async def test_the_dashboard_shows_counts_sizes_changes_and_the_right_embedding_wording(sample_docs) -> None:
    started, release = threading.Event(), threading.Event()

    class GatedEmbedder(FakeEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            started.set()
            release.wait(10)
            return super().embed_documents(texts)

    default_providers.register("gated", lambda config: GatedEmbedder(), replace=True)
    sample_docs.write("café.md", "# Café\n\nThe café by the quay serves crème brûlée.\n")  # bytes, not characters
    sample_docs.config_path.write_text(sample_docs.config_path.read_text().replace('"disabled"', '"gated"'))
    async with Harness.open(sample_docs.config()) as h:
        await h.sync(embed=False)  # indexed, nothing embedded yet
        listing = await h.document_listing()
        expected = sum([len((await h.get(d.id)).body.encode("utf-8")) for d in listing.documents])
        source = (await h.sources()).sources[0]
        changes = (await h.recent(RecentRequest(source=LABEL))).changes
        async with serving(h) as ui:
            page = (await ui.get("/ui/sources")).text
            row = cells(row_of(page))
            assert row[2:5] == [str(source.document_count), str(source.chunk_count), size_text(expected)]
            assert f'<data value="{expected}">' in page and expected > 0
            assert row[5] == f"0 of {source.chunk_count} embedded {source.chunk_count} chunks awaiting embeddings"
            summary = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", re.search(
                r'<dd id="embedding-summary">(.*?)</dd>', page, re.S).group(1))).split())
            assert summary == (f"0 of {source.chunk_count} chunks embedded by fake:hashing-bow-64:64; "
                               f"{source.chunk_count} chunks awaiting embeddings: Embed pending below embeds them")
            assert "ctx embed pending" not in page, "the page has the button: it need not send people to the CLI"
            history = re.findall(r'<li><time datetime="([^"]+)">', page)
            assert len(history) == len(changes) == 4 and history == [c.at for c in changes]
            assert f'href="/ui/doc?id={changes[0].id}"' in page
            async with anyio.create_task_group() as tg:
                tg.start_soon(h.embed)
                await anyio.to_thread.run_sync(started.wait, 10)
                busy = (await ui.get("/ui/sources")).text
                live = await first_events(ui)
                release.set()
            for shown in (busy, live["sources"], live["overview"]):
                assert f"{source.chunk_count} chunks being embedded now" in " ".join(shown.split())
                assert "awaiting" not in shown and "ctx embed pending" not in shown
            assert "embedded" not in cells(row_of(busy))[0], "the status column repeats the embeddings column"
            done = cells(row_of((await ui.get("/ui/sources")).text))
            assert done[5] == f"{source.chunk_count} of {source.chunk_count} embedded"


def sync_rows(page: str) -> list[list[str]]:
    """The cells of each row of the sync history table of ``LABEL``."""
    match = re.search(rf'<table class="syncs" data-source="{LABEL}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert match, page
    return [cells(row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", match.group(1), re.S)]


async def test_a_failed_sync_shows_its_own_time_and_the_last_good_one(sample_docs) -> None:
    """The stored outcome of a whole sync (another process's, here a Harness closed since) gives the
    time beside "error"; the last successful sync's time is named as such. The sync history lists
    both syncs, newest first: the failed one with its own time beside its error, the good one with
    its counts."""
    import shutil
    import time

    async with Harness.open(sample_docs.config()) as h:
        added = (await h.sync()).sources[0].added
        good = (await h.sources()).sources[0].last_sync
    time.sleep(1.1)  # times are to the second
    shutil.rmtree(sample_docs.docs)
    async with Harness.open(sample_docs.config()) as h:
        with pytest.raises(HarnessError, match="does not exist|not found|missing"):
            await h.sync(LABEL)
    async with Harness.open(sample_docs.config()) as h:  # a fresh process: only the stored outcome knows
        detail = (await h.source_details())[LABEL]
        assert detail.outcome == "error" and detail.ended_at is not None and detail.ended_at > good
        app = build_app(h)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as ui:
            page = (await ui.get("/ui/sources")).text
            row = row_of(page)
        history = await h.sync_history(LABEL)
    assert cells(row)[6] == f"{detail.ended_at} · error last successful: {good}"
    assert "not a log of every sync" not in page
    failed, ok = history
    assert sync_rows(page) == [
        [detail.ended_at, f"error: {detail.error}", "—", "—", "—", "—", "—", took_text(failed["seconds"])],
        [ok["ended_at"], "ok", str(added), "0", "0", "0", "0", took_text(ok["seconds"])]]
    assert failed["ended_at"] == detail.ended_at and added == 3
    assert f'<time datetime="{detail.ended_at}">{detail.ended_at}</time></td>\n      <td><span class="error">error: ' \
        in page


def test_how_long_a_sync_took_reads_well() -> None:
    assert [took_text(s) for s in (0.04, 0.4, 9.96, 12.4, 59.6, 185, 7_800)] == \
        ["under 0.1 s", "0.4 s", "10 s", "12 s", "1 min 0 s", "3 min 5 s", "2 h 10 min"]
