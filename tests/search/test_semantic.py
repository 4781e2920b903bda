"""Semantic and hybrid search through the Harness: a deterministic fake embedder registered the real
way, and the real bundled model on a small corpus."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import EmbeddingsDisabled, EmbeddingsUnavailable
from context_harness.models import SearchRequest
from context_harness.store.vectors import VectorStore

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def fake_provider() -> None:
    fake.register()


def use_provider(ws, provider: str, extra: str = "") -> None:
    text = ws.config_path.read_text().replace('provider = "disabled"', f'provider = "{provider}"{extra}')
    ws.config_path.write_text(text)


async def search(h: Harness, query: str, **kw):
    return (await h.search(SearchRequest(query=query, **kw))).results


def reference(h: Harness, query: str) -> float:
    """The query's BM25 reference that scaled fusion divides keyword scores by."""
    assert h.index is not None
    return sum(h.index.term_weights(query).values())


async def test_sync_embeds_and_all_modes_answer(sample_docs) -> None:
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync()
        assert report.embedding is not None and report.embedding.embedded == 3 and report.embedding.pending == 0
        for mode in ("keyword", "semantic", "hybrid"):
            assert (await search(h, "sandbox timeout memory", mode=mode))[0].title == "Lua Sandbox"
        hybrid = (await search(h, "sandbox timeout memory", mode="hybrid", explain=True))[0]
        assert hybrid.explain.keyword_rank == 1 and hybrid.explain.semantic_rank == 1
        scaled = hybrid.explain.keyword_score / reference(h, "sandbox timeout memory")  # scaled fusion, alpha 0.63
        assert hybrid.explain.fused_score == pytest.approx(0.37 * scaled + 0.63 * hybrid.explain.semantic_score)
        assert hybrid.snippet  # from the best chunk
        # auto = hybrid once vectors exist
        auto = (await search(h, "sandbox", explain=True))[0]
        assert auto.explain.notes[0].startswith("mode=hybrid")
        stats = await h.stats()
        assert stats.embedding["embedded_chunks"] == 3 and stats.embedding["stored_identity"].startswith("fake:")
        assert "semantic" in h.describe()


async def test_semantic_filters_apply_before_the_cut(sample_docs) -> None:
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        hits = await search(h, "tantivy rust", mode="semantic", limit=1, filters={"tags": ["security"]})
        assert [r.title for r in hits] == ["Lua Sandbox"]
        assert await search(h, "x", mode="semantic", filters={"source": "git"}) == []
        assert [r.title for r in await search(h, "notes", mode="hybrid", filters={"until": "2026-03-02"})] == [
            "Lua Sandbox"]


async def test_unchanged_chunks_are_never_embedded_again(sample_docs) -> None:
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        assert (await h.sync(full=True)).embedding.embedded == 0  # same texts, same hashes
        sample_docs.write("notes.txt", "Plain notes about deployment and engines. And a new sentence.\n")
        assert (await h.sync()).embedding.embedded == 1
    # A re-chunk that leaves short documents' chunk texts unchanged embeds nothing new.
    sample_docs.config_path.write_text(sample_docs.config_path.read_text() + "\n[chunking]\nmax_tokens = 200\n")
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync()
        assert report.total("updated") == 3 and report.embedding.embedded == 0


async def test_no_embed_then_hybrid_falls_back_and_says_so(sample_docs) -> None:
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        sample_docs.write("later.md", "# Later\n\nsandbox sandbox sandbox\n")
        report = await h.sync(embed=False)
        assert report.embedding is None
        results = await search(h, "sandbox", mode="hybrid", explain=True)
        later = next(r for r in results if r.title == "Later")
        assert any("not embedded yet" in n for n in later.explain.notes)
        summary = await h.embed()
        assert summary.embedded == 1 and summary.pending == 0
        later = next(r for r in await search(h, "sandbox", mode="hybrid", explain=True) if r.title == "Later")
        assert not any("not embedded yet" in n for n in later.explain.notes)


