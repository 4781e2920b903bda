"""The vector store over the core DocumentStore's real database and connections."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from context_harness.embedding.fake import FakeEmbedder
from context_harness.ingest.chunking import embedding_text
from context_harness.store.documents import DocumentStore
from context_harness.store.records import DocumentRow, DocumentWrite, StoredChunk, chunk_id
from context_harness.store.schema import SCHEMA_VERSION
from context_harness.store.vectors import VectorStore
from support.vectors import content_hash


def _write(doc_id: str, texts: list[str]) -> DocumentWrite:
    row = DocumentRow(
        id=doc_id, source="filesystem:notes", source_id=f"{doc_id}.md", source_url=None, title=doc_id,
        author=None, created_at=None, updated_at=None, content_type="text/markdown", body="\n\n".join(texts),
        metadata={}, tags=[], content_hash=content_hash("".join(texts)), fingerprint=None,
    )
    chunks = [StoredChunk(chunk_id(doc_id, t), i, t, content_hash(t), "") for i, t in enumerate(texts)]
    return DocumentWrite(row, chunks)


@pytest.fixture
def documents(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = DocumentStore(tmp_path / "ctx.sqlite")
    yield store
    store.close()


def test_sync_embed_search_delete_cycle(documents: DocumentStore) -> None:
    embedder = FakeEmbedder()
    documents.apply("filesystem:notes", [_write("doc1", ["apple pie recipe", "tax law"]),
                                         _write("doc2", ["apple crumble"])], [])
    vectors = VectorStore(documents.connection())  # the core store's own (autocommit) connection
    vectors.ensure_identity(embedder.identity)
    pending = vectors.pending()
    texts = [embedding_text(c.title, c.heading, c.text) for c in pending]
    vectors.put_many(zip([c.content_hash for c in pending], embedder.embed_documents(texts), strict=True))
    assert vectors.stats().pending_chunks == 0

    reader = VectorStore(documents.path)  # a second connection sees the committed vectors
    index = reader.open_index()
    hits = index.top_k(embedder.embed_query("apple pie"), 2)
    assert hits[0][1] == "doc1" and hits[0][0] == chunk_id("doc1", "apple pie recipe")

    documents.apply("filesystem:notes", [], ["doc1"])
    assert index.refresh() == (0, 2)
    assert [d for _, d, _ in index.top_k(embedder.embed_query("apple pie"), 5)] == ["doc2"]
    assert vectors.delete_orphans() == 2
    reader.close()


def test_vectors_commit_or_roll_back_with_the_chunks(documents: DocumentStore) -> None:
    embedder = FakeEmbedder()
    with pytest.raises(RuntimeError), documents.transaction() as conn:
        vectors = VectorStore(conn)
        vectors.ensure_identity(embedder.identity)
        vectors.put_many([(content_hash("x"), embedder.embed_query("x"))])
        raise RuntimeError("crash before commit")
    reopened = VectorStore(documents.path)
    assert reopened.count() == 0 and reopened.identity() is None
    reopened.close()


def test_either_store_creates_the_same_schema(tmp_path: Path) -> None:
    # store/schema.py owns every table: whichever store opens a new file first, the file is the same.
    def tables(path: Path) -> list[tuple[str, str]]:
        conn = sqlite3.connect(path)
        try:
            return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        finally:
            conn.close()

    VectorStore(tmp_path / "a.sqlite").close()
    first = DocumentStore(tmp_path / "a.sqlite")
    assert first.schema_version == SCHEMA_VERSION
    first.close()
    DocumentStore(tmp_path / "b.sqlite").close()
    VectorStore(tmp_path / "b.sqlite").close()
    assert tables(tmp_path / "a.sqlite") == tables(tmp_path / "b.sqlite")
    assert {"documents", "chunks", "embeddings", "embedding_meta"} <= {name for name, _ in tables(tmp_path / "a.sqlite")}


def test_opening_a_current_file_never_waits_for_a_writer(tmp_path: Path) -> None:
    # Another process in a long write transaction (a sync) must not block a reader's open.
    path = tmp_path / "ctx.sqlite"
    DocumentStore(path).close()
    VectorStore(path).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        started = time.perf_counter()
        documents, vectors = DocumentStore(path), VectorStore(path)
        assert time.perf_counter() - started < 5  # the busy timeout is 30 s
        assert documents.schema_version == SCHEMA_VERSION and vectors.count() == 0
        documents.close()
        vectors.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_schema_1_file_migrates_keeping_its_chunks(tmp_path: Path) -> None:
    # A workspace written before chunks stored their start (schema 1) opens with its rows intact and
    # the new column empty; the next sync re-chunks it (the chunker version changed too).
    from context_harness.store import schema

    path = tmp_path / "ctx.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in schema._MIGRATIONS[1].split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '1')")
    conn.execute("INSERT INTO documents(id, source, source_id, content_type, body, content_hash, synced_at) "
                 "VALUES('d1', 'filesystem:x', 'a.md', 'text/markdown', 'hello world', 'h', '2026-01-01T00:00:00Z')")
    conn.execute("INSERT INTO chunks(id, doc_id, idx, text, content_hash) VALUES('c1', 'd1', 0, 'hello world', 'h')")
    conn.close()
    store = DocumentStore(path)
    try:
        assert store.schema_version == SCHEMA_VERSION
        [chunk] = store.chunks("d1")
        assert (chunk.id, chunk.text, chunk.start) == ("c1", "hello world", None)
        assert store.chunks_at([("d1", 3)]) == {}  # placed from the texts until the next sync
    finally:
        store.close()
