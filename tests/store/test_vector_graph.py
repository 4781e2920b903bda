"""The approximate vector graph: recall against exact search, filters before the cut, a saved graph
reopened without a rebuild, caught up after changes, rebuilt when stale or damaged, and split into
shards that are searched at once."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from context_harness.embedding.base import EmbedderIdentity
from context_harness.store import ann, vector_index
from context_harness.store.vectors import VectorStore
from support.vectors import add_chunks, content_hash

DIMS = 128


def _texts_and_vectors(n: int, seed: int = 3) -> tuple[list[str], np.ndarray]:
    """Clustered unit vectors (sums of a few 'word' vectors), like embeddings of related texts."""
    rng = np.random.default_rng(seed)
    words = rng.normal(size=(5000, DIMS)).astype(np.float32)
    picks = np.minimum(rng.zipf(1.3, size=(n, 12)) - 1, 4999)
    vectors = words[picks].sum(axis=1)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [f"text {i}" for i in range(n)], vectors


def _workspace(db_path: Path, conn: sqlite3.Connection, n: int, per_doc: int = 10) -> tuple[VectorStore, np.ndarray]:
    store = VectorStore(db_path)
    store.set_identity(EmbedderIdentity("test", f"clustered-{DIMS}", DIMS))
    texts, vectors = _texts_and_vectors(n)
    for d in range(n // per_doc):
        add_chunks(conn, f"doc{d:05d}", texts[d * per_doc : (d + 1) * per_doc])
    store.put_many((content_hash(t), v) for t, v in zip(texts, vectors, strict=True))
    return store, vectors


def _exact(vectors: np.ndarray, q: np.ndarray, k: int, rows: np.ndarray | None = None) -> list[int]:
    rows = np.arange(len(vectors)) if rows is None else rows
    scores = vectors[rows] @ q
    return rows[np.argsort(-scores, kind="stable")[:k]].tolist()


def _chunk_rows(hits: list[tuple[str, str, float]], per_doc: int = 10) -> list[int]:
    out = []
    for chunk_id, _, _ in hits:
        doc, idx = chunk_id.split("#")
        out.append(int(doc[3:]) * per_doc + int(idx))
    return out


@pytest.fixture
def small_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "ANN_FROM", 1000)


def test_recall_and_filters_against_exact_search(db_path: Path, conn: sqlite3.Connection) -> None:
    n = 30_000  # past ANN_FROM: the real threshold builds a graph
    store, vectors = _workspace(db_path, conn, n)
    index = store.open_index()
    assert index.approximate and len(index) == n
    rng = np.random.default_rng(5)
    queries = vectors[rng.choice(n, 50, replace=False)] + rng.normal(scale=0.05, size=(50, DIMS)).astype(np.float32)
    found = sum(len(set(_chunk_rows(index.top_k(q, 10))) & set(_exact(vectors, q, 10))) for q in queries)
    assert found / 500 >= 0.95

    # A selective filter (1 % of the rows) is scored exactly; a broad one walks the graph with the
    # filter inside, and never returns a row outside it.
    few = {f"doc{d:05d}" for d in rng.choice(n // 10, 30, replace=False)}
    half = {f"doc{d:05d}" for d in range(0, n // 10, 2)}
    for allowed in (few, half):
        rows = np.array([r for r in range(n) if f"doc{r // 10:05d}" in allowed])
        hits = 0
        for q in queries[:20]:
            got = index.top_k(q, 10, allowed=allowed)
            assert len(got) == 10 and {d for _, d, _ in got} <= allowed
            hits += len(set(_chunk_rows(got)) & set(_exact(vectors, q, 10, rows)))
        assert hits / 200 >= (0.99 if allowed is few else 0.95)  # float16: a near-tie may swap at the cut
    docs = index.top_documents(queries[0], 10, allowed=half)
    assert len(docs) == 10 and len({d for d, _, _ in docs}) == 10 and {d for d, _, _ in docs} <= half


def test_a_saved_graph_reopens_without_reading_the_vectors(
    db_path: Path, conn: sqlite3.Connection, small_graphs: None, caplog: pytest.LogCaptureFixture
) -> None:
    store, vectors = _workspace(db_path, conn, 3000)
    first = store.open_index()
    assert first.approximate
    assert json.loads((db_path.parent / "vectors" / "ann.json").read_text())["count"] == 3000
    q = vectors[42]
    with caplog.at_level(logging.INFO, logger="context_harness.store.vector_index"):
        again = VectorStore(db_path).open_index()
    assert "vector graph opened" in caplog.text
    assert again.top_k(q, 10) == first.top_k(q, 10)
    assert again.doc_ids() == first.doc_ids()


def test_a_reopened_graph_is_mapped_and_grows_after_its_file_is_gone(
    db_path: Path, conn: sqlite3.Connection, small_graphs: None
) -> None:
    """A loaded graph maps its vectors from the snapshot file; the first add reads it into memory
    (faiss would abort the process on growing a mapped graph), even after another process has
    replaced the snapshot and unlinked the file."""
    store, vectors = _workspace(db_path, conn, 3000)
    store.open_index()
    index = VectorStore(db_path).open_index()
    assert index._graph is not None and index._graph.mapped
    before = index.top_k(vectors[7], 10)
    for old in (db_path.parent / "vectors").glob("ann-*"):
        old.unlink()
    add_chunks(conn, "late", ["late text"])
    store.put_many([(content_hash("late text"), vectors[7])])
    assert index.refresh() == (1, 0)
    assert not index._graph.mapped
    hits = index.top_k(vectors[7], 11)
    assert "late#0" in {c for c, _, _ in hits} and set(before) <= set(hits)


def test_a_graph_saved_before_changes_catches_up(db_path: Path, conn: sqlite3.Connection, small_graphs: None) -> None:
    store, vectors = _workspace(db_path, conn, 3000)
    store.open_index()  # saved
    add_chunks(conn, "doc00004", [])  # a document deleted
    add_chunks(conn, "doc00007", ["text 70", "brand new"])  # one chunk replaced, the rest gone
    store.put_many([(content_hash("brand new"), vectors[0])])
    index = VectorStore(db_path).open_index()
    assert len(index) == 3000 - 10 - 8
    got = {d for _, d, _ in index.top_k(vectors[40], 20)}
    assert "doc00004" not in got
    assert ("doc00007#1", "doc00007") in [(c, d) for c, d, _ in index.top_k(vectors[0], 3)]


def test_refresh_adds_to_the_graph_and_compacts_when_much_is_deleted(
    db_path: Path, conn: sqlite3.Connection, small_graphs: None
) -> None:
    store, vectors = _workspace(db_path, conn, 3000)
    index = store.open_index()
    graph = index._graph
    add_chunks(conn, "new", ["fresh"])
    store.put_many([(content_hash("fresh"), vectors[1])])
    assert index.refresh() == (1, 0)
    assert index._graph is graph  # appended, not rebuilt
    assert {c for c, _, _ in index.top_k(vectors[1], 2)} == {"new#0", "doc00000#1"}
    for d in range(100):  # a third of the chunks go: the graph is rebuilt without them
        add_chunks(conn, f"doc{d:05d}", [])
    assert index.refresh() == (0, 1000)
    assert index._graph is not graph and len(index._graph) == len(index) == 2001
    assert not {d for _, d, _ in index.top_k(vectors[5], 50)} & {f"doc{d:05d}" for d in range(100)}


def test_an_exact_index_becomes_a_graph_as_it_grows(db_path: Path, conn: sqlite3.Connection, small_graphs: None) -> None:
    store, vectors = _workspace(db_path, conn, 900)
    index = store.open_index()
    assert not index.approximate
    texts, more = _texts_and_vectors(200, seed=9)
    add_chunks(conn, "more", [f"more {t}" for t in texts])
    store.put_many((content_hash(f"more {t}"), v) for t, v in zip(texts, more, strict=True))
    index.refresh()
    assert index.approximate and len(index) == 1100
    assert index.top_k(more[3], 1)[0][0] == "more#3"
    assert (db_path.parent / "vectors" / "ann.json").exists()


def test_stale_or_damaged_graphs_are_rebuilt_from_the_database(
    db_path: Path, conn: sqlite3.Connection, small_graphs: None
) -> None:
    store, vectors = _workspace(db_path, conn, 2000)
    expected = store.open_index().top_k(vectors[7], 5)
    folder = db_path.parent / "vectors"
    graph_file = next(folder.glob("ann-*.faiss"))
    graph_file.write_bytes(graph_file.read_bytes()[:1000])  # truncated
    assert VectorStore(db_path).open_index().top_k(vectors[7], 5) == expected
    manifest = json.loads((folder / "ann.json").read_text())
    for old in folder.glob("ann-*"):
        old.unlink()  # a crash between writing the manifest and its files
    (folder / "ann.json").write_text(json.dumps(manifest))
    assert VectorStore(db_path).open_index().top_k(vectors[7], 5) == expected

    store.clear()  # `ctx embed rebuild`: a new embedder, other vectors
    store.set_identity(EmbedderIdentity("test", "other", DIMS))
    store.put_many([(content_hash("text 3"), vectors[9])])
    index = VectorStore(db_path).open_index()
    assert len(index) == 1 and index.top_k(vectors[9], 1)[0][0] == "doc00000#3"


def test_a_large_graph_is_shards_searched_together_saved_and_grown_at_the_last(
    db_path: Path, conn: sqlite3.Connection, small_graphs: None, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(ann, "SHARD_SIZE", 1200)
    store, vectors = _workspace(db_path, conn, 3000)
    index = store.open_index()
    assert index._graph is not None and index._graph.shards == 3  # 1200 + 1200 + 600
    rng = np.random.default_rng(8)
    queries = vectors[rng.choice(3000, 40, replace=False)] + rng.normal(scale=0.05, size=(40, DIMS)).astype(np.float32)
    found = sum(len(set(_chunk_rows(index.top_k(q, 10))) & set(_exact(vectors, q, 10))) for q in queries)
    assert found / 400 >= 0.95  # the best of every shard, merged
    # A filter that spans the shards walks each with its own slice; one that allows a single shard's
    # documents finds nothing elsewhere.
    spread = {f"doc{d:05d}" for d in range(0, 300, 2)}
    middle = {f"doc{d:05d}" for d in range(120, 240)}
    for allowed in (spread, middle):
        rows = np.array([r for r in range(3000) if f"doc{r // 10:05d}" in allowed])
        hits = 0
        for q in queries[:20]:
            got = index.top_k(q, 10, allowed=allowed)
            assert len(got) == 10 and {d for _, d, _ in got} <= allowed
            hits += len(set(_chunk_rows(got)) & set(_exact(vectors, q, 10, rows)))
        assert hits / 200 >= 0.95
    assert index._graph.vectors(np.array([5, 1300, 2999])) == pytest.approx(vectors[[5, 1300, 2999]], abs=1e-3)

    manifest = json.loads((db_path.parent / "vectors" / "ann.json").read_text())
    assert len(manifest["graphs"]) == 3
    again = VectorStore(db_path).open_index()
    assert again._graph is not None and again._graph.shards == 3
    assert [again.top_k(q, 10) for q in queries[:5]] == [index.top_k(q, 10) for q in queries[:5]]

    texts, more = _texts_and_vectors(700, seed=11)  # fills the last shard, then starts a fourth
    add_chunks(conn, "more", [f"more {t}" for t in texts])
    store.put_many((content_hash(f"more {t}"), v) for t, v in zip(texts, more, strict=True))
    assert again.refresh() == (700, 0)
    shards = again._graph._shards
    assert [len(s) for s in shards] == [1200, 1200, 1200, 100]
    assert shards[0].source is not None and shards[1].source is not None  # full shards stay mapped
    assert again.top_k(more[650], 1)[0][0] == "more#650" and again.top_k(more[10], 1)[0][0] == "more#10"

    monkeypatch.setattr(ann, "SHARD_SIZE", 1000)  # saved by another version: rebuilt, same answers
    with caplog.at_level(logging.INFO, logger="context_harness.store.ann"):
        other = VectorStore(db_path).open_index()
    assert "shards of another size" in caplog.text
    assert other._graph is not None and other._graph.shards == 4  # 3700 in shards of 1000
    assert other.top_k(more[650], 1)[0][0] == "more#650"
