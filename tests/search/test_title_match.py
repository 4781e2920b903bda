"""A title holding the whole query ranks first: twenty personal notes (``personal_notes/``), the real
bundled model, hybrid search with defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness.common.analysis import query_words
from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import SearchRequest
from context_harness.search.fusion import Fused, FusionDetails, keyword_reference
from context_harness.search.title_match import lift_titled
from support.workspace import config_toml

pytestmark = pytest.mark.anyio
NOTES = Path(__file__).parent / "personal_notes"


def _fused(*scores: tuple[str, float]) -> list[Fused]:
    return [Fused(doc_id, score, FusionDetails("scaled", None, None)) for doc_id, score in scores]


def test_only_a_title_holding_every_query_word_is_lifted() -> None:
    fused = _fused(("offsite", 0.70), ("bread", 0.58), ("pizza", 0.50))
    titles = {"offsite": "Team offsite ideas", "bread": "Sourdough bread", "pizza": "Pizza dough"}
    lifted, ids = lift_titled(fused, [("sourdough",)], titles, str.lower, 0.15)
    assert [(f.doc_id, round(f.score, 2)) for f in lifted] == [("bread", 0.73), ("offsite", 0.70), ("pizza", 0.50)]
    assert ids == {"bread"}
    # one query word missing from the title: no lift; no bonus or no query words: unchanged
    assert lift_titled(fused, [("sourdough",), ("starter",)], titles, str.lower, 0.15) == (fused, set())
    assert lift_titled(fused, [("sourdough",)], titles, str.lower, 0.0) == (fused, set())
    assert lift_titled(fused, [], titles, str.lower, 0.15) == (fused, set())


async def test_the_note_titled_sourdough_ranks_above_a_passing_mention(workspace) -> None:
    for note in NOTES.glob("*.md"):
        workspace.write(note.name, note.read_text(encoding="utf-8"))
    text = workspace.config_path.read_text().replace('provider = "disabled"', 'provider = "local"')
    workspace.config_path.write_text(text)
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        keyword = (await h.search(SearchRequest(query="sourdough", mode="keyword"))).results
        assert keyword[0].title == "Team offsite ideas"  # BM25 alone prefers the short note's one mention
        hybrid = (await h.search(SearchRequest(query="sourdough", explain=True))).results
        assert [r.title for r in hybrid[:2]] == ["Sourdough bread", "Team offsite ideas"]
        assert any("title holds every query word" in n for n in hybrid[0].explain.notes)
        assert (await h.search(SearchRequest(query="zebra"))).results == []  # no answer: still none
    workspace.config_path.write_text(workspace.config_path.read_text() + "\n[retrieval]\ntitle_match = 0\n")
    async with Harness.open(workspace.config()) as h:
        assert (await h.search(SearchRequest(query="sourdough"))).results[0].title == "Team offsite ideas"


def test_a_chinese_title_holding_the_query_is_lifted() -> None:
    fused = _fused(("other", 0.70), ("release", 0.58))
    titles = {"other": "发布说明", "release": "发布流程说明"}
    lifted, ids = lift_titled(fused, [("发布",), ("布流",), ("流程",)], titles, str.lower, 0.15)
    assert ids == {"release"} and lifted[0].doc_id == "release"


def test_a_word_with_a_form_in_each_language_weighs_once() -> None:
    words = query_words("baking bread", ["en", "de"])
    assert words == [("bake", "baking"), ("bread",)]  # English stems it, German keeps it as written
    weights = {"bake": 2.0, "baking": 9.0, "bread": 3.0}
    assert keyword_reference(weights, words) == 5.0  # the first form the index holds, once per word
    assert keyword_reference({"baking": 9.0, "bread": 3.0}, words) == 12.0
    assert keyword_reference({}, words) == 0.0
    assert keyword_reference(weights, query_words("bread, baking bread", ["en", "de"])) == 5.0  # a term once


async def test_a_mixed_index_scales_and_lifts_by_the_words_of_the_query(workspace) -> None:
    """English and German notes: "baking" is looked for as "bake" and as "baking". The title
    "Baking bread" still holds the whole query, and BM25 is scaled by the word's weight once."""
    fake.register()
    workspace.write("bread.md", "# Baking bread\n\nFlour, water, salt and a warm kitchen.\n")
    workspace.write("cakes.md", "# Cakes\n\nBaking cakes for the fair: baking takes an oven and patience.\n")
    workspace.write("soup.md", "# Soup\n\nA pot of leek soup for cold evenings.\n")
    german = workspace.root / "de"
    german.mkdir()
    (german / "brot.md").write_text("# Brot\n\nDas Brot wird im Ofen gebacken und danach gekühlt.\n", encoding="utf-8")
    workspace.config_path.write_text(config_toml(embedding="fake", extra='\n[connectors.filesystem.deutsch]\n'
                                                 'root = "de"\nlanguage = "de"\n'), encoding="utf-8")
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        assert h.index.languages() == ["en", "de"]
        hits = (await h.search(SearchRequest(query="baking", mode="hybrid", explain=True))).results
        bread = next(r for r in hits if r.title == "Baking bread")
        assert any("title holds every query word" in note for note in bread.explain.notes)
        bake = h.index.term_weights("baking")["bake"]
        assert any("(the query's BM25 reference)" in note and f"/ {bake:.3f} " in note for note in bread.explain.notes)
