"""Query-aware snippets: found by indexed (stemmed) form, weighted by IDF, cut at word boundaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness.common.text import splits_cluster
from context_harness.search.snippets import lead, make_snippet, salient
from context_harness.store.keyword import KeywordIndex


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KeywordIndex:
    return KeywordIndex(Path(tmp_path_factory.mktemp("snippets")) / "tantivy")


def weights_for(index: KeywordIndex, query: str, idf: dict[str, float] | None = None) -> dict[str, float]:
    return {term: (idf or {}).get(term, 1.0) for term in index.terms(query)}


def test_words_match_by_their_stem(index: KeywordIndex) -> None:
    text = "Intro. " + "filler " * 80 + "Generational garbage collectors studied here. " + "tail " * 80
    snippet = make_snippet(text, weights_for(index, "garbage collector studies"), index.stem, 120)
    assert snippet.matched
    assert "collectors" in snippet.text and "studied" in snippet.text
    assert snippet.text.startswith("… ") and snippet.text.endswith(" …")
    assert len(snippet.text) <= 120 + 4 + 20  # the budget, the ellipses, one widened word each side
    assert text[snippet.start:].startswith("garbage")


def test_the_window_with_the_rarest_words_wins(index: KeywordIndex) -> None:
    text = "data " * 60 + "filler " * 60 + "a pelican ate data " + "filler " * 60
    weights = weights_for(index, "data pelican", {"data": 0.2, "pelican": 5.0})
    snippet = make_snippet(text, weights, index.stem, 80)
    assert "pelican" in snippet.text


def test_a_word_everywhere_in_a_long_text_does_not_place_the_window(index: KeywordIndex) -> None:
    # "crypto" is as rare as "zebulon" across documents, but this manual names it in every section
    sections = [f"The option {n} of crypto is set here. " + "filler " * 40 for n in range(60)]
    sections[45] = "The zebulon option of crypto is set here. " + "filler " * 40
    text = "".join(sections)
    weights = weights_for(index, "zebulon crypto", {"zebulon": 1.0, "crypto": 1.0})
    snippet = make_snippet(text, weights, index.stem, 120)
    assert "zebulon" in snippet.text and text[snippet.start:].startswith("zebulon")
    only = make_snippet(text, weights_for(index, "crypto"), index.stem, 120)  # nothing else to place it by
    assert only.matched and "crypto" in only.text


@pytest.mark.parametrize("text", ["short", "word " * 500, " " * 2000 + "late words " * 50, "x" * 3000,
                                  "a\n\n" * 700, "ab " * 133 + "z"])
def test_lead_collapses_only_the_head_yet_cuts_as_before(text: str) -> None:
    full = " ".join(text.split())
    cut = full.rfind(" ", 0, 100)
    assert lead(text, 100) == (full if len(full) <= 100 else full[: cut if cut > 50 else 100] + " …")


def test_common_words_are_not_looked_for() -> None:
    assert salient({"a": 0.05, "pelican": 6.0, "migrat": 3.0}) == {"pelican": 6.0, "migrat": 3.0}
    assert salient({}) == {}


def test_a_word_inside_another_word_does_not_match(index: KeywordIndex) -> None:
    text = "We concatenate strings. " * 3
    snippet = make_snippet(text, weights_for(index, "cat"), index.stem, 40)
    assert not snippet.matched and snippet.start == 0
    assert snippet.text == "We concatenate strings. We concatenate …"


def test_offsets_survive_characters_that_lowercase_to_two(index: KeywordIndex) -> None:
    text = "İİİİ " * 30 + "the quokka sleeps"
    snippet = make_snippet(text, weights_for(index, "quokka"), index.stem, 40)
    assert snippet.matched and text[snippet.start:].startswith("quokka")


def test_heading_markers_are_not_shown(index: KeywordIndex) -> None:
    snippet = make_snippet("# Quokka care\n\nFeed them leaves.", weights_for(index, "quokka"), index.stem, 100)
    assert snippet.text == "Quokka care Feed them leaves."


# The demo's first hit, chunk 4 of docs/how-to/connect-a-client.md: it begins inside the shell transcript
# of `ctx setup` (the fence opened in chunk 2), whose lines repeat "Claude Desktop".
TRANSCRIPT_TAIL = (
    "backup of the previous file: /home/me/.config/Claude/claude_desktop_config.json.bak-20261126T173756Z\n"
    "wrote /home/me/.config/Claude/claude_desktop_config.json; restart Claude Desktop (or reload its MCP "
    "servers) to start it\ncheck it as Claude Desktop will start it: ctx doctor claude-desktop\n```\n\n"
    "Then restart the client (Claude Desktop: quit it, not only close the window), or reload its MCP\n"
    "servers.\n")


def test_prose_is_shown_before_a_code_block_holding_the_same_words(index: KeywordIndex) -> None:
    weights = weights_for(index, "how do I connect Claude Desktop")
    snippet = make_snippet(TRANSCRIPT_TAIL, weights, index.stem, 240)
    assert snippet.text == ("… Then restart the client (Claude Desktop: quit it, not only close the window), "
                            "or reload its MCP servers.")
    fenced = "Intro line.\n\n```sh\nctx setup claude-desktop  # Claude Desktop\n```\n\nClaude Desktop reads it. "
    assert make_snippet(fenced, weights, index.stem, 30).text.startswith("… Claude Desktop reads it.")


def test_code_is_shown_when_only_code_holds_a_query_word(index: KeywordIndex) -> None:
    text = "Set the hook up.\n\n```toml\n[hooks]\npelican = true\n```\n\nThen restart the hook.\n"
    snippet = make_snippet(text, weights_for(index, "pelican hook", {"pelican": 5.0, "hook": 1.0}), index.stem, 40)
    assert "pelican = true" in snippet.text


def test_cjk_terms_are_found_inside_a_run_and_the_cut_stays_near(index: KeywordIndex) -> None:
    run = "天地玄黄宇宙洪荒日月盈昃辰宿列张" * 400  # 6,400 characters, no space
    text = run[:3000] + "我们的发布流程需要先在预发布环境中完成回归测试。" + run[3000:]
    snippet = make_snippet(text, weights_for(index, "回归测试"), index.stem, 80)
    assert snippet.matched and text[snippet.start:].startswith("回归")
    assert "回归测试" in snippet.text and len(snippet.text) <= 80 + 4 + 2 * 30


def test_a_cut_never_splits_a_grapheme_cluster(index: KeywordIndex) -> None:
    thai = "ภาษาไทยเป็นภาษาที่สวยงาม" * 30  # vowel and tone marks join the consonant before them
    for chars in range(20, 60):
        shown = lead(thai, chars).removesuffix(" …")
        assert thai.startswith(shown) and not splits_cluster(thai, len(shown)), chars
    hindi = "हिन्दी भाषा " * 3 + "x" * 50 + " फिर हिन्दी"
    snippet = make_snippet(hindi, weights_for(index, "हिन्दी"), index.stem, 30)
    assert snippet.matched and snippet.text.startswith("हिन्दी")  # the word whole, its virama inside it
