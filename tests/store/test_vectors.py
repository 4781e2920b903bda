"""VectorStore persistence, identity checks, orphans, and the in-memory top-k index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from context_harness.embedding.base import EmbedderIdentity
from context_harness.store import vector_index
from context_harness.store.vectors import EmbedderMismatch, PendingChunk, VectorStore
from support.vectors import IDENTITY, add_chunks, content_hash, unit


@pytest.fixture(params=["exact", "graph"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test over the exact matrix and over the approximate graph (which small indexes skip)."""
    if request.param == "graph":
        monkeypatch.setattr(vector_index, "ANN_FROM", 1)
    return str(request.param)


def test_vectors_persist_across_reopen(db_path: Path) -> None:
    store = VectorStore(db_path)
    store.set_identity(IDENTITY)
    store.put_many([(content_hash("a"), unit(1, 0, 0, 0)), (content_hash("b"), [0, 3, 0, 0])])
    store.close()

    reopened = VectorStore(db_path)
    assert reopened.identity() == IDENTITY
    assert reopened.count() == 2
    np.testing.assert_allclose(reopened.get(content_hash("b")), [0, 1, 0, 0])  # stored unit-norm
    assert reopened.get("nope") is None
    reopened.close()


def test_identity_mismatch_names_the_fix(store: VectorStore) -> None:
    store.check_identity(IDENTITY)
    store.put_many([("h", unit(1, 0, 0, 0))])
    other = EmbedderIdentity("local", "all-MiniLM-L6-v2-int8", 384)
    with pytest.raises(EmbedderMismatch) as info:
        store.check_identity(other)
    assert info.value.code == "embeddings_unavailable"
    assert "ctx embed rebuild" in info.value.message
    assert IDENTITY.key in info.value.message and other.key in info.value.message


def test_an_identity_without_vectors_does_not_bind_the_store(store: VectorStore) -> None:
    # An embedder recorded its identity, then failed before storing a vector (a model that could
    # not be downloaded): the user may go back to another embedder without a rebuild.
    other = EmbedderIdentity("local", "BAAI/bge-small-en-v1.5", 384)
    store.ensure_identity(other)
    assert store.identity() == other and store.count() == 0
    store.check_identity(IDENTITY)
    store.ensure_identity(IDENTITY)
    assert store.identity() == IDENTITY
    store.put_many([("h", unit(1, 0, 0, 0))])
    with pytest.raises(EmbedderMismatch, match="ctx embed rebuild"):  # now vectors would mix
        store.ensure_identity(other)


def test_vectors_without_identity_refuse_to_mix(conn: sqlite3.Connection) -> None:
    store = VectorStore(conn)
    with pytest.raises(ValueError, match="set_identity"):
        store.put_many([("h", unit(1, 0, 0, 0))])
    store.ensure_identity(IDENTITY)  # empty store: records it
    assert store.identity() == IDENTITY
    store.ensure_identity(IDENTITY)


def test_wrong_dims_rejected(store: VectorStore) -> None:
    with pytest.raises(EmbedderMismatch, match="ctx embed rebuild"):
        store.put_many([("h", np.ones(5))])


def test_missing_and_pending_are_content_addressed(store: VectorStore, conn: sqlite3.Connection) -> None:
    add_chunks(conn, "d1", ["alpha", "beta", "alpha"])  # duplicate text: one vector
    add_chunks(conn, "d2", ["beta", "gamma"])
    ha, hb, hg = content_hash("alpha"), content_hash("beta"), content_hash("gamma")
    assert store.missing([ha, hb, ha, hg]) == [ha, hb, hg]
    assert [(c.content_hash, c.text) for c in store.pending()] == [(ha, "alpha"), (hb, "beta"), (hg, "gamma")]
    assert store.pending(limit=1) == [PendingChunk(ha, None, "", "alpha")]  # no document row: no title

    store.put_many([(hb, unit(0, 1, 0, 0))])
    assert store.missing([ha, hb, hg]) == [ha, hg]
    stats = store.stats()
    assert (stats.embedded_chunks, stats.pending_chunks, stats.vectors) == (2, 3, 1)
    assert stats.identity == IDENTITY


def test_put_many_joins_an_open_transaction(store: VectorStore, conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO chunks(id, doc_id, idx, text, content_hash) VALUES ('x#0', 'x', 0, 'text', ?)",
                 (content_hash("text"),))
    assert conn.in_transaction
    store.put_many([(content_hash("text"), unit(1, 1, 0, 0))])
    conn.rollback()  # the caller's rollback undoes both writes: crash-consistent together
    assert store.count() == 0


def test_delete_orphans(store: VectorStore, conn: sqlite3.Connection) -> None:
    add_chunks(conn, "d1", ["keep", "drop"])
    store.put_many([(content_hash("keep"), unit(1, 0, 0, 0)), (content_hash("drop"), unit(0, 1, 0, 0))])
    add_chunks(conn, "d1", ["keep"])
    assert store.delete_orphans() == 1
    assert store.missing([content_hash("keep"), content_hash("drop")]) == [content_hash("drop")]


