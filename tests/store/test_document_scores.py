"""A document's semantic score: its best chunk, plus a share of a strong second (``chunk_scores``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from context_harness.embedding.base import EmbedderIdentity
from context_harness.store.chunk_scores import SECOND_BONUS, SECOND_FLOOR, document_score
from context_harness.store.vectors import VectorStore
from support.vectors import add_chunks, content_hash


def test_only_a_second_chunk_above_the_floor_adds_to_the_best() -> None:
    assert document_score(0.7, None) == 0.7
    assert document_score(0.7, SECOND_FLOOR) == 0.7
    assert document_score(0.7, 0.6) == pytest.approx(0.7 + SECOND_BONUS * (0.6 - SECOND_FLOOR))


def _at(cosine: float) -> np.ndarray:
    """A unit vector whose cosine with the query (the first axis) is ``cosine``."""
    return np.array([cosine, (1 - cosine ** 2) ** 0.5, 0, 0], dtype=np.float32)


def test_two_strong_sections_outrank_one_lucky_chunk_and_the_hit_keeps_its_best_chunk(
        db_path: Path, conn: sqlite3.Connection) -> None:
    store = VectorStore(db_path)
    store.set_identity(EmbedderIdentity("test", "hand-made-4", 4))
    chunks = {"lucky": [("lucky 0", 0.80), ("lucky 1", 0.10)],
              "steady": [("steady 0", 0.30), ("steady 1", 0.78), ("steady 2", 0.70)],
              "weak": [("weak 0", 0.79), ("weak 1", 0.35)]}
    for doc, parts in chunks.items():
        add_chunks(conn, doc, [text for text, _ in parts])
    store.put_many((content_hash(text), _at(cos)) for parts in chunks.values() for text, cos in parts)
    hits = store.open_index().top_documents(np.array([1, 0, 0, 0], dtype=np.float32), 3)
    assert [doc for doc, _, _ in hits] == ["steady", "lucky", "weak"]  # by the best chunk alone: lucky first
    steady = hits[0]
    assert steady[1] == "steady#1" and steady[2] == pytest.approx(document_score(0.78, 0.70), abs=1e-3)
    assert hits[1][2] == pytest.approx(0.80, abs=1e-3) and hits[2][2] == pytest.approx(0.79, abs=1e-3)
