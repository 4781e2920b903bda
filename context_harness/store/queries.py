"""The vector store's reads of the document tables, alone or joined with the vector tables.

The tables are defined in ``schema.py``. ``VectorStore`` runs these on its own connection, so a
load reads chunks and vectors from one snapshot; it writes no SQL of its own against ``documents``
or ``chunks``. Each function takes an open connection and returns plain data.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from context_harness.store.records import PendingChunk

FETCH = 4096  # rows per fetchmany while streaming a table


def pending_chunks(conn: sqlite3.Connection, limit: int | None = None, after: int = 0,
                   table: str = "embeddings") -> list[PendingChunk]:
    """Chunks whose content hash has no vector (in ``table``: ``embeddings``, or the next set's
    ``embeddings_next`` during a model switch), one per distinct hash, oldest first, from the chunk
    after row ``after`` on (a page costs its own rows, not a scan of every chunk: at a million chunks,
    grouping them all for every page of 512 made embedding quadratic)."""
    sql = (
        "SELECT c.content_hash, c.rowid, c.text, d.title, c.heading FROM chunks c "
        "LEFT JOIN documents d ON d.id = c.doc_id "
        f"WHERE c.rowid > ? AND NOT EXISTS (SELECT 1 FROM {_vectors(table)} e WHERE e.content_hash = c.content_hash) "
        "ORDER BY c.rowid"
    )
    params: tuple[int, ...] = (after,)
    if limit is not None:
        sql += " LIMIT ?"
        params = (after, max(0, limit))
    seen: set[str] = set()
    out = []
    for h, row, text, title, heading in conn.execute(sql, params):
        if h not in seen:  # text shared by several chunks is embedded once
            seen.add(h)
            out.append(PendingChunk(h, title, heading or "", text, row))
    return out


def embedded_chunk_counts(conn: sqlite3.Connection, table: str = "embeddings") -> tuple[int, int]:
    """(chunks with a vector in ``table``, chunks in all)."""
    embedded, total = conn.execute(
        "SELECT COUNT(e.content_hash), COUNT(*) FROM chunks c "
        f"LEFT JOIN {_vectors(table)} e ON e.content_hash = c.content_hash"
    ).fetchone()
    return int(embedded), int(total)


def embedded_chunk_counts_by_source(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """source -> (chunks with a vector, chunks without)."""
    rows = conn.execute(
        "SELECT d.source, COUNT(e.content_hash), COUNT(*) FROM chunks c JOIN documents d ON d.id = c.doc_id "
        "LEFT JOIN embeddings e ON e.content_hash = c.content_hash GROUP BY d.source"
    ).fetchall()
    return {source: (int(embedded), int(total) - int(embedded)) for source, embedded, total in rows}


def count_unreferenced_vectors(conn: sqlite3.Connection) -> int:
    return int(conn.execute(
        "SELECT COUNT(*) FROM embeddings WHERE content_hash NOT IN (SELECT content_hash FROM chunks)").fetchone()[0])


def delete_unreferenced_vectors(conn: sqlite3.Connection) -> int:
    """Delete the vectors whose content hash no chunk has; returns how many."""
    cursor = conn.execute("DELETE FROM embeddings WHERE content_hash NOT IN (SELECT content_hash FROM chunks)")
    return cursor.rowcount


def chunk_batches(conn: sqlite3.Connection) -> Iterator[list[tuple[str, str, str]]]:
    """Every chunk's ``(id, doc_id, content_hash)``, streamed in batches."""
    cursor = conn.execute("SELECT id, doc_id, content_hash FROM chunks")
    while rows := cursor.fetchmany(FETCH):
        yield rows


def chunk_map(conn: sqlite3.Connection) -> dict[str, tuple[str, str]]:
    """chunk id -> (doc_id, content_hash) for every chunk."""
    return {cid: (doc, h) for cid, doc, h in conn.execute("SELECT id, doc_id, content_hash FROM chunks")}


def _vectors(table: str) -> str:
    """One of the two vector tables (their names are the only text put into SQL here)."""
    if table not in ("embeddings", "embeddings_next"):
        raise ValueError(f"not a vector table: {table!r}")
    return table
