"""Fusion formulas on hand-made rankings."""

from __future__ import annotations

import pytest

from context_harness.search.fusion import DEFAULT_ALPHA, FUSION_VERSION, convex, fuse, rrf, scaled

KEYWORD = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
SEMANTIC = [("c", 0.9), ("d", 0.7), ("a", 0.5)]


def test_convex_min_max_by_hand() -> None:
    fused = convex(KEYWORD, SEMANTIC, alpha=0.5)
    # keyword normalised: a 1.0, b 0.5, c 0.0; semantic: c 1.0, d 0.5, a 0.0
    assert [(f.doc_id, round(f.score, 6)) for f in fused] == [("a", 0.5), ("c", 0.5), ("b", 0.25), ("d", 0.25)]
    a = fused[0].details
    assert a.method == "convex"
    assert (a.keyword.rank, a.keyword.score, a.keyword.normalized) == (1, 10.0, 1.0)
    assert (a.semantic.rank, a.semantic.normalized) == (3, 0.0)
    assert fused[3].details.keyword is None  # d only found by the semantic list


def test_convex_alpha_extremes() -> None:
    assert [f.doc_id for f in convex(KEYWORD, SEMANTIC, alpha=0.0)][:3] == ["a", "b", "c"]
    assert [f.doc_id for f in convex(KEYWORD, SEMANTIC, alpha=1.0)][:3] == ["c", "d", "a"]
    weighted = {f.doc_id: f.score for f in convex(KEYWORD, SEMANTIC, alpha=0.25)}
    assert weighted["c"] == pytest.approx(0.25) and weighted["a"] == pytest.approx(0.75)
    with pytest.raises(ValueError):
        convex(KEYWORD, SEMANTIC, alpha=1.5)


def test_rrf_by_hand() -> None:
    fused = rrf(KEYWORD, SEMANTIC, k=60)
    scores = {f.doc_id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62) and scores["d"] == pytest.approx(1 / 62)
    assert [f.doc_id for f in fused] == ["a", "c", "b", "d"]  # exact ties broken by doc id
    assert fused[0].details.method == "rrf" and fused[0].details.semantic.rank == 3


def test_deterministic_ties_and_input_order() -> None:
    shuffled = list(reversed(KEYWORD))
    assert convex(shuffled, SEMANTIC, 0.5) == convex(KEYWORD, SEMANTIC, 0.5)
    assert rrf(shuffled, SEMANTIC) == rrf(KEYWORD, SEMANTIC)
    tied = [("z", 1.0), ("y", 1.0), ("x", 1.0)]
    assert [f.doc_id for f in rrf(tied, [])] == ["x", "y", "z"]
    assert [f.score for f in convex(tied, [], 0.5)] == [0.5, 0.5, 0.5]  # equal scores normalise to 1


def test_edge_cases() -> None:
    assert convex([], [], 0.5) == [] and rrf([], []) == []
    only_keyword = convex(KEYWORD, [], 0.3)
    assert [f.doc_id for f in only_keyword] == ["a", "b", "c"]
    duplicated = convex([("a", 1.0), ("a", 3.0), ("b", 2.0)], [], 0.0)
    assert [(f.doc_id, f.details.keyword.score) for f in duplicated] == [("a", 3.0), ("b", 2.0)]
    assert [f.doc_id for f in convex([("n", float("nan")), ("m", 1.0)], [], 0.0)] == ["m"]


def test_fuse_dispatch_and_version() -> None:
    assert fuse("convex", KEYWORD, SEMANTIC, alpha=0.5) == convex(KEYWORD, SEMANTIC, 0.5)
    assert fuse("rrf", KEYWORD, SEMANTIC, rrf_k=10) == rrf(KEYWORD, SEMANTIC, 10)
    with pytest.raises(ValueError):
        fuse("max", KEYWORD, SEMANTIC)
    assert FUSION_VERSION
    doc_id, score, details = convex(KEYWORD, SEMANTIC, 0.5)[0]  # unpacks as a 3-tuple
    assert doc_id == "a" and details.keyword is not None


def test_documents_without_vectors_are_ranked_by_keyword_score_alone() -> None:
    # b has no vector yet: the semantic list could not find it. Scored 0 there, it would be capped at
    # (1 - alpha) and sink below documents the keyword list ranks far lower.
    fused = {f.doc_id: f.score for f in convex(KEYWORD, SEMANTIC, alpha=0.8, keyword_only={"b"})}
    assert fused["b"] == pytest.approx(0.5)  # its normalised keyword score
    assert fused["a"] == pytest.approx(0.2) and fused["c"] == pytest.approx(0.8)  # others unchanged
    assert convex(KEYWORD, SEMANTIC, 0.8, keyword_only={"b"})[1].doc_id == "b"
    scores = {f.doc_id: f.score for f in rrf(KEYWORD, SEMANTIC, k=60, keyword_only={"b"})}
    assert scores["b"] == pytest.approx(2 / 62) and scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    # A document the semantic list did find is not keyword-only, whatever the caller says.
    assert convex(KEYWORD, SEMANTIC, 0.8, keyword_only={"a"}) == convex(KEYWORD, SEMANTIC, 0.8)
    assert fuse("rrf", KEYWORD, SEMANTIC, keyword_only={"b"}) == rrf(KEYWORD, SEMANTIC, keyword_only={"b"})


