"""Hybrid fusion of a keyword and a semantic ranking: pure functions over ``(doc_id, score)`` lists.

- ``scaled`` (the default): each score on a scale that does not depend on how many candidates came
  back: the BM25 score divided by the query's own reference (the sum of its terms' IDFs, what one
  occurrence of every term in an average document is worth, roughly), the cosine similarity as it
  is; then ``alpha * semantic + (1 - alpha) * keyword``. A document missing from a list that came
  back full (``k`` hits) takes that list's last score, an upper bound of its own; missing from a
  shorter list (it had every match), 0.
- ``convex``: min-max normalise each list to [0, 1], then ``alpha * semantic + (1 - alpha) * keyword``;
  a document missing from a list scores 0 for it. Over a handful of candidates min-max turns a small
  gap into the whole range (a passing mention outranked the note titled with the query word).
- ``rrf``: reciprocal rank fusion, ``sum 1 / (k + rank)`` over the lists that found the document.

A document in ``keyword_only`` (it has no vector yet, so the semantic list could not find it) is
ranked by its keyword score alone: its semantic part is taken equal to its keyword part (convex,
scaled: the normalised keyword score; rrf: its keyword term twice), instead of 0.

Both return ``Fused(doc_id, score, details)`` sorted by fused score (desc), then doc id (asc), so
equal inputs always give equal outputs. ``details`` keeps each list's rank, raw and normalised
score for ``explain``. Change ``FUSION_VERSION`` whenever a formula changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

FUSION_VERSION = "4"  # 2: docs without vectors by keyword alone; 3: scaled fusion; 4: a word once in its reference
DEFAULT_ALPHA = {"scaled": 0.63, "convex": 0.5}  # tuned on SciFact train (docs/benchmarks.md)
# The fused score (scaled) under which hybrid results are left out, per embedder: cosine scales differ
# from model to model, so only the bundled model has a tuned one (SciFact train and off-topic questions).
TUNED_MIN_SCORE = {"local:all-MiniLM-L6-v2": 0.26}

Ranking = Sequence[tuple[str, float]]


class ListHit(NamedTuple):
    """Where one list placed a document: 1-based rank, raw score, score after normalisation."""

    rank: int
    score: float
    normalized: float


class FusionDetails(NamedTuple):
    method: str  # "scaled" | "convex" | "rrf"
    keyword: ListHit | None
    semantic: ListHit | None


class Fused(NamedTuple):
    doc_id: str
    score: float
    details: FusionDetails


def convex(keyword: Ranking, semantic: Ranking, alpha: float, limit: int | None = None,
           keyword_only: Collection[str] = ()) -> list[Fused]:
    """Min-max convex fusion; ``alpha`` weighs the semantic list (0 = keyword only, 1 = semantic only)."""
    _check_alpha(alpha)
    kw = _hits(keyword, _min_max)
    sem = _hits(semantic, _min_max)
    scores = {doc_id: hit.normalized if doc_id in keyword_only and doc_id not in sem
              else (1.0 - alpha) * hit.normalized for doc_id, hit in kw.items()}
    for doc_id, hit in sem.items():
        scores[doc_id] = scores.get(doc_id, 0.0) + alpha * hit.normalized
    return _ranked("convex", scores, kw, sem, limit)


def scaled(keyword: Ranking, semantic: Ranking, alpha: float, keyword_ref: float, k: int,
           limit: int | None = None, keyword_only: Collection[str] = ()) -> list[Fused]:
    """Fusion on stable scales (see the module docstring): ``keyword_ref`` is the query's BM25
    reference (> 0), ``k`` the candidates each list was asked for."""
    _check_alpha(alpha)
    reference = keyword_ref if keyword_ref > 0 and math.isfinite(keyword_ref) else 1.0
    kw = _hits(keyword, lambda scores: [score / reference for score in scores])
    sem = _hits(semantic, lambda scores: list(scores))
    kw_floor = _floor(kw, k)
    sem_floor = _floor(sem, k)
    scores = {}
    for doc_id in kw.keys() | sem.keys():
        keyword_part = kw[doc_id].normalized if doc_id in kw else kw_floor
        if doc_id in sem:
            semantic_part = sem[doc_id].normalized
        else:
            semantic_part = keyword_part if doc_id in keyword_only else sem_floor
        scores[doc_id] = (1.0 - alpha) * keyword_part + alpha * semantic_part
    return _ranked("scaled", scores, kw, sem, limit)


def keyword_reference(weights: Mapping[str, float], words: Iterable[tuple[str, ...]]) -> float:
    """``scaled``'s BM25 reference for a query: the weights of its terms, each once, a word in its
    first form ``weights`` holds (the index's most common language first). A word analysed in several
    languages has several forms, which no one document holds together: counting each of them would
    shrink every keyword score of a mixed index (SciFact hybrid nDCG@10 fell from 0.7378 to 0.7323)."""
    chosen = (next((form for form in forms if form in weights), None) for forms in words)
    return sum(weights[form] for form in dict.fromkeys(chosen) if form is not None)


def _floor(hits: dict[str, ListHit], k: int) -> float:
    """What a document missing from a list scores on it: the last score when the list came back
    full (the document was below it), else 0 (the list held every match)."""
    if len(hits) < k or not hits:
        return 0.0
    return min(hit.normalized for hit in hits.values())


def rrf(keyword: Ranking, semantic: Ranking, k: int = 60, limit: int | None = None,
        keyword_only: Collection[str] = ()) -> list[Fused]:
    """Reciprocal rank fusion with constant ``k`` (the ``normalized`` field holds ``1 / (k + rank)``)."""
    if k < 1:
        raise ValueError(f"rrf k must be at least 1, got {k}")
    kw = _hits(keyword, lambda scores: [1.0 / (k + rank) for rank in range(1, len(scores) + 1)])
    sem = _hits(semantic, lambda scores: [1.0 / (k + rank) for rank in range(1, len(scores) + 1)])
    scores = {doc_id: 2 * hit.normalized if doc_id in keyword_only and doc_id not in sem else hit.normalized
              for doc_id, hit in kw.items()}
    for doc_id, hit in sem.items():
        scores[doc_id] = scores.get(doc_id, 0.0) + hit.normalized
    return _ranked("rrf", scores, kw, sem, limit)


def fuse(method: str, keyword: Ranking, semantic: Ranking, *, alpha: float | None = None, rrf_k: int = 60,
         keyword_ref: float = 1.0, k: int = 50, limit: int | None = None,
         keyword_only: Collection[str] = ()) -> list[Fused]:
    """Dispatch on ``[retrieval] fusion`` (``"scaled"``, ``"convex"`` or ``"rrf"``); ``alpha`` None:
    the method's tuned default; ``keyword_ref`` and ``k``: see ``scaled``; ``limit`` keeps the best
    only; ``keyword_only``: documents without vectors, ranked by their keyword score alone."""
    if method == "scaled":
        return scaled(keyword, semantic, _alpha(method, alpha), keyword_ref, k, limit, keyword_only)
    if method == "convex":
        return convex(keyword, semantic, _alpha(method, alpha), limit, keyword_only)
    if method == "rrf":
        return rrf(keyword, semantic, rrf_k, limit, keyword_only)
    raise ValueError(f"unknown fusion method {method!r} (expected 'scaled', 'convex' or 'rrf')")


def min_score(configured: float | None, embedder: str) -> float:
    """``[retrieval] min_score``, or (unset) the tuned one of ``embedder`` (an identity key), else 0."""
    if configured is not None:
        return configured
    return next((score for prefix, score in TUNED_MIN_SCORE.items() if embedder.startswith(prefix)), 0.0)


def _alpha(method: str, alpha: float | None) -> float:
    return DEFAULT_ALPHA[method] if alpha is None else alpha


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0 or math.isnan(alpha):
        raise ValueError(f"alpha must be within [0, 1], got {alpha}")


def _ranked(method: str, scores: dict[str, float], kw: dict[str, ListHit], sem: dict[str, ListHit],
            limit: int | None) -> list[Fused]:
    """Best first (fused score desc, then doc id), with details for the ``limit`` kept."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    if limit is not None:
        ordered = ordered[: max(limit, 0)]
    return [Fused(doc_id, score, FusionDetails(method, kw.get(doc_id), sem.get(doc_id))) for doc_id, score in ordered]


def _hits(ranking: Ranking, normalize: Callable[[list[float]], list[float]]) -> dict[str, ListHit]:
    """Rank a list deterministically (score desc, then doc id); a doc listed twice keeps its best score."""
    best: dict[str, float] = {}
    for doc_id, score in ranking:
        score = float(score)
        if math.isnan(score):
            continue
        if doc_id not in best or score > best[doc_id]:
            best[doc_id] = score
    ordered = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    normalized = normalize([score for _, score in ordered])
    return {
        doc_id: ListHit(rank, score, norm)
        for rank, ((doc_id, score), norm) in enumerate(zip(ordered, normalized, strict=True), start=1)
    }


def _min_max(scores: list[float]) -> list[float]:
    """Scale to [0, 1]; a list whose scores are all equal maps to 1.0 (each is the best it found)."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high - low <= 1e-12 or math.isinf(high - low):
        return [1.0 for _ in scores]
    return [(s - low) / (high - low) for s in scores]
