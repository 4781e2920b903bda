"""The keyword analysis by script (common/analysis.py): what the index holds and what a query looks for."""

from __future__ import annotations

import pytest
import tantivy

from context_harness.common import analysis
from context_harness.common.analysis import (
    MAX_TERM_CHARS,
    detect_language,
    index_terms,
    phrase_terms,
    query_terms,
    segment,
    stemmer_of,
)

ENGLISH = ("The collectors were running studies of the 3.14 ratio in don't-care cases; naïve sortings "
           "failed. Supercalifragilisticexpialidocious letters x_y.")


def _en_stem(text: str) -> list[str]:
    """What Tantivy's built-in ``en_stem`` tokenizer indexes (minus its dropping of long tokens)."""
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stemmer("english")).build().analyze(text))


def test_english_is_exactly_en_stem() -> None:
    assert index_terms(ENGLISH, "en") == _en_stem(ENGLISH)
    assert query_terms(ENGLISH, ["en"]) == list(dict.fromkeys(_en_stem(ENGLISH)))
    assert index_terms("running studies", "en") == ["run", "studi"]


def test_non_ascii_latin_matches_en_stem_too() -> None:
    text = "Café crème — naïve Zürich résumé, “quoted” words"
    assert index_terms(text, "en") == _en_stem(text)


def test_every_stemmer_named_exists_in_tantivy() -> None:
    for name in set(analysis.STEMMERS.values()):
        tantivy.Filter.stemmer(name)  # raises for a language Tantivy does not ship
    assert stemmer_of("de") == "german" and stemmer_of("pt-BR") == "portuguese"
    assert stemmer_of("zh") is None and stemmer_of("und") is None


def test_chinese_runs_are_bigrams() -> None:
    note = "我们的发布流程需要先在预发布环境中完成回归测试。"
    terms = index_terms(note, "zh")
    assert terms[:3] == ["我们", "们的", "的发"]
    for query in ("发布流程", "回归测试"):
        assert set(query_terms(query, ["zh"])) <= set(terms)
    assert phrase_terms("发布流程", "zh") == ["发布", "布流", "流程"]
    assert index_terms("学", "zh") == ["学"]


def test_long_cjk_run_keeps_every_pair() -> None:
    run = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(10_000))
    terms = index_terms(run, "zh")
    assert len(terms) == 9_999
    assert terms[1234] == run[1234:1236]


def test_mixed_scripts_split_by_script() -> None:
    assert index_terms("Chrome浏览器 running测试", "en") == ["chrome", "浏览", "览器", "run", "测试"]
    assert index_terms("2024年に東京で", "ja") == ["2024", "年に", "に東", "東京", "京で"]


def test_korean_particles_do_not_hide_the_noun() -> None:
    assert set(query_terms("학교", ["ko"])) <= set(index_terms("학교에서 공부했다", "ko"))


def test_german_is_stemmed_as_german_english_as_english() -> None:
    assert index_terms("Die Häuser", "de") == ["die", "haus"]
    assert query_terms("Haus", ["de"]) == ["haus"]
    assert index_terms("Die Häuser", "en") == ["die", "häuser"]
    assert query_terms("houses Häuser", ["en", "de"]) == ["hous", "häuser", "haus"]


def test_devanagari_words_are_not_cut_at_the_virama() -> None:
    assert index_terms("हिन्दी भाषा", "hi") == ["हिन्दी", "भाषा"]
    assert index_terms("cafe\u0301", "fr") == index_terms("café", "fr")  # decomposed accent: the same word


