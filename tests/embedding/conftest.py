"""Shared fixtures for the embedding, vector store and fusion tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding.local import LocalEmbedder
from context_harness.store.schema import migrate
from context_harness.store.vectors import VectorStore

from .support import IDENTITY


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    path = tmp_path / "ctx.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate(conn)  # the real schema; tests write chunks rows without their documents (no foreign keys here)
    conn.close()
    return path


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(db_path, check_same_thread=False)
    yield connection
    connection.close()


@pytest.fixture
def store(conn: sqlite3.Connection) -> VectorStore:
    vectors = VectorStore(conn)
    vectors.set_identity(IDENTITY)
    return vectors


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def local_embedder(model_cache: Path) -> LocalEmbedder:
    """The real bundled model (loaded once per test session)."""
    return LocalEmbedder(EmbeddingConfig(threads=1), cache_dir=model_cache)
