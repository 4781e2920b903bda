"""Keyword search behaviour through Harness.search over a real Tantivy index."""

from __future__ import annotations

import pytest

from context_harness.common.validation import parse_search
from context_harness.core.harness import Harness
from context_harness.errors import BadRequest, EmbeddingsDisabled
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


@pytest.fixture
async def harness(sample_docs):
    sample_docs.write("rust.md", """
        ---
        title: Rust ownership
        tags: [rust]
        updated: 2025-06-01
        ---
        Borrowing rules and the borrow checker keep memory safe without a garbage collector.
    """)
    sample_docs.write("long.md", "# Chunky\n\n" + "\n\n".join(
        f"## Part {i}\n\n" + " ".join(["filler"] * 120) + (" pelican" if i == 3 else "") for i in range(6)))
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        yield h


async def search(h: Harness, query: str, **kw):
    return (await h.search(SearchRequest(query=query, **kw))).results


async def test_or_semantics_partial_matches_rank(harness) -> None:
    results = await search(harness, "tantivy quokka nonexistentword")
    assert [r.title for r in results] == ["Search Engines"]
    both = await search(harness, "rust borrow")
    assert both[0].title == "Rust ownership"  # matches both words
    assert "Search Engines" in [r.title for r in both]  # matches only "rust"


async def test_stemming_matches_word_forms(harness) -> None:
    assert [r.title for r in await search(harness, "ranking")] == ["Search Engines"]
    assert [r.title for r in await search(harness, "borrowed")] == ["Rust ownership"]


async def test_phrase_in_quotes_is_required(harness) -> None:
    assert [r.title for r in await search(harness, '"search engine"')] == ["Search Engines"]
    assert await search(harness, '"engine search"') == []


async def test_title_matches_count(harness) -> None:
    assert (await search(harness, "ownership"))[0].title == "Rust ownership"


async def test_results_are_grouped_per_document_with_best_chunk_snippet(harness) -> None:
    results = await search(harness, "pelican", explain=True)
    assert [r.title for r in results] == ["Chunky"]
    assert "pelican" in results[0].snippet
    assert results[0].explain.chunk_index > 0


async def test_snippet_contains_matched_terms(harness) -> None:
    result = (await search(harness, "garbage collector"))[0]
    assert "garbage" in result.snippet and "collector" in result.snippet


async def test_result_shape(harness) -> None:
    payload = (await harness.search(SearchRequest(query="sandbox"))).model_dump(mode="json")
    # the seed's keys, plus where the snippet lies (the chunk index and its heading path) and the
    # document's version (what the note tools compare)
    assert set(payload["results"][0]) == {"id", "score", "title", "source", "source_id", "updated_at", "snippet",
                                          "source_url", "chunk", "heading", "version"}
    doc = await harness.get(payload["results"][0]["id"])
    assert payload["results"][0]["version"] == doc.version and len(doc.version or "") == 64
    assert payload["results"][0]["chunk"] == 0 and isinstance(payload["results"][0]["heading"], str)
    assert payload["results"][0]["id"] == payload["results"][0]["id"].lower()


@pytest.mark.parametrize("query", [
    '"unbalanced', "a:b (c)", "title:lua", "AND", "foo AND", "OR NOT", "*", "?", "x^2 ~", "c++ -rust",
    "🙂🚀", "((((", "[1 TO 5]", "\\", "'", "body:(lua OR rust)", "x" * 10_000, "lua " * 2500,
])
async def test_any_user_text_is_safe(harness, query) -> None:
    results = await search(harness, query)
    assert isinstance(results, list)
    if query in ("*", "?", "🙂🚀", "(((("):
        assert results == []  # no match-all


async def test_filters_apply_before_the_top_k_cut(harness) -> None:
    # "engines" matches notes.txt weakly and guides/search.md strongly; a source-type filter keeps both,
    # tag filters pick out documents that would rank below the cut.
    assert [r.title for r in await search(harness, "memory", filters={"tags": ["security"]})] == ["Lua Sandbox"]
    assert [r.title for r in await search(harness, "memory", filters={"tags": ["RUST"]})] == ["Rust ownership"]
    assert len(await search(harness, "memory", filters={"source": "filesystem"})) == 2
    assert len(await search(harness, "memory", filters={"source": "filesystem:docs"})) == 2
    assert await search(harness, "memory", filters={"source": "git"}) == []
    many = [f"w{i}.md" for i in range(30)]
    assert many  # top-k: a limit of 1 with a filter still finds the filtered document
    assert [r.title for r in await search(harness, "memory", limit=1, filters={"tags": ["rust"]})] == [
        "Rust ownership"]


async def test_date_filters(harness) -> None:
    assert [r.title for r in await search(harness, "memory", filters={"until": "2025-12-31"})] == ["Rust ownership"]
    assert [r.title for r in await search(harness, "memory", filters={"since": "2026-01-01T00:00:00Z",
                                                                        "until": "2026-06-01"})] == ["Lua Sandbox"]
    with pytest.raises(BadRequest, match="since"):
        await search(harness, "memory", filters={"since": "2026-06-01", "until": "2026-01-01"})


async def test_until_a_bare_date_includes_that_whole_day(sample_docs) -> None:
    sample_docs.write("evening.md", "---\ntitle: Evening memory\nupdated: 2025-06-01T18:30:00Z\n---\nmemory at dusk\n")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        assert [r.title for r in await search(h, "dusk", filters={"until": "2025-06-01"})] == ["Evening memory"]
        assert await search(h, "dusk", filters={"until": "2025-05-31"}) == []
        assert await search(h, "dusk", filters={"until": "2025-06-01T12:00:00Z"}) == []  # a time is kept as given
        assert [r.title for r in await search(h, "dusk", filters={"since": "2025-06-01", "until": "2025-06-01"})] == [
            "Evening memory"]


async def test_deterministic_ties(sample_docs) -> None:
    for i in range(5):
        sample_docs.write(f"same{i}.md", "# Same\n\nidentical heron text\n")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        first = [r.id for r in await search(h, "heron")]
        assert len(first) == 5 and first == sorted(first)
        for _ in range(3):
            assert [r.id for r in await search(h, "heron")] == first


async def test_limit_and_default_limit(harness, sample_docs) -> None:
    for i in range(20):
        sample_docs.write(f"many/m{i}.md", f"# M{i}\n\nostrich {i}\n")
    await harness.sync()
    assert len(await search(harness, "ostrich")) == 12  # retrieval.final_limit
    assert len(await search(harness, "ostrich", limit=3)) == 3


def test_argument_validation_names_the_problem() -> None:
    with pytest.raises(BadRequest, match="query"):
        parse_search({"query": ""})
    with pytest.raises(BadRequest, match="limit"):
        parse_search({"query": "x", "limit": 101})
    with pytest.raises(BadRequest, match="mode"):
        parse_search({"query": "x", "mode": "fuzzy"})
    with pytest.raises(BadRequest, match="unknown argument"):
        parse_search({"query": "x", "colour": "red"})
    with pytest.raises(BadRequest, match="since"):
        parse_search({"query": "x", "filters": {"since": "yesterday"}})
    request = parse_search({"query": "x", "source": "filesystem"})
    assert request.filters.source == "filesystem"


async def test_semantic_mode_when_embeddings_disabled(harness) -> None:
    with pytest.raises(EmbeddingsDisabled, match="keyword"):
        await search(harness, "x", mode="semantic")


async def test_get_unknown_id(harness) -> None:
    from context_harness.errors import NotFound

    with pytest.raises(NotFound, match="search"):
        await harness.get("0000")