def test_long_token_is_split_not_dropped() -> None:
    token = "".join("abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(200))
    terms = index_terms(f"before {token} after", "und")
    assert terms[0] == "before" and terms[-1] == "after"
    assert "".join(terms[1:-1]) == token and all(len(t) <= MAX_TERM_CHARS for t in terms)
    assert set(query_terms(token, ["en"])) <= set(index_terms(token, "en"))
    wide = "ü" * 30  # 60 bytes: Tantivy's remove_long(40) counted bytes and dropped it
    assert index_terms(wide, "und") == [wide]


def test_thai_is_segmented_into_words() -> None:
    words = segment("ภาษาไทยเป็นภาษาที่สวยงาม")
    if analysis._word_breaker() is None:
        pytest.skip("icu4py is not installed on this platform")
    assert words == ["ภาษา", "ไทย", "เป็น", "ภาษา", "ที่", "สวยงาม"]
    assert set(query_terms("สวยงาม", ["th"])) <= set(index_terms("ภาษาไทยเป็นภาษาที่สวยงาม", "th"))


def test_lao_khmer_and_myanmar_are_segmented_too() -> None:
    if analysis._word_breaker() is None:
        pytest.skip("icu4py is not installed on this platform")
    assert segment("ພາສາລາວເປັນພາສາທີ່ສວຍງາມ")[:2] == ["ພາສາ", "ລາວ"]
    for run in ("ភាសាខ្មែរគឺជាភាសា", "မြန်မာဘာသာစကား"):
        words = segment(run)
        assert len(words) > 1 and "".join(words) == run  # split, every character kept


def test_thai_without_icu_falls_back_to_bigrams(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analysis, "_word_breaker", lambda: None)
    assert segment("ภาษาไทย") == ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]
    assert set(query_terms("ไทย", ["th"])) <= set(index_terms("ภาษาไทยเป็น", "th"))


def test_nothing_is_dropped() -> None:
    text = "a " + "x" * 95 + " 中 ภาษา ü" * 3 + " हिन्दी 123"
    joined = "".join(index_terms(text, "und"))
    for ch in set(text) - {" "}:
        assert ch.lower() in joined, ch


def test_detect_language() -> None:
    assert detect_language("The quick brown fox jumps over the lazy dog near the river bank.") == "en"
    assert detect_language("Die Häuser in der Altstadt sind sehr alt und schön.") == "de"
    assert detect_language("我们的发布流程需要先在预发布环境中完成回归测试。") == "zh"
    assert detect_language("ภาษาไทยเป็นภาษาที่สวยงาม") == "th"
    assert detect_language("12345 !!! ---") == "und"


def test_a_short_note_the_detector_only_guesses_at_is_analysed_as_english() -> None:
    """py3langid calls "Quokkas live on Rottnest island" Estonian (p 0.17): stemmed as Estonian (no
    stemmer), "Quokkas" stayed "quokkas" and a search for "quokka" found nothing."""
    text = "Quokkas live on Rottnest island"
    assert detect_language(text) == "en"
    assert index_terms(text)[0] in query_terms("quokka", ["en"])
    assert index_terms("Die Häuser in der Altstadt sind sehr alt und schön.") == index_terms(
        "Die Häuser in der Altstadt sind sehr alt und schön.", "de")


def test_detected_labels_are_the_models() -> None:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    labels = set(LanguageIdentifier.from_model_file(MODEL_FILE).labels)
    assert labels == analysis.DETECTED
    assert {"auto"}.isdisjoint(analysis.LANGUAGES)


def test_index_text_of_a_long_text_is_its_terms_analysed_slice_by_slice(monkeypatch) -> None:
    """A long body is analysed a slice at a time (a 50 MB body as one list of terms doubled the
    sync's peak memory); the terms are the same wherever the slices end at a space."""
    monkeypatch.setattr(analysis, "SLICE_CHARS", 128)
    text = " ".join(["Die Häuser", "the running dogs", "发布流程", "ภาษาไทย", "x" * 90, "\nend"] * 20)
    assert analysis.index_text(text, "de") == " ".join(index_terms(text, "de"))
    assert analysis.index_text("short text", "en") == "short text"


def test_a_query_sure_of_its_language_is_looked_for_in_its_forms_alone() -> None:
    """In an index of English and German documents, an English sentence is not also looked for as
    German stems it ("older" is not also "old", a word the English documents hold); a word or two the
    detector cannot place is looked for in both languages' forms."""
    english = "The older houses along the river were renovated last year by the city council."
    assert analysis.query_words(english, ["en", "de"]) == [(term,) for term in analysis.index_terms(english, "en")]
    german = "Die alten Häuser am Fluss wurden im letzten Jahr renoviert."
    assert analysis.query_words(german, ["en", "de"]) == [(term,) for term in analysis.index_terms(german, "de")]
    assert analysis.query_words("older", ["en", "de"]) == [("older", "old")]
    assert analysis.query_terms("older houses", ["en", "de"]) == ["older", "old", "hous"]  # one form each
    assert analysis.query_words(german, ["en"]) == [(term,) for term in analysis.index_terms(german, "en")]
