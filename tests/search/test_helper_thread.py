"""Hybrid search ranks BM25 on a helper thread while the query embeds (``search/helper_thread.py``)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import SearchRequest
from context_harness.search import helper_thread
from context_harness.search.helper_thread import HelperThreadJob


@pytest.fixture(autouse=True)
def two_cpus(monkeypatch) -> None:
    """Helpers run wherever the tests run (on one CPU the product runs the work in turn instead)."""
    monkeypatch.setattr(helper_thread, "_CPUS", max(helper_thread._cpus(), 2))


def where(on_helper: bool) -> tuple[int, bool]:
    return threading.get_ident(), on_helper


def test_started_work_runs_on_a_helper_and_unstarted_work_runs_here() -> None:
    here = threading.get_ident()
    started = HelperThreadJob(where)
    started.start()
    future = started.future
    started.start()  # at most once
    assert started.future is future
    thread, on_helper = started.result()
    assert thread != here and on_helper
    assert HelperThreadJob(where).result() == (here, False)


def test_errors_reach_the_caller() -> None:
    job = HelperThreadJob(lambda _: 1 / 0)
    job.start()
    with pytest.raises(ZeroDivisionError):
        job.result()
    with pytest.raises(ZeroDivisionError):
        HelperThreadJob(lambda _: 1 / 0).result()


@pytest.mark.skipif(not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
                    reason="moving between CPUs needs Linux and two allowed CPUs")
def test_a_helper_on_its_callers_cpu_moves_for_the_job_and_back() -> None:
    before = os.sched_getaffinity(0)
    cpu = helper_thread._cpu()
    assert cpu in before
    seen_cpu, seen_allowed = helper_thread._away_from(cpu, lambda _: (helper_thread._cpu(), os.sched_getaffinity(0)))
    assert seen_cpu != cpu
    assert cpu not in seen_allowed or seen_allowed == before  # moved, unless the scheduler already had
    assert os.sched_getaffinity(0) == before
    # No caller CPU known (-1): nothing moves.
    assert helper_thread._away_from(-1, lambda _: os.sched_getaffinity(0)) == before


@pytest.mark.anyio
async def test_hybrid_ranks_keywords_beside_a_fresh_embedding_and_in_turn_for_a_cached_one(sample_docs,
                                                                                         monkeypatch) -> None:
    fake.register()
    sample_docs.config_path.write_text(
        sample_docs.config_path.read_text().replace('provider = "disabled"', 'provider = "fake"'))
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        seen: dict[str, int] = {}
        index_search = h.engine.index.search
        embedder = h.semantic().embedder
        embed = embedder._embed

        def keyword_spy(*args):
            seen["keyword"] = threading.get_ident()
            return index_search(*args)

        def embed_spy(texts):
            seen["embed"] = threading.get_ident()
            return embed(texts)

        summary_threads: list[int] = []
        summaries = h.store.summaries

        def summaries_spy(*args, **kwargs):
            summary_threads.append(threading.get_ident())
            return summaries(*args, **kwargs)

        h.engine.index.search = keyword_spy
        embedder._embed = embed_spy
        monkeypatch.setattr(h.engine.store, "summaries", summaries_spy)
        request = SearchRequest(query="sandbox timeout memory", mode="hybrid", explain=True)
        fresh = h.search_sync(request)
        assert seen["embed"] == threading.get_ident() and seen["keyword"] != threading.get_ident()
        # The helper also read the keyword hits' rows, for rendering.
        assert summary_threads.count(seen["keyword"]) == 1
        seen.clear()
        summary_threads.clear()
        cached = h.search_sync(request)
        assert "embed" not in seen and seen["keyword"] == threading.get_ident()
        assert set(summary_threads) == {threading.get_ident()}
        assert fresh == cached and fresh.results[0].title == "Lua Sandbox"
        assert fresh.results[0].explain.keyword_rank == 1 and fresh.results[0].explain.semantic_rank == 1


@pytest.mark.anyio
async def test_an_embedding_failure_still_waits_for_the_keyword_half(sample_docs) -> None:
    fake.register()
    sample_docs.config_path.write_text(
        sample_docs.config_path.read_text().replace('provider = "disabled"', 'provider = "fake"'))
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        finished = threading.Event()
        index_search = h.engine.index.search

        def slow_keyword(*args):
            finished.wait(0.2)  # still running when the embedding fails
            hits = index_search(*args)
            finished.set()
            return hits

        def broken(texts):
            raise RuntimeError("the model fell over")

        h.engine.index.search = slow_keyword
        h.semantic().embedder._embed = broken
        with pytest.raises(RuntimeError, match="fell over"):
            h.search_sync(SearchRequest(query="sandbox", mode="hybrid"))
        assert finished.is_set()  # the helper's work was over before the error reached the caller


def test_on_one_cpu_work_runs_in_turn(monkeypatch) -> None:
    monkeypatch.setattr(helper_thread, "_CPUS", 1)
    job = HelperThreadJob(where)
    job.start()
    assert job.future is None and job.result() == (threading.get_ident(), False)


@pytest.mark.anyio
async def test_concurrent_hybrid_searches_get_the_answers_of_searches_in_turn(sample_docs) -> None:
    from concurrent.futures import ThreadPoolExecutor

    fake.register()
    sample_docs.config_path.write_text(
        sample_docs.config_path.read_text().replace('provider = "disabled"', 'provider = "fake"'))
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        words = ["sandbox", "timeout", "memory", "tantivy", "rust", "notes", "deployment", "engines", "lua"]
        queries = [f"{a} {b}" for a in words for b in words if a != b][:40]
        embedder = h.semantic().embedder
        expected = {}
        for q in queries:
            embedder.query_cache.clear()  # every query embeds, so every search uses a helper
            expected[q] = h.search_sync(SearchRequest(query=q, mode="hybrid", explain=True))
        embedder.query_cache.clear()
        with ThreadPoolExecutor(max_workers=8) as pool:  # more searches at once than helper threads
            answers = list(pool.map(lambda q: h.search_sync(SearchRequest(query=q, mode="hybrid", explain=True)),
                                    queries))
        assert answers == [expected[q] for q in queries]


def test_a_helper_competing_with_another_helper_does_no_extras() -> None:
    entered, release = threading.Event(), threading.Event()

    def first(spare: bool) -> bool:
        entered.set()
        release.wait(5)
        return spare

    alone = HelperThreadJob(first)
    alone.start()
    assert entered.wait(5)
    crowded = HelperThreadJob(lambda spare: spare)
    crowded.start()
    assert crowded.result() is False  # another helper job holds a CPU: no spare time for extras
    release.set()
    assert alone.result() is True


def test_a_job_queued_behind_busy_helpers_runs_on_its_caller() -> None:
    release = threading.Event()
    entered = threading.Semaphore(0)

    def busy(_: bool) -> None:
        entered.release()
        release.wait(5)

    blockers = [HelperThreadJob(busy) for _ in range(helper_thread.MAX_HELPERS)]
    try:
        for blocker in blockers:
            blocker.start()
        for _ in blockers:
            assert entered.acquire(timeout=5)
        job = HelperThreadJob(where)
        job.start()
        assert job.result() == (threading.get_ident(), False)  # not left waiting for a helper to free up
        assert job.future is not None and job.future.cancelled()  # ran once, here
    finally:
        release.set()
        for blocker in blockers:
            blocker.result()
