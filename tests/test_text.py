"""Text in any script (``common.text``): grapheme clusters checked against the ``regex`` module's
``\\X`` (an independent implementation of UAX #29), sentence ends, token estimates."""

from __future__ import annotations

import random
import time

import pytest

from context_harness.common.passages import window_end
from context_harness.common.text import cluster_cut, estimate_tokens, sentences, splits_cluster

regex = pytest.importorskip("regex", reason="the regex module (a test dependency) gives the reference \\X")

# One grapheme cluster each, in the scripts and sequences a cut at an exact offset would split.
CLUSTERS = {
    "combining acute": "e\u0301",
    "two combining marks": "o\u0308\u0304",
    "emoji ZWJ family": "\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
    "emoji ZWJ technologist": "\U0001F469\U0001F3FD\u200d\U0001F4BB",
    "flag": "\U0001F1EF\U0001F1F5",
    "skin tone": "\U0001F44D\U0001F3FD",
    "variation selector": "\u263a\ufe0f",
    "tag sequence (flag of England)": "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
    "Hangul jamo LVT": "\u1100\u1161\u11a8",
    "Hangul LV + T": "\uac00\u11a8",
    "Hangul old jamo LLVV": "\u1100\u1100\u1161\u1161",
    "Thai vowel above + tone": "\u0e19\u0e49\u0e33",
    "Thai SARA AM": "\u0e01\u0e33",
    "Thai below vowel": "\u0e01\u0e38\u0e48",
    "Lao AM": "\u0e81\u0eb3",
    "Devanagari conjunct": "\u0915\u094d\u0937",
    "Devanagari conjunct + vowel sign": "\u0924\u094d\u0930\u093f",
    "Devanagari ZWJ conjunct": "\u0915\u094d\u200d\u0937",
    "Bengali conjunct": "\u0995\u09cd\u09b7",
    "Arabic number sign (prepend)": "\u0600\u0661",
    "halfwidth katakana voiced": "\uff76\uff9e",
    "CRLF": "\r\n",
    "Tamil vowel sign": "\u0b95\u0bbe",
}
SINGLES = "日本語中文한국어ไทยเกالعربيةРусский ab。！？、\n"


def boundaries(text: str) -> set[int]:
    """The grapheme cluster boundaries of ``text`` as ``regex``'s ``\\X`` finds them."""
    ends, pos = {0}, 0
    for cluster in regex.findall(r"\X", text):
        pos += len(cluster)
        ends.add(pos)
    return ends


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_no_cut_inside_a_cluster(name: str) -> None:
    cluster = CLUSTERS[name]
    assert regex.findall(r"\X", cluster) == [cluster], "the case is one cluster by the standard"
    text = "x" + cluster + "y"
    inside = [pos for pos in range(2, len(text) - 1) if not splits_cluster(text, pos)]
    assert inside == [], f"{name}: a cut allowed inside the cluster at {inside}"
    assert not splits_cluster(text, 1) and not splits_cluster(text, len(text) - 1)


def test_every_cut_allowed_is_a_boundary_of_the_standard() -> None:
    rng = random.Random(48)
    pieces = [*CLUSTERS.values(), *SINGLES]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        standard = boundaries(text)
        allowed = {pos for pos in range(len(text) + 1) if not splits_cluster(text, pos)}
        assert allowed <= standard, (text, sorted(allowed - standard))
        # and nearly all the standard's boundaries are allowed (only after a ZWJ is kept more)
        missed = standard - allowed
        assert all(text[pos - 1] == "\u200d" for pos in missed), (text, sorted(missed))


def test_windows_never_split_a_cluster_of_any_script() -> None:
    rng = random.Random(5)
    body = "".join(rng.choice(list(CLUSTERS.values())) for _ in range(3_000))
    standard = boundaries(body)
    for budget in (9, 16, 100, 999):
        start, pieces = 0, []
        while start < len(body):
            end = window_end(body, start, budget)
            assert start < end <= start + budget and end in standard, (budget, body[end - 3:end + 3])
            pieces.append(body[start:end])
            start = end
        assert "".join(pieces) == body


def test_cluster_cut_moves_back_to_a_boundary() -> None:
    text = "ab" + CLUSTERS["Hangul jamo LVT"] + CLUSTERS["Devanagari conjunct + vowel sign"]
    assert [cluster_cut(text, pos, 0) for pos in range(1, len(text) + 1)] == [1, 2, 2, 2, 5, 5, 5, 5, 9]
    assert cluster_cut("\u1100\u1161\u11a8", 2, 0) == 2  # one cluster larger than the window: cut anyway


def test_the_rules_cost_nothing_on_a_megabyte() -> None:
    """``window_end`` paging through 1 MB of clusters: a cut's rules are asked at the cut only
    (benchmarks/text_path.py measures it; here a bound with a wide margin)."""
    body = ("".join(CLUSTERS.values()) * 20_000)[:1_000_000]
    started = time.perf_counter()
    start, windows = 0, 0
    while start < len(body):
        start = window_end(body, start, 2_000)
        windows += 1
    assert windows >= 500 and time.perf_counter() - started < 1.0


def test_cjk_sentences_end_without_spaces() -> None:
    text = "我们先测试。然后发布！「本当ですか？」はい｡Done. Next one"
    assert sentences(text) == [("我们先测试。", ""), ("然后发布！", ""), ("「本当ですか？」", ""), ("はい｡", ""),
                               ("Done.", ""), ("Next one", " ")]
    assert sentences("数字３．１４は一つ。") == [("数字３．１４は一つ。", "")]
    assert "".join(sep + s for s, sep in sentences(text)) == text


def test_token_estimates_count_cjk_characters_and_not_combining_marks() -> None:
    assert estimate_tokens("我们的发布流程") == 7
    assert estimate_tokens("日本語の文章です。") == 9
    assert estimate_tokens("한국어") == 3
    assert estimate_tokens("cafe\u0301") == estimate_tokens("cafe") == 1  # WordPiece strips the mark
    assert estimate_tokens("\u0928\u0947\u0915") == 2  # Devanagari: a non-spacing vowel sign is no token
