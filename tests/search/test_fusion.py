"""Fusion formulas on hand-made rankings."""

from __future__ import annotations

import pytest

from context_harness.search.fusion import FUSION_VERSION, convex, fuse, rrf

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