async def test_a_document_not_embedded_yet_keeps_its_keyword_rank_in_hybrid(sample_docs) -> None:
    use_provider(sample_docs, "fake")
    # title_match 0: the fused scores below are the formula's alone (the title "Hamsters" holds "hamsters")
    sample_docs.config_path.write_text(sample_docs.config_path.read_text()
                                       + "\n[retrieval]\nhybrid_alpha = 0.8\ntitle_match = 0\n")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        sample_docs.write("hamsters.md", "# Hamsters\n\nHamsters store food in their cheek pouches.\n")
        await h.sync(embed=False)
        # The only document with the word, not embedded yet: first, scored by keyword alone.
        results = await search(h, "hamsters sandbox", mode="hybrid", explain=True)
        assert results[0].title == "Hamsters" or results[1].title == "Hamsters"
        hamsters = next(r for r in results if r.title == "Hamsters")
        assert hamsters.explain.semantic_rank is None
        # not capped at the keyword weight: its semantic part is its keyword part
        assert hamsters.explain.fused_score == pytest.approx(
            hamsters.explain.keyword_score / reference(h, "hamsters sandbox"))
        first = (await search(h, "hamsters", mode="hybrid", explain=True))[0]
        assert first.title == "Hamsters"
        assert first.explain.fused_score == pytest.approx(first.explain.keyword_score / reference(h, "hamsters"))
        assert any("not embedded yet" in n for n in first.explain.notes)


async def test_embedder_change_never_mixes_and_rebuild_still_works(sample_docs) -> None:
    """Another embedder configured: searches use the stored vectors with their own embedder (a model
    switch: tests/embedding/test_model_switch.py), never the new one's query vectors against them."""
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
    text = sample_docs.config_path.read_text().replace('provider = "fake"', 'provider = "fake"\ndims = 32')
    sample_docs.config_path.write_text(text)
    async with Harness.open(sample_docs.config()) as h:
        hits = await search(h, "sandbox", mode="semantic", explain=True)
        assert hits[0].title == "Lua Sandbox" and "embedder=fake:hashing-bow-64:64" in hits[0].explain.notes
        summary = await h.embed(rebuild=True)
        assert summary.embedded == 3 and summary.embedder.endswith(":32")
        assert (await search(h, "sandbox", mode="semantic"))[0].title == "Lua Sandbox"