def test_clear_forgets_vectors_and_identity(store: VectorStore) -> None:
    store.put_many([("h", unit(1, 0, 0, 0))])
    store.clear()
    assert store.count() == 0 and store.identity() is None
    store.check_identity(EmbedderIdentity("other", "m", 8))  # nothing stored: anything goes


def _indexed_corpus(store: VectorStore, conn: sqlite3.Connection) -> None:
    vectors = {"n1": unit(1, 0, 0, 0), "n2": unit(0.9, 0.1, 0, 0), "n3": unit(0.5, 0.5, 0, 0), "n4": unit(0, 1, 0, 0)}
    for doc, texts in {"a": ["n1", "n4"], "b": ["n2"], "c": ["n3"]}.items():
        add_chunks(conn, doc, texts)
    store.put_many((content_hash(t), v) for t, v in vectors.items())


def test_top_k_exact_cosine_order(store: VectorStore, conn: sqlite3.Connection, mode: str) -> None:
    _indexed_corpus(store, conn)
    index = store.open_index()
    assert len(index) == 4
    assert index.approximate == (mode == "graph")
    hits = index.top_k(unit(1, 0, 0, 0), 3)
    assert [(c, d) for c, d, _ in hits] == [("a#0", "a"), ("b#0", "b"), ("c#0", "c")]
    assert hits[0][2] == pytest.approx(1.0)
    assert hits[1][2] > hits[2][2]
    assert index.top_k(unit(1, 0, 0, 0), 0) == []
    assert len(index.top_k(unit(1, 0, 0, 0), 50)) == 4


def test_filter_applies_before_top_k_cut(store: VectorStore, conn: sqlite3.Connection, mode: str) -> None:
    _indexed_corpus(store, conn)
    index = store.open_index()
    # The unfiltered top-1 is doc a; filtering to {c} must still return c's chunk, not nothing.
    assert [d for _, d, _ in index.top_k(unit(1, 0, 0, 0), 1, allowed={"c"})] == ["c"]
    assert [d for _, d, _ in index.top_k(unit(1, 0, 0, 0), 5, allowed={"b", "c", "zz"})] == ["b", "c"]
    assert index.top_k(unit(1, 0, 0, 0), 5, allowed=set()) == []
    mask = index.row_mask({"a"})
    assert [c for c, _, _ in index.top_k(unit(0, 1, 0, 0), 5, allowed=mask)] == ["a#1", "a#0"]
    with pytest.raises(ValueError):
        index.top_k(unit(1, 0, 0, 0), 1, allowed=np.ones(2, dtype=bool))


def test_index_refresh_is_incremental(store: VectorStore, conn: sqlite3.Connection, mode: str) -> None:
    _indexed_corpus(store, conn)
    index = store.open_index()
    add_chunks(conn, "c", [])  # doc c deleted
    add_chunks(conn, "d", ["n5"])  # new doc, no vector yet: not searchable
    assert index.refresh() == (0, 1)
    assert {d for _, d, _ in index.top_k(unit(1, 0, 0, 0), 10)} == {"a", "b"}
    store.put_many([(content_hash("n5"), unit(0, 0, 1, 0))])
    assert index.refresh() == (1, 0)
    assert index.top_k(unit(0, 0, 1, 0), 1)[0][:2] == ("d#0", "d")
    # Same chunk id, new text: the row is replaced, not duplicated.
    add_chunks(conn, "b", ["n4"])
    index.refresh()
    assert [c for c, _, _ in index.top_k(unit(1, 0, 0, 0), 10)].count("b#0") == 1
    assert index.doc_ids() == {"a", "b", "d"}
    assert len(index) == 4


def test_index_reloads_after_rebuild(store: VectorStore, conn: sqlite3.Connection, mode: str) -> None:
    _indexed_corpus(store, conn)
    index = store.open_index()
    store.clear()
    store.set_identity(IDENTITY)
    store.put_many([(content_hash("n1"), unit(0, 0, 0, 1))])  # same text, new model's vector
    index.refresh()
    assert len(index) == 1
    assert index.top_k(unit(0, 0, 0, 1), 1)[0][2] == pytest.approx(1.0)


def test_query_dims_must_match(store: VectorStore, conn: sqlite3.Connection, mode: str) -> None:
    _indexed_corpus(store, conn)
    with pytest.raises(EmbedderMismatch, match="ctx embed rebuild"):
        store.open_index().top_k(np.ones(8, dtype=np.float32), 1)


