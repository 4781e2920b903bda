"""Document embedding through ``DocumentRunner``: runs cut by token count, one session per worker,
input order restored. With the real bundled model (its int8 copy and the model itself)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding import bundled
from context_harness.embedding.base import EmbedderIdentity
from context_harness.embedding.batching import length_batches
from context_harness.embedding.local import LocalEmbedder

TEXTS = [
    "short",
    "a much longer sentence about vector search, keyword search and how fusion combines them " * 3,
    "medium length text on embeddings",
    "x",
    "",
    "word " * 600,  # truncated to the model's 256 tokens
    "Tantivy is a full-text search library in Rust.",
    "Ünïcode — ünd émoji 🚀",
] * 3


def _rows_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1)


def test_length_batches_cover_every_position_once_within_budget() -> None:
    lengths = [5, 300, 40, 40, 7, 120, 3, 3, 3, 64]
    runs = length_batches(lengths, max_texts=3, token_budget=128)
    assert sorted(p for run in runs for p in run) == list(range(len(lengths)))
    for run in runs:
        assert len(run) <= 3
        padded = len(run) * max(lengths[p] for p in run)
        assert padded <= 128 or len(run) == 1  # only a text longer than the budget runs over it, alone
    flat = [lengths[p] for run in runs for p in run]
    assert flat == sorted(flat)  # short texts ride with short ones
    assert runs[-1] == [1]
    assert length_batches([], max_texts=4) == []
    assert length_batches([9, 9, 9], max_texts=1) == [[0], [1], [2]]


def test_default_identity_is_the_int8_copy_and_the_model_itself_keeps_its_own(model_cache: Path) -> None:
    """Vectors of the int8 copy are not interchangeable with the model's: the identity says which."""
    assert LocalEmbedder(EmbeddingConfig()).identity == EmbedderIdentity("local", bundled.QUANTIZED_MODEL, 384)
    exact = LocalEmbedder(EmbeddingConfig(quantized_documents=False))
    assert exact.identity == EmbedderIdentity("local", bundled.BUNDLED_MODEL, 384)
    assert LocalEmbedder(EmbeddingConfig(model=bundled.QUANTIZED_MODEL)).spec.bundled


def test_int8_runs_give_each_text_the_vector_it_gets_alone(local_embedder: LocalEmbedder) -> None:
    """The int8 copy's activation scale is per run, so texts run one at a time: batched and
    one-by-one embedding agree exactly, in input order."""
    runner = local_embedder.document_runner()
    assert runner is not None and runner.max_texts == 1
    assert runner.model_path.name == bundled.QUERY_MODEL_FILE
    batched = local_embedder.embed_documents(TEXTS)
    alone = np.stack([local_embedder.embed_documents([text])[0] for text in TEXTS])
    np.testing.assert_allclose(batched, alone, atol=1e-6)
    assert np.allclose(batched[:8], batched[8:16], atol=1e-6)  # the same text, the same vector
    assert len({tuple(np.round(v, 4)) for v in batched[:8]}) == 8  # and different texts differ


def test_int8_documents_match_the_model_closely_and_queries_exactly(local_embedder: LocalEmbedder,
                                                                    model_cache: Path) -> None:
    exact = LocalEmbedder(EmbeddingConfig(threads=1, quantized_documents=False), cache_dir=model_cache)
    fast, slow = local_embedder.embed_documents(TEXTS), exact.embed_documents(TEXTS)
    assert float(np.min(_rows_cosine(fast, slow))) > 0.97
    assert not np.array_equal(fast, slow)
    # A query runs through the same int8 copy: the same text gives the same vector either way.
    for i, text in enumerate(TEXTS[:8]):
        assert float(local_embedder.embed_query(text) @ fast[i]) > 0.99999


def test_exact_runs_match_fastembed_in_input_order(model_cache: Path) -> None:
    """``quantized_documents = false``: the model itself, in runs of several texts cut by token count;
    padding must not change a vector (within float tolerance of fastembed's own batches)."""
    exact = LocalEmbedder(EmbeddingConfig(threads=1, quantized_documents=False, batch_size=4), cache_dir=model_cache)
    runner = exact.document_runner()
    assert runner is not None and runner.max_texts == 4
    assert runner.model_path.name == bundled.MODEL_FILE
    ours = exact.embed_documents(TEXTS)
    reference = np.stack([np.asarray(v, dtype=np.float32) for v in exact.load().passage_embed(TEXTS, batch_size=1)])
    assert float(np.min(_rows_cosine(ours, reference))) > 0.99999


def test_parallel_workers_give_the_same_vectors(local_embedder: LocalEmbedder, model_cache: Path) -> None:
    """Two worker sessions (threads = 2) and concurrent callers change nothing but the speed."""
    two = LocalEmbedder(EmbeddingConfig(threads=2), cache_dir=model_cache)
    runner = two.document_runner()
    assert len(runner.sessions) == 2
    expected = local_embedder.embed_documents(TEXTS)
    results: list[np.ndarray] = []

    def embed() -> None:
        results.append(two.embed_documents(TEXTS))

    callers = [threading.Thread(target=embed) for _ in range(3)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert len(results) == 3
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-6)
    assert len(runner._free) == 2  # every session went back to the pool


def test_a_failing_run_raises_in_the_caller_and_returns_the_sessions(model_cache: Path) -> None:
    embedder = LocalEmbedder(EmbeddingConfig(threads=2), cache_dir=model_cache)
    runner = embedder.document_runner()
    original = runner._run
    calls = 0

    def failing(session, rows):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("the model run failed")
        return original(session, rows)

    runner._run = failing
    try:
        with pytest.raises(RuntimeError, match="the model run failed"):
            embedder.embed_documents(TEXTS)
    finally:
        del runner._run
    assert len(runner._free) == 2
    assert embedder.embed_documents(TEXTS[:2]).shape == (2, 384)