def test_scaled_by_hand() -> None:
    # keyword scores over the query's reference 4.0: a 2.5, b 1.5, c 0.5; cosines as they are.
    fused = scaled(KEYWORD, SEMANTIC, alpha=0.6, keyword_ref=4.0, k=50)
    scores = {f.doc_id: f.score for f in fused}
    assert scores["a"] == pytest.approx(0.4 * 2.5 + 0.6 * 0.5)
    assert scores["c"] == pytest.approx(0.4 * 0.5 + 0.6 * 0.9)
    assert scores["b"] == pytest.approx(0.4 * 1.5)  # lists shorter than k held every match: 0 where missing
    assert scores["d"] == pytest.approx(0.6 * 0.7)
    assert [f.doc_id for f in fused] == ["a", "c", "b", "d"]
    assert fused[0].details.method == "scaled" and fused[0].details.keyword.normalized == pytest.approx(2.5)
    assert fuse("scaled", KEYWORD, SEMANTIC, keyword_ref=4.0) == scaled(KEYWORD, SEMANTIC, DEFAULT_ALPHA["scaled"], 4.0, 50)
    assert scaled(KEYWORD, SEMANTIC, 0.6, keyword_ref=0.0, k=50) == scaled(KEYWORD, SEMANTIC, 0.6, 1.0, 50)


def test_scaled_does_not_depend_on_how_many_candidates_came_back() -> None:
    # The case min-max got wrong: a passing mention (offsite) a little ahead on BM25, the note titled
    # with the query word (recipe) clearly ahead on meaning. Over these three candidates min-max
    # stretches the small BM25 gap to the whole range and the passing mention wins.
    keyword = [("offsite", 2.2), ("recipe", 2.1), ("packing", 2.0)]
    semantic = [("recipe", 0.526), ("offsite", 0.457), ("packing", 0.30)]
    assert convex(keyword, semantic, 0.5)[0].doc_id == "offsite"
    assert scaled(keyword, semantic, 0.63, keyword_ref=2.0, k=50)[0].doc_id == "recipe"
    # A weak extra candidate changes no other document's score (min-max rescales them all).
    more = scaled(keyword + [("weak", 0.1)], semantic + [("weak", 0.05)], 0.63, 2.0, 50)
    fewer = scaled(keyword, semantic, 0.63, 2.0, 50)
    assert {f.doc_id: f.score for f in more if f.doc_id != "weak"} == {f.doc_id: f.score for f in fewer}
    assert convex(keyword + [("weak", 0.1)], semantic, 0.5)[1].score != convex(keyword, semantic, 0.5)[1].score


def test_scaled_missing_from_a_full_list_takes_its_last_score() -> None:
    # Both lists came back full (k = 3): a document missing from one was below its last score.
    fused = {f.doc_id: f.score for f in scaled(KEYWORD, SEMANTIC, 0.5, keyword_ref=1.0, k=3)}
    assert fused["b"] == pytest.approx(0.5 * 6.0 + 0.5 * 0.5)  # the semantic list's last: a's 0.5
    assert fused["d"] == pytest.approx(0.5 * 2.0 + 0.5 * 0.7)  # the keyword list's last: c's 2.0
    # Without a vector, the semantic part is the keyword part, not the floor.
    alone = {f.doc_id: f.score for f in scaled(KEYWORD, SEMANTIC, 0.5, 1.0, 3, keyword_only={"b"})}
    assert alone["b"] == pytest.approx(6.0)
    with pytest.raises(ValueError):
        scaled(KEYWORD, SEMANTIC, alpha=-0.1, keyword_ref=1.0, k=3)


def test_min_score_is_tuned_for_the_bundled_model_only() -> None:
    from context_harness.search.fusion import min_score

    assert min_score(None, "local:all-MiniLM-L6-v2-int8-dynamic:384") == 0.26
    assert min_score(None, "openai:text-embedding-3-small:1536") == 0.0  # another cosine scale: every result
    assert min_score(0.4, "fake:hash:64") == 0.4 and min_score(0.0, "local:all-MiniLM-L6-v2:384") == 0.0