async def test_disabled_embeddings(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync()
        assert report.embedding is None
        with pytest.raises(EmbeddingsDisabled, match="keyword"):
            await search(h, "x", mode="hybrid")
        with pytest.raises(EmbeddingsDisabled):
            await h.embed()
        assert (await search(h, "sandbox", explain=True))[0].explain.notes[0].startswith("mode=keyword")


async def test_bundled_model_finds_paraphrases(workspace) -> None:
    workspace.write("cats.md", "# Pets\n\nKittens love to sleep in warm sunny spots near the window.\n")
    workspace.write("money.md", "# Finance\n\nQuarterly revenue grew thanks to strong enterprise sales.\n")
    workspace.write("lua.md", "# Scripting\n\nScripts run in a restricted sandbox with a memory cap.\n")
    use_provider(workspace, "local")
    async with Harness.open(workspace.config()) as h:
        report = await h.sync()
        assert report.embedding.embedded == 3 and report.embedding.embedder.startswith("local:")
        assert (await search(h, "young cats napping", mode="semantic"))[0].title == "Pets"
        assert (await search(h, "how much money did the company make", mode="semantic"))[0].title == "Finance"
        assert await search(h, "young cats napping", mode="keyword") == []
        assert (await search(h, "young cats napping", mode="hybrid"))[0].title == "Pets"


async def test_sources_and_stats_report_embedded_pending_and_the_embedder(sample_docs) -> None:
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync(embed=False)
        listing = await h.sources()
        source = listing.sources[0]
        assert "3 chunks awaiting embeddings" in source.notes
        assert (source.embedded_chunks, source.pending_chunks) == (0, 3)
        assert listing.embedding["identity"] == "fake:hashing-bow-64:64" and not listing.embedding["mismatch"]
        await h.embed()
        listing = await h.sources()
        source = listing.sources[0]
        assert source.notes is None and (source.embedded_chunks, source.pending_chunks) == (3, 0)
        assert listing.embedding["stored_identity"] == listing.embedding["identity"]
    text = sample_docs.config_path.read_text().replace('provider = "fake"', 'provider = "fake"\ndims = 32')
    sample_docs.config_path.write_text(text)
    async with Harness.open(sample_docs.config()) as h:
        for status in ((await h.sources()).embedding, (await h.stats()).embedding):
            assert status["mismatch"] and status["identity"] == "fake:hashing-bow-32:32"
            assert status["stored_identity"] == "fake:hashing-bow-64:64"


async def test_a_rebuild_whose_embedder_fails_keeps_the_old_vectors(sample_docs, tmp_path) -> None:
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        expected = await search(h, "sandbox", mode="semantic")
    broken = tmp_path / "not-a-model"
    broken.mkdir()
    original = sample_docs.config_path.read_text()
    sample_docs.config_path.write_text(
        original.replace('provider = "fake"', f'provider = "local"\nmodel_path = "{broken.as_posix()}"'))
    async with Harness.open(sample_docs.config()) as h:
        with pytest.raises(EmbeddingsUnavailable):
            await h.embed(rebuild=True)
        status = (await h.stats()).embedding
        assert status["vectors"] == 3 and status["stored_identity"] == "fake:hashing-bow-64:64"
    sample_docs.config_path.write_text(original)  # going back needs no rebuild: nothing was lost
    async with Harness.open(sample_docs.config()) as h:
        assert await search(h, "sandbox", mode="semantic") == expected


async def test_searches_keep_working_while_chunks_embed(sample_docs) -> None:
    import threading

    import anyio

    from context_harness.embedding.fake import FakeEmbedder
    from context_harness.embedding.providers import default_providers

    started, release = threading.Event(), threading.Event()

    class GatedEmbedder(FakeEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            started.set()
            release.wait(10)
            return super().embed_documents(texts)

    default_providers.register("gated", lambda config: GatedEmbedder(), replace=True)
    use_provider(sample_docs, "gated")
    async with Harness.open(sample_docs.config()) as h:
        async with anyio.create_task_group() as tg:
            tg.start_soon(h.sync)
            await anyio.to_thread.run_sync(started.wait, 10)
            # Embedding is under way: keyword and hybrid searches answer, hybrid says what it lacks.
            results = await search(h, "sandbox", mode="hybrid", explain=True)
            assert results[0].title == "Lua Sandbox"
            assert any("not embedded yet" in n for n in results[0].explain.notes)
            # ... and sources says the chunks are being embedded, not that `ctx embed pending` is due
            notes = (await h.sources()).sources[0].notes
            assert "being embedded now" in notes and "ctx embed pending" not in notes, notes
            release.set()
        assert (await h.stats()).embedding["pending_chunks"] == 0


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
async def test_time_filters_compare_instants_in_every_mode(workspace, mode: str) -> None:
    # Stored timestamps have whole seconds; a bound with a fraction, an offset or "Z" must still
    # compare as an instant (the semantic filter once compared "…00Z" with "…00.500000Z" as text).
    workspace.write("edge.md", "---\nupdated: 2026-03-01T10:00:00Z\n---\n# Edge\n\nsandbox notes\n")
    workspace.write("later.md", "---\nupdated: 2026-03-02T00:00:00Z\n---\n# Later\n\nsandbox notes too\n")
    use_provider(workspace, "fake")
    async with Harness.open(workspace.config()) as h:
        await h.sync()

        async def titles(**filters: str) -> list[str]:
            return sorted(r.title for r in await search(h, "sandbox notes", mode=mode, filters=filters))

        assert await titles(until="2026-03-01T10:00:00Z") == ["Edge"]
        assert await titles(until="2026-03-01T10:00:00.500Z") == ["Edge"]
        assert await titles(until="2026-03-01T11:00:00.5+01:00") == ["Edge"]
        assert await titles(until="2026-03-01T09:59:59.999Z") == []
        assert await titles(since="2026-03-01T10:00:00+00:00") == ["Edge", "Later"]
        assert await titles(since="2026-03-01T10:00:00.000001Z") == ["Later"]
        assert await titles(since="2026-03-01T09:59:59.5Z", until="2026-03-01T10:00:00.5Z") == ["Edge"]


async def test_auto_mode_counts_the_vectors_once_until_they_change(sample_docs) -> None:
    # COUNT(*) over the vectors costs ~4 ms at 100k rows: every auto-mode search used to pay it.
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        assert (await search(h, "sandbox", explain=True))[0].explain.notes[0].startswith("mode=hybrid")
        statements: list[str] = []
        h.vectors.conn.set_trace_callback(statements.append)
        for _ in range(3):
            assert (await search(h, "sandbox", explain=True))[0].explain.notes[0].startswith("mode=hybrid")
        assert not [s for s in statements if "COUNT(" in s.upper()]

        await h.embed(rebuild=True)  # clear() and put_many() on this connection: counted again, once
        statements.clear()
        for _ in range(2):
            assert (await search(h, "sandbox", explain=True))[0].explain.notes[0].startswith("mode=hybrid")
        assert len([s for s in statements if "COUNT(" in s.upper()]) <= 1

        other = VectorStore(h.store.path)  # another connection (another process, say) clears the vectors
        other.clear()
        other.close()
        assert (await search(h, "sandbox", explain=True))[0].explain.notes[0].startswith("mode=keyword")


async def test_a_first_sync_says_keyword_search_is_ready_before_embedding_and_explain_shows_coverage(
        sample_docs) -> None:
    """Issue 18's first index: the keyword pass is announced before embedding starts; `auto` mode
    searches keyword hits plus what is embedded so far, and `explain` says how much that is."""
    sample_docs.config_path.write_text(
        sample_docs.config_path.read_text().replace('provider = "disabled"', 'provider = "fake"'))
    async with Harness.open(sample_docs.config()) as h:
        events: list[dict] = []
        await h.sync(progress=events.append, embed=False)
        assert not any(e["event"] == "keyword_ready" for e in events), "nothing to embed: nothing said"
        request = SearchRequest(query="lua sandbox", explain=True)  # the default mode: auto
        before = await h.search(request)
        assert before.explain is not None and before.explain.mode == "keyword"
        chunks = before.explain.chunks
        assert chunks >= 3 and before.explain.embedded_chunks == 0
        await h.embed(limit=2)
        partly = await h.search(request)
        assert partly.explain is not None
        assert (partly.explain.mode, partly.explain.embedded_chunks, partly.explain.chunks) == ("hybrid", 2, chunks)
        assert "explain" not in (await h.search(SearchRequest(query="lua sandbox"))).model_dump(mode="json")

    events.clear()
    sample_docs.write("new.md", "# New\n\nA note that arrives later.\n")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync(progress=events.append)
    kinds = [(e["event"], e.get("source")) for e in events]
    ready = kinds.index(("keyword_ready", None))
    assert ready < kinds.index(("start", "embeddings")), kinds
    said = events[ready]
    assert said["documents"] >= 3 and said["pending_chunks"] >= 1


async def test_a_sync_that_embeds_a_large_index_saves_its_vector_graph(sample_docs, monkeypatch) -> None:
    """Issue 18: past ``ANN_FROM`` vectors the index is an approximate graph, built by the sync that
    embedded (announced as progress) and saved, so a server start opens it instead of building it."""
    from context_harness.store import vector_index

    monkeypatch.setattr(vector_index, "ANN_FROM", 2)
    use_provider(sample_docs, "fake")
    async with Harness.open(sample_docs.config()) as h:
        events: list[dict] = []
        await h.sync(progress=events.append)
        graph_events = [e["event"] for e in events if e.get("source") == "vector graph"]
        assert graph_events == ["start", "done"]
        saved = h.store.path.parent / "vectors" / "ann.json"
        assert saved.exists()
        hits = await search(h, "lua sandbox", mode="semantic")
    async with Harness.open(sample_docs.config()) as again:
        assert [r.id for r in await search(again, "lua sandbox", mode="semantic")] == [r.id for r in hits]
        assert again.semantic().index().approximate


async def test_a_question_the_notes_cannot_answer_gets_no_weak_neighbours(workspace) -> None:
    """Hybrid search (scaled fusion) leaves out results under ``[retrieval] min_score``, and says why
    when nothing is left; keyword and semantic search still return every match."""
    notes = {
        "sourdough.md": "# Sourdough bread\n\nFeed the starter, mix flour, water and salt, proof overnight, bake hot.\n",
        "offsite.md": "# Team offsite ideas\n\nA cooking class, a hiking day in the hills, an escape room.\n",
        "garden.md": "# Garden plan\n\nTomatoes along the south fence, basil between them, water in the morning.\n",
        "car.md": "# Car maintenance\n\nOil change every 15,000 km; the brake pads were replaced in March.\n",
        "coffee.md": "# Coffee brewing\n\nFifteen grams of coffee to 250 grams of water at 94 degrees.\n",
    }
    for name, text in notes.items():
        workspace.write(name, text)
    use_provider(workspace, "local")
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        answered = await h.search(SearchRequest(query="how do I bake bread", explain=True))
        assert answered.results[0].title == "Sourdough bread" and answered.notice is None
        assert all(r.explain.fused_score >= 0.26 for r in answered.results)  # the bundled model's min_score
        assert len(answered.results) < len(notes)  # the unrelated notes are left out, not listed weakly
        nothing = await h.search(SearchRequest(query="zebra migration across the savanna"))
        assert nothing.results == []
        assert nothing.notice is not None and "min_score" in nothing.notice
        assert len(await search(h, "zebra migration across the savanna", mode="semantic")) == len(notes)
    workspace.config_path.write_text(workspace.config_path.read_text() + "\n[retrieval]\nmin_score = 0\n")
    async with Harness.open(workspace.config()) as h:
        assert len(await search(h, "zebra migration across the savanna")) == len(notes)  # 0 keeps every result