def test_filter_paths_agree_with_brute_force(store: VectorStore, conn: sqlite3.Connection, mode: str) -> None:
    rng = np.random.default_rng(7)
    store.clear()
    store.set_identity(EmbedderIdentity("test", "rand-16", 16))
    texts = [f"t{i}" for i in range(600)]
    for d in range(60):
        add_chunks(conn, f"doc{d:02d}", texts[d * 10 : d * 10 + 10])
    vecs = rng.normal(size=(600, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.put_many((content_hash(t), v) for t, v in zip(texts, vecs, strict=True))
    index = store.open_index()
    q = vecs[3]
    contiguous = {f"doc{d:02d}" for d in range(10, 15)}  # few runs
    scattered = {f"doc{d:02d}" for d in range(0, 60, 3)}  # many runs, 1/3 of rows
    sparse = set(rng.choice(600, 40, replace=False))  # a per-row mask with many runs
    row_mask = np.zeros(600, dtype=bool)
    row_mask[list(sparse)] = True
    for allowed, rows in ((contiguous, None), (scattered, None), (row_mask, sorted(sparse))):
        if rows is None:
            rows = [i for i in range(600) if f"doc{i // 10:02d}" in allowed]
        expected = sorted(rows, key=lambda i: -float(vecs[i] @ q))[:7]
        got = index.top_k(q, 7, allowed=allowed)
        assert [c for c, _, _ in got] == [f"doc{i // 10:02d}#{i % 10}" for i in expected]


def test_shared_text_is_one_vector_but_one_row_per_chunk(store: VectorStore, conn: sqlite3.Connection, mode: str) -> None:
    add_chunks(conn, "a", ["same text", "other"])
    add_chunks(conn, "b", ["same text"])
    add_chunks(conn, "c", ["pending text"])  # no vector yet: not in the index
    store.put_many([(content_hash("same text"), unit(1, 0, 0, 0)), (content_hash("other"), unit(0, 1, 0, 0))])
    store.put_many([(content_hash("orphan"), unit(0, 0, 1, 0))])  # no chunk uses it
    assert store.count() == 3
    index = store.open_index()
    assert len(index) == 3
    hits = index.top_k(unit(1, 0, 0, 0), 2)
    assert sorted((c, d) for c, d, _ in hits) == [("a#0", "a"), ("b#0", "b")]
    assert hits[0][2] == pytest.approx(hits[1][2])
    assert index.top_k(unit(1, 0, 0, 0), 1, allowed={"c"}) == []


def test_every_scoring_path_agrees_with_brute_force_at_scale(store: VectorStore, conn: sqlite3.Connection) -> None:
    """Vectors stored in another order than their chunks, shared texts, then a refresh: the
    slice, gather and full-scan paths all return what brute force over the chunks does."""
    rng = np.random.default_rng(11)
    store.clear()
    store.set_identity(EmbedderIdentity("test", "rand-8", 8))
    n = 20_000
    texts = [f"s{i}" for i in range(n)]
    texts[5], texts[17] = texts[4], texts[4]  # one text in three chunks
    for d in range(n // 50):
        add_chunks(conn, f"doc{d:04d}", texts[d * 50 : d * 50 + 50])
    vecs = {t: v / np.linalg.norm(v) for t, v in zip(texts, rng.normal(size=(n, 8)).astype(np.float32), strict=True)}
    store.put_many(sorted(((content_hash(t), v) for t, v in vecs.items()), key=lambda p: p[0]))  # hash order
    index = store.open_index()
    assert len(index) == n

    def check(allowed_docs: set[str] | None) -> None:
        q = rng.normal(size=8).astype(np.float32)
        chunks = [(f"doc{i // 50:04d}#{i % 50}", float(vecs[t] @ q)) for i, t in enumerate(texts)
                  if allowed_docs is None or f"doc{i // 50:04d}" in allowed_docs]
        expected = [c for c, _ in sorted(chunks, key=lambda c: -c[1])[:9]]
        for allowed in (allowed_docs, None if allowed_docs is None else index.row_mask(allowed_docs)):
            got = index.top_k(q, 9, allowed=allowed)
            assert [c for c, _, _ in got] == expected
            assert [s for _, _, s in got] == pytest.approx([s for _, s in sorted(chunks, key=lambda c: -c[1])[:9]], abs=1e-5)

    docs = [f"doc{d:04d}" for d in range(n // 50)]
    check(None)  # full scan
    check(set(docs[100:110]))  # one run of slices
    check(set(rng.choice(docs, 6, replace=False)))  # few runs: slices
    check(set(docs[::2]))  # half of everything, 200 runs: full scan, then select
    sparse = rng.choice(n, 300, replace=False)
    mask = np.zeros(n, dtype=bool)
    mask[sparse] = True  # 300 scattered positions (1.5 %): gathered
    q = rng.normal(size=8).astype(np.float32)
    got = index.top_k(q, 5, allowed=mask)
    ids = index._chunk_ids[:n].astype(str)
    expected = sorted(sparse, key=lambda p: -float(index._columns[:, p] @ q))[:5]
    assert [c for c, _, _ in got] == [ids[p] for p in expected]

    add_chunks(conn, "doc0000", ["fresh a", "fresh b"])  # 50 chunks out, 2 in
    store.put_many([(content_hash("fresh a"), unit(*([1.0] + [0.0] * 7))), (content_hash("fresh b"), unit(*([0.0] * 7 + [1.0])))])
    index.refresh()
    assert len(index) == n - 48
    top = index.top_k(unit(*([1.0] + [0.0] * 7)), 1)
    assert top[0][:2] == ("doc0000#0", "doc0000") and top[0][2] == pytest.approx(1.0)
