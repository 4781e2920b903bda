"""Answers within ``max_tokens`` (``search/budget.py``): the fitting itself, on answers built by hand,
and through the real ``Harness`` over a workspace of long documents."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from context_harness import config as config_mod
from context_harness.common import text as text_module
from context_harness.common.text import estimate_tokens, payload_tokens, splits_cluster
from context_harness.common.validation import parse_get, parse_search
from context_harness.core.harness import Harness
from context_harness.errors import BadRequest
from context_harness.models import ChunkOut, DocumentOut, Omitted, SearchResponse, SearchResult, TextRange
from context_harness.search.budget import (
    MIN_SNIPPET_CHARS,
    answer_tokens,
    breaks,
    fit_document,
    fit_search,
    shorten,
)
from context_harness.tools.render import render_document, render_search
from support.workspace import config_toml, write_files

SEARCH_MEASURE = answer_tokens(render_search)
GET_MEASURE = answer_tokens(render_document)
WORDS = ("search engine index token budget window snippet sentence result document query rank score vector "
         "keyword chunk").split()


def prose(rng: random.Random, sentences: int) -> str:
    return " ".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
                    for _ in range(sentences))


def result(i: int, snippet: str, title: str | None = None) -> SearchResult:
    return SearchResult(id=f"{i:016x}", score=1.0 - i / 100, title=title or f"Document {i}", source="filesystem:docs",
                        source_id=f"notes/doc{i}.md", updated_at="2026-03-01T10:00:00Z", snippet=snippet,
                        source_url=f"file:///notes/doc{i}.md", chunk=0, heading=f"Document {i}",
                        version="ab" * 32)


def tokens(answer: Any, measure: Any) -> int:
    return int(measure(answer.model_dump(mode="json")))


# -- search, by hand ------------------------------------------------------------------------------

def test_an_answer_that_fits_is_unchanged() -> None:
    response = SearchResponse(results=[result(1, "A short snippet.")])
    assert fit_search(response, 1000, SEARCH_MEASURE) is response
    assert "omitted" not in response.model_dump(mode="json")


@pytest.mark.parametrize("budget", [300, 600, 1000, 2000])
def test_search_fits_fewer_results_and_says_how_many_were_left_out(budget: int) -> None:
    rng = random.Random(budget)
    response = SearchResponse(results=[result(i, prose(rng, 3)[:240]) for i in range(12)])
    assert tokens(response, SEARCH_MEASURE) > 2000
    fitted = fit_search(response, budget, SEARCH_MEASURE)
    payload = fitted.model_dump(mode="json")
    assert payload_tokens(payload) <= budget and estimate_tokens(render_search(payload)) <= budget
    kept = len(fitted.results)
    assert [r.id for r in fitted.results] == [r.id for r in response.results[:kept]]  # the ranking kept
    assert payload["omitted"].get("results", 0) == 12 - kept
    assert kept >= 1
    if budget == 2000:
        assert kept >= 8
    for before, after in zip(response.results, fitted.results, strict=False):
        assert after.snippet == before.snippet or (after.snippet.endswith(" …")
                                                   and before.snippet.startswith(after.snippet[:-2]))
    if kept and kept < 12:  # a result more would not have fitted even with the shortest snippets
        more = fit_search(SearchResponse(results=response.results[:kept + 1]), budget, SEARCH_MEASURE)
        assert len(more.results) == kept


def test_lean_fields_go_before_results_and_come_back_when_they_fit() -> None:
    rng = random.Random(7)
    response = SearchResponse(results=[result(i, prose(rng, 3)[:240]) for i in range(12)])
    tight = fit_search(response, 1000, SEARCH_MEASURE)
    assert tight.omitted is not None and tight.omitted.fields == ["version", "source_url", "heading"]
    assert all(r.version is None and r.source_url is None and r.heading is None for r in tight.results)
    roomy = fit_search(SearchResponse(results=response.results[:2]), 700, SEARCH_MEASURE)
    assert all(r.version == "ab" * 32 and r.source_url for r in roomy.results)


def test_one_result_without_its_snippet_before_none() -> None:
    response = SearchResponse(results=[result(i, "word " * 40, title="title " * 120) for i in range(3)])
    fitted = fit_search(response, 300, SEARCH_MEASURE)
    assert [r.snippet for r in fitted.results] == [""]
    assert fitted.omitted is not None and fitted.omitted.results == 2 and fitted.omitted.snippet_chars == 200


def test_when_no_result_fits_the_answer_has_none_and_says_so() -> None:
    huge = SearchResponse(results=[result(i, "snippet", title="word " * 300) for i in range(5)])
    fitted = fit_search(huge, 300, SEARCH_MEASURE)
    payload = fitted.model_dump(mode="json")
    assert payload["results"] == [] and payload["omitted"] == {"results": 5}
    assert payload_tokens(payload) <= 300
    text = render_search(payload)
    assert "No result fits in max_tokens: 5 left out" in text and estimate_tokens(text) <= 300


def test_cjk_snippets_count_a_token_a_character_and_keep_clusters_whole() -> None:
    text = "검색엔진은문서를빠르게찾는다。" * 12 + "👩‍👩‍👧" * 10
    response = SearchResponse(results=[result(i, text[:200]) for i in range(6)])
    assert estimate_tokens(text[:200]) >= 150  # a token a character
    fitted = fit_search(response, 400, SEARCH_MEASURE)
    assert payload_tokens(fitted.model_dump(mode="json")) <= 400
    for r in fitted.results:
        body = r.snippet.removesuffix(" …")
        assert not splits_cluster(text, len(body))


def test_the_estimate_is_the_same_whichever_way_non_ascii_text_is_read() -> None:
    """``estimate_tokens`` replaces a few non-ASCII characters one by one, many through a table: alike."""
    rng = random.Random(0)
    odd = "é·…日本語한국어\u0301\u200d\ud800👩١٢٣\u00a0\u2028"
    for _ in range(2000):
        text = "".join(rng.choice(odd) if rng.random() < 0.2 else rng.choice("abc XYZ 123.,\n")
                       for _ in range(rng.randint(0, 60)))
        assert text_module._NON_ASCII.sub(text_module._stand_in_match, text) == text_module._table_stand_in(text)
    assert estimate_tokens("a … b · c") == 5 and estimate_tokens("検索" * 40 + " word") == 81


def test_shorten_cuts_at_a_word() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    short, lost = shorten(text, 20)
    assert short == "alpha beta gamma … ".rstrip() or short == "alpha beta gamma" + " …"
    assert lost == len(text) - len("alpha beta gamma")
    assert shorten(text, 200) == (text, 0)
    assert MIN_SNIPPET_CHARS <= 120


# -- get, by hand ---------------------------------------------------------------------------------

def document(body: str, start: int = 0, total: int | None = None, metadata: dict[str, Any] | None = None,
             chunk_size: int = 400) -> DocumentOut:
    total = total if total is not None else start + len(body)
    chunks = [ChunkOut(index=i, text="", start=start + at, end=min(start + at + chunk_size, start + len(body)))
              for i, at in enumerate(range(0, len(body), chunk_size))]
    end = start + len(body)
    return DocumentOut(id="d" * 16, source="filesystem:docs", source_id="long.md", source_url=None, title="Long",
                       author=None, created_at=None, updated_at=None, content_type="text/markdown", body=body,
                       metadata=metadata or {}, chunks=chunks, truncated=(start, end) != (0, total),
                       range=TextRange(start=start, end=end), total_chars=total,
                       next_offset=end if end < total else None)


@pytest.mark.parametrize("budget", [300, 600, 1000])
def test_get_cuts_the_window_at_a_sentence_and_says_where_to_read_on(budget: int) -> None:
    body = prose(random.Random(budget), 120)
    doc = document(body)
    fitted = fit_document(doc, budget, GET_MEASURE)
    payload = fitted.model_dump(mode="json")
    assert payload_tokens(payload) <= budget and estimate_tokens(render_document(payload)) <= budget
    assert fitted.body and body.startswith(fitted.body) and fitted.body.endswith(".")
    assert fitted.truncated and fitted.range == TextRange(start=0, end=len(fitted.body))
    assert fitted.next_offset == len(fitted.body)
    assert payload["omitted"] == {"body_chars": len(body) - len(fitted.body)}
    assert all(c.start is not None and c.start < len(fitted.body) for c in fitted.chunks)
    assert len(fitted.chunks) < len(doc.chunks)


@pytest.mark.parametrize("budget", [300, 1000, 20_000])
def test_a_long_window_is_cut_at_the_last_break_that_fits_in_time(budget: int) -> None:
    from support.workspace import long_markdown

    body = long_markdown(1_000_000)
    doc = document(body, chunk_size=2000)
    started = time.perf_counter()
    fitted = fit_document(doc, budget, GET_MEASURE)
    assert time.perf_counter() - started < 3.0  # about 0.07 s for 1,000 tokens on a loaded 2-core machine
    assert tokens(fitted, GET_MEASURE) <= budget and body.startswith(fitted.body)
    following = next(p for p in breaks(body) if p > len(fitted.body))  # the next break would not fit
    longer = doc.model_copy(update={
        "body": body[:following], "chunks": [c for c in doc.chunks if (c.start or 0) < following],
        "omitted": Omitted(body_chars=len(body) - following), "range": TextRange(start=0, end=following),
        "next_offset": following, "truncated": True})
    assert tokens(longer, GET_MEASURE) > budget


def test_a_chunks_window_starts_at_the_sentence_the_chunk_begins_in() -> None:
    body = prose(random.Random(3), 120)
    doc = document(body, start=5000, total=50_000)
    k = 6
    at = doc.chunks[k].start or 0
    fitted = fit_document(doc, 300, GET_MEASURE, chunk=k)
    assert fitted.range is not None and fitted.range.start <= at < fitted.range.end
    before = body[:fitted.range.start - 5000]
    assert before.endswith(". ")  # the sentence's start
    assert fitted.body[:1].isupper() and fitted.body.endswith(".")
    assert fitted.omitted is not None and fitted.omitted.fields and "chunks" in fitted.omitted.fields
    roomy = fit_document(doc, 800, GET_MEASURE, chunk=k)
    assert roomy.range is not None and roomy.range.start == fitted.range.start and roomy.omitted is not None
    assert roomy.omitted.fields is None and any(c.index == k for c in roomy.chunks)


def test_a_window_without_sentence_ends_is_cut_at_a_word_or_between_clusters() -> None:
    words = fit_document(document("word " * 5000), 300, GET_MEASURE)
    assert words.body and words.body.endswith("word") and payload_tokens(words.model_dump(mode="json")) <= 300
    cjk = "検索" * 3000
    fitted = fit_document(document(cjk), 300, GET_MEASURE)
    assert fitted.body and payload_tokens(fitted.model_dump(mode="json")) <= 300
    assert not splits_cluster(cjk, len(fitted.body))


def test_metadata_too_large_for_the_budget_is_left_out() -> None:
    doc = document(prose(random.Random(5), 40), metadata={"notes": "word " * 2000})
    fitted = fit_document(doc, 300, GET_MEASURE)
    assert fitted.metadata == {} and fitted.omitted is not None and fitted.omitted.fields == ["metadata", "chunks"]
    assert payload_tokens(fitted.model_dump(mode="json")) <= 300 and fitted.body


# -- through the Harness --------------------------------------------------------------------------

def long_documents(root: Path, count: int = 24) -> Path:
    """``count`` Markdown documents of six sections each; returns the config path."""
    rng = random.Random(11)
    files = {f"doc{i:02}.md": f"# Document {i} on search budgets\n\n"
             + "\n\n".join(f"## Part {p}\n\n{prose(rng, 6)}" for p in range(6)) + "\n" for i in range(count)}
    write_files(root / "docs", files)
    path = root / "ctx.toml"
    path.write_text(config_toml(), encoding="utf-8")
    return path


@pytest.fixture
async def long_harness(tmp_path: Path):
    async with Harness.open(config_mod.load(long_documents(tmp_path))) as harness:
        await harness.sync()
        yield harness


@pytest.mark.anyio
async def test_harness_search_within_max_tokens(long_harness: Harness) -> None:
    full = await long_harness.search(parse_search({"query": "token budget window"}))
    assert payload_tokens(full.model_dump(mode="json")) > 1000
    for budget in (300, 600, 1000):
        fitted = await long_harness.search(parse_search({"query": "token budget window", "max_tokens": budget}))
        payload = fitted.model_dump(mode="json")
        assert payload_tokens(payload) <= budget and estimate_tokens(render_search(payload)) <= budget
        assert [r.id for r in fitted.results] == [r.id for r in full.results[:len(fitted.results)]]
        assert payload["omitted"]["results"] == len(full.results) - len(fitted.results)


@pytest.mark.anyio
async def test_harness_get_reads_on_from_next_offset(long_harness: Harness) -> None:
    hit = (await long_harness.search(parse_search({"query": "token budget", "limit": 1}))).results[0]
    whole = await long_harness.get(parse_get({"id": hit.id, "max_chars": 0}))
    pieces, offset = [], 0
    for _ in range(200):
        part = await long_harness.get(parse_get({"id": hit.id, "offset": offset, "max_tokens": 300}))
        assert payload_tokens(part.model_dump(mode="json")) <= 300
        assert part.body.rstrip().endswith((".", *(f"Part {p}" for p in range(6)))) or part.next_offset is None
        assert len(part.body) >= 150 or part.next_offset is None
        pieces.append(part.body)
        if part.next_offset is None:
            break
        assert part.omitted is not None and part.omitted.body_chars
        offset = part.next_offset
    assert "".join(pieces) == whole.body  # read on, piece by piece, the document comes back whole


@pytest.mark.anyio
async def test_harness_get_of_a_chunk_keeps_the_chunk(long_harness: Harness) -> None:
    hit = (await long_harness.search(parse_search({"query": "token budget", "limit": 1}))).results[0]
    section = await long_harness.get(parse_get({"id": hit.id, "chunk": 3}))
    at = next(c.start for c in section.chunks if c.index == 3)
    doc = await long_harness.get(parse_get({"id": hit.id, "chunk": 3, "max_tokens": 600}))
    assert payload_tokens(doc.model_dump(mode="json")) <= 600
    assert doc.range is not None and doc.range.start <= at < doc.range.end
    assert any(c.index == 3 for c in doc.chunks)


@pytest.mark.parametrize("arguments", [{"max_tokens": 299}, {"max_tokens": 1_000_001}, {"max_tokens": "lots"}])
def test_max_tokens_out_of_bounds_is_refused_with_its_bounds(arguments: dict[str, Any]) -> None:
    with pytest.raises(BadRequest, match="max_tokens"):
        parse_search({"query": "x", **arguments})
    with pytest.raises(BadRequest, match="max_tokens") as caught:
        parse_get({"id": "x", **arguments})
    if isinstance(arguments["max_tokens"], int):
        assert ("300" if arguments["max_tokens"] < 300 else "1000000") in str(caught.value)
