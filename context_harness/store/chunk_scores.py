"""A document's semantic score from its chunks' cosines, the same on every backend.

Its best chunk's cosine, plus ``SECOND_BONUS`` times how far its second best chunk's cosine lies above
``SECOND_FLOOR``: a document with two strong sections outranks one with a single lucky chunk, while a
hit still points at its best chunk. Tuned with the bundled model on SciFact train (hybrid nDCG@10
0.7425 -> 0.7455; test 0.7321 -> 0.7320) and on the Node.js question sets (docs/benchmarks.md).
"""

from __future__ import annotations

SECOND_BONUS = 0.4
SECOND_FLOOR = 0.4


def document_score(best: float, second: float | None) -> float:
    """The semantic score of a document whose two best chunks score ``best`` and ``second`` (None: one chunk)."""
    if second is None or second <= SECOND_FLOOR:
        return best
    return best + SECOND_BONUS * (second - SECOND_FLOOR)


__all__ = ["SECOND_BONUS", "SECOND_FLOOR", "document_score"]
