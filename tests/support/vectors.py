"""Helpers for the vector store tests: a chunks table, content hashes, unit vectors."""

from __future__ import annotations

import hashlib
import sqlite3

import numpy as np

from context_harness.embedding.base import EmbedderIdentity

IDENTITY = EmbedderIdentity("test", "unit-4", 4)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def add_chunks(conn: sqlite3.Connection, doc_id: str, texts: list[str]) -> list[tuple[str, str]]:
    """Replace a document's chunks; returns [(chunk_id, content_hash)]."""
    with conn:
        conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        rows = [(f"{doc_id}#{i}", doc_id, i, t, content_hash(t)) for i, t in enumerate(texts)]
        conn.executemany("INSERT INTO chunks(id, doc_id, idx, text, content_hash) VALUES (?, ?, ?, ?, ?)", rows)
    return [(r[0], r[4]) for r in rows]


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)
