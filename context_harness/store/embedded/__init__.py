"""The embedded backend, the default for one user: SQLite (documents, chunks, sync state and the
vectors, ``store/documents.py``, ``store/vectors.py``), Tantivy (``store/keyword.py``) and the
in-memory vector index (``store/vector_index.py``), all in the data folder beside ``[db] path``.

This module only puts those stores behind the seam (``store/backend.py``). They sit one level up,
in ``store/``, because they also hold what both backends share (see ``store/__init__.py``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from context_harness.store.backend import Backend
from context_harness.store.documents import DocumentStore
from context_harness.store.keyword import KeywordIndex


def open_embedded(db_path: Path, title_boost: float, with_vectors: bool, heading_boost: float = 0.0,
                  source_languages: Mapping[str, str] | None = None) -> Backend:
    """Open SQLite and the keyword index (and the vectors, ``with_vectors``). A keyword index made
    anew (missing, from another version, or analysed for other ``source_languages``) gets every
    document queued for indexing; the caller flushes the queue when no other writer is at work."""
    store = DocumentStore(db_path)
    index = KeywordIndex(db_path.parent / "tantivy", title_boost, heading_boost, source_languages)
    stale = db_path.parent / "tantivy-docs"  # the document index of 0.1 workspaces, now in tantivy/
    if stale.is_dir():
        shutil.rmtree(stale, ignore_errors=True)
    if index.rebuilt:
        store.enqueue_all()
    vectors = None
    if with_vectors:
        from context_harness.store.vectors import VectorStore

        vectors = VectorStore(db_path)

    def sizes() -> tuple[int, int]:
        db_bytes = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*") if p.is_file())
        index_bytes = sum(p.stat().st_size for p in index.path.rglob("*") if p.is_file())
        return db_bytes, index_bytes

    return Backend(kind="embedded", location=str(db_path), documents=store, keyword=index, vectors=vectors,
                   sizes=sizes)
