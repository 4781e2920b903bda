"""The optional reranker (``[retrieval] rerank``) against a real local ``/rerank`` endpoint on 127.0.0.1,
and the local cross-encoder's refusal when the model is not in the cache."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from mcp import Client

from context_harness.common import redaction
from context_harness.core.harness import Harness
from context_harness.errors import NotConfigured
from context_harness.models import SearchRequest
from context_harness.search.rerank import RerankFailed, parse_scores
from context_harness.server.mcp import build_server
from support.unruly import unruly_server

pytestmark = pytest.mark.anyio
KEY = "sk-rerank-test-0123456789abcdef"


class FakeRerank:
    """What the endpoint does: ``behaviour`` is "score" (documents naming ``favourite`` score high),
    "slow", "500", "garbage" or "answer" (``answer``'s bytes); ``seen`` keeps each request's
    Authorization header and body."""

    def __init__(self) -> None:
        self.behaviour = "score"
        self.favourite = "Lua"
        self.answer = b""
        self.seen: list[tuple[str | None, dict[str, Any]]] = []


@pytest.fixture
def endpoint() -> Iterator[tuple[str, FakeRerank]]:
    fake = FakeRerank()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.seen.append((self.headers.get("Authorization"), body))
            if fake.behaviour == "slow":
                time.sleep(3)
            if fake.behaviour == "500":
                self.send_response(500)
                self.end_headers()
                return
            answer: Any = b"not json {" if fake.behaviour == "garbage" else b"[" * 100_000 + b"]" * 100_000 \
                if fake.behaviour == "deep" else fake.answer if fake.behaviour == "answer" \
                else json.dumps({"results": [
                {"index": i, "relevance_score": 0.9 if fake.favourite in doc else 0.1 - i / 100}
                for i, doc in enumerate(body["documents"])]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False  # server_close waits for a slow answer still being written
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/rerank", fake
    server.shutdown()
    server.server_close()


def rerank_config(sample_docs, monkeypatch, url: str, **extra: Any) -> Any:
    monkeypatch.setenv("RERANK_TEST_KEY", KEY)
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in extra.items())
    sample_docs.write_config(f'[retrieval]\nrerank = "http"\nrerank_url = "{url}"\nrerank_model = "tiny"\n'
                             f'rerank_api_key = "${{RERANK_TEST_KEY}}"\n{lines}')
    return sample_docs.config()


async def titles(h: Harness, query: str, **kw: Any) -> tuple[list[str | None], Any]:
    response = await h.search(SearchRequest(query=query, mode="keyword", **kw))
    return [r.title for r in response.results], response


async def test_the_endpoints_scores_reorder_results_and_explain_shows_them(sample_docs, endpoint, monkeypatch,
                                                                           caplog) -> None:
    url, fake = endpoint
    caplog.set_level(logging.DEBUG)
    async with Harness.open(sample_docs.config()) as plain:
        await plain.sync()
        fused, _ = await titles(plain, "engines sandbox timeout")
    assert fused[0] != "Lua Sandbox" or len(fused) > 1
    async with Harness.open(rerank_config(sample_docs, monkeypatch, url)) as h:
        await h.sync()
        for favourite in ("Search Engines", "Lua"):
            fake.favourite = favourite
            order, response = await titles(h, "engines sandbox timeout", explain=True)
            assert sorted(order, key=str) == sorted(fused, key=str)
            assert favourite in (order[0] or "")
            assert response.notice is None
            assert response.results[0].explain.rerank_score == 0.9
            assert all(r.explain.rerank_score < 0.5 for r in response.results[1:])
    authorization, body = fake.seen[-1]
    assert authorization == f"Bearer {KEY}"
    assert body["model"] == "tiny" and body["query"] == "engines sandbox timeout"
    assert body["top_n"] == len(body["documents"]) == len(fused)
    assert KEY not in caplog.text


async def test_top_n_reranks_only_the_head(sample_docs, endpoint, monkeypatch) -> None:
    url, fake = endpoint
    async with Harness.open(sample_docs.config()) as plain:
        await plain.sync()
        fused, _ = await titles(plain, "engines sandbox timeout")
    assert len(fused) == 3
    fake.favourite = "Lua" if fused[2] == "Lua Sandbox" else (fused[1] or "")
    async with Harness.open(rerank_config(sample_docs, monkeypatch, url, rerank_top_n=2)) as h:
        await h.sync()
        order, _ = await titles(h, "engines sandbox timeout")
    assert len(fake.seen[-1][1]["documents"]) == 2
    assert order[2] == fused[2]  # beyond top_n: the fused place
    assert order[:2] == [fused[1], fused[0]]


@pytest.mark.parametrize("behaviour, says", [("slow", "within rerank_budget_ms"), ("500", "HTTP 500"),
                                             ("garbage", "no JSON"), ("deep", "no JSON")])
async def test_a_failed_or_slow_reranker_keeps_the_fused_order_with_a_notice(sample_docs, endpoint, monkeypatch,
                                                                              caplog, behaviour, says) -> None:
    url, fake = endpoint
    async with Harness.open(sample_docs.config()) as plain:
        await plain.sync()
        fused, _ = await titles(plain, "engines sandbox timeout")
    fake.behaviour = behaviour
    fake.favourite = fused[-1] or ""
    async with Harness.open(rerank_config(sample_docs, monkeypatch, url, rerank_budget_ms=300)) as h:
        await h.sync()
        started = time.perf_counter()
        order, response = await titles(h, "engines sandbox timeout")
        took = time.perf_counter() - started
    assert order == fused
    assert says in response.notice and "fused order" in response.notice
    assert took < 0.3 + 1.2  # the budget plus slack for a loaded machine; the fake answers after 3 s
    assert KEY not in caplog.text and KEY not in response.notice


async def test_through_an_mcp_client(sample_docs, endpoint, monkeypatch) -> None:
    url, fake = endpoint
    fake.favourite = "Lua"
    async with Harness.open(rerank_config(sample_docs, monkeypatch, url)) as h:
        await h.sync()
        async with Client(build_server(h)) as client:
            out = (await client.call_tool("search", {"query": "engines sandbox timeout", "mode": "keyword",
                                                     "explain": True})).structured_content
    assert out["results"][0]["title"] == "Lua Sandbox"
    assert out["results"][0]["explain"]["rerank_score"] == 0.9
    assert fake.seen and fake.seen[-1][0] == f"Bearer {KEY}"


async def test_http_without_a_url_is_refused_at_start(sample_docs) -> None:
    sample_docs.write_config('[retrieval]\nrerank = "http"\n')
    with pytest.raises(NotConfigured, match="rerank_url"):
        async with Harness.open(sample_docs.config()):
            pass


async def test_a_local_model_absent_from_the_cache_is_refused_offline(sample_docs, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CTX_CACHE_DIR", str(tmp_path / "empty-cache"))
    model = "Xenova/ms-marco-MiniLM-L-6-v2"
    sample_docs.write_config(f'[retrieval]\nrerank = "local:{model}"\n')
    started = time.perf_counter()
    with pytest.raises(NotConfigured) as caught:
        async with Harness.open(sample_docs.config()):
            pass
    assert time.perf_counter() - started < 10  # no waiting on the hub
    message = str(caught.value)
    assert model in message and "nothing downloads" in message and "TextCrossEncoder(" in message
    assert not list((tmp_path / "empty-cache").rglob("*.onnx"))


def test_the_api_key_is_a_known_secret(sample_docs, monkeypatch) -> None:
    rerank_config(sample_docs, monkeypatch, "http://127.0.0.1:9/rerank")
    assert KEY not in redaction.redact(f"header Bearer {KEY}")


# Answers a reranker must not be trusted with: each is refused whole (the results stay in fused order).
# Those marked * were taken before, and NaN and the boolean index reordered results.
MALFORMED = {
    "NaN score*": '{"results": [{"index": 0, "relevance_score": NaN}, {"index": 1, "relevance_score": 0.2}, '
                  '{"index": 2, "relevance_score": 0.9}]}',
    "infinite score*": '[{"index": 2, "score": Infinity}, {"index": 0, "score": 0.1}]',
    "string score*": '{"results": [{"index": 2, "relevance_score": "0.9"}, {"index": 0, "relevance_score": 0.1}]}',
    "boolean score*": '{"results": [{"index": 2, "relevance_score": true}, {"index": 0, "relevance_score": 0.1}]}',
    "boolean index*": '{"results": [{"index": 2, "relevance_score": 0.9}, {"index": true, "relevance_score": 0.5}, '
                      '{"index": 0, "relevance_score": 0.1}]}',
    "fractional index*": '{"results": [{"index": 2.0, "relevance_score": 0.9}]}',
    "string index*": '{"results": [{"index": "2", "relevance_score": 0.9}]}',
    "duplicate index*": '{"results": [{"index": 2, "relevance_score": 0.9}, {"index": 2, "relevance_score": 0.1}]}',
    "index out of range": '{"results": [{"index": 3, "relevance_score": 0.9}]}',
    "negative index": '{"results": [{"index": -1, "relevance_score": 0.9}]}',
    "missing score": '{"results": [{"index": 2}]}',
    "missing index": '{"results": [{"relevance_score": 0.9}]}',
    "result not an object": '{"results": [2, 0.9]}',
    "more results than documents": '{"results": [' + ", ".join(
        f'{{"index": {i % 3}, "relevance_score": 0.{i}}}' for i in range(4)) + "]}",
    "no results list": '{"scores": [0.1, 0.2, 0.9]}',
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_answer_is_refused_whole(case) -> None:
    with pytest.raises(RerankFailed, match="the reranker's answer"):
        parse_scores(json.loads(MALFORMED[case]), 3)


def test_a_well_formed_answer_may_leave_documents_out() -> None:
    assert parse_scores({"results": [{"index": 2, "relevance_score": 1}, {"index": 0, "relevance_score": -0.5}]},
                        3) == [-0.5, float("-inf"), 1.0]
    assert parse_scores([{"index": 1, "score": 0.25}], 2) == [float("-inf"), 0.25]


async def test_a_malformed_answer_keeps_the_fused_order_with_a_notice(sample_docs, endpoint, monkeypatch) -> None:
    url, fake = endpoint
    async with Harness.open(sample_docs.config()) as plain:
        await plain.sync()
        fused, _ = await titles(plain, "engines sandbox timeout")
    assert len(fused) == 3
    fake.behaviour = "answer"
    async with Harness.open(rerank_config(sample_docs, monkeypatch, url)) as h:
        await h.sync()
        for case, answer in MALFORMED.items():
            fake.answer = answer.encode()
            order, response = await titles(h, "engines sandbox timeout", explain=True)
            assert order == fused, case
            assert "rerank skipped (the reranker's answer" in response.notice and "fused order" in response.notice
            assert all(r.explain.rerank_score is None for r in response.results), case
        assert len(fake.seen) == len(MALFORMED)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def settled(count: int, measure: Any, seconds: float = 5.0) -> int:
    """``measure()`` once it is back to ``count`` (a closed socket may take a moment), or its last value."""
    until = time.monotonic() + seconds
    value = measure()
    while value > count and time.monotonic() < until:
        time.sleep(0.05)
        value = measure()
    return value


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file descriptors in /proc")
@pytest.mark.parametrize("where", ["headers", "body"])
async def test_a_dripping_reranker_costs_the_budget_and_leaves_no_thread_or_socket(sample_docs, monkeypatch,
                                                                                  tmp_path, where) -> None:
    """An endpoint that sends a byte every 0.1 s (inside any per-read timeout): each search waits the
    budget (300 ms), then answers in fused order; after 20 searches this process has the threads and
    file descriptors it had before (the server runs in another process)."""
    body = json.dumps({"results": [{"index": 2, "relevance_score": 0.9}]})
    with unruly_server(tmp_path / "server") as server:
        server.plan([{"match": "POST /rerank", "body": body, "headers": {"Content-Type": "application/json"},
                      "drip": 0.1, "drip_from": 0 if where == "headers" else 60}])
        async with Harness.open(sample_docs.config()) as plain:
            await plain.sync()
            fused, _ = await titles(plain, "engines sandbox timeout")
        config = rerank_config(sample_docs, monkeypatch, f"{server.url}/rerank", rerank_budget_ms=300)
        async with Harness.open(config) as h:
            await h.sync()
            await titles(h, "engines sandbox timeout")  # the worker thread a search runs in now exists
            threads, descriptors = threading.active_count(), open_descriptors()
            for _ in range(20):
                started = time.monotonic()
                order, response = await titles(h, "engines sandbox timeout")
                assert time.monotonic() - started < 0.3 + 1.2  # the budget plus slack for a loaded machine
                assert order == fused
                assert "no answer within rerank_budget_ms (300 ms)" in response.notice
            assert settled(threads, threading.active_count) <= threads  # fewer: something else closed meanwhile
            assert settled(descriptors, open_descriptors) <= descriptors
        assert len(server.requests()) == 21
