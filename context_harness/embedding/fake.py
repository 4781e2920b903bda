"""A deterministic embedder for tests: hashed bag of words in 64 dims, no model, no network.

It is not registered by default. ``register()`` adds provider ``"fake"`` to a provider table exactly
as the built-ins are registered, so code under test builds it through ``build_embedder``:

    from context_harness.embedding import fake
    fake.register()
    embedder = build_embedder(fake.fake_config())

Texts sharing words get similar vectors (cosine = overlap of hashed word counts), which is
enough to test ranking, fusion and persistence without the real model.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from context_harness.embedding.base import BaseEmbedder, EmbedderIdentity

if TYPE_CHECKING:
    from context_harness.config import EmbeddingConfig
    from context_harness.embedding.providers import EmbedderProviders

PROVIDER = "fake"
DIMS = 64
_WORD = re.compile(r"\w+")


class FakeEmbedder(BaseEmbedder):
    def __init__(self, dims: int = DIMS) -> None:
        super().__init__()
        self.identity = EmbedderIdentity(PROVIDER, f"hashing-bow-{dims}", dims)
        self.calls: list[int] = []  # batch sizes seen by embed_documents, for assertions

    def _embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return np.stack([self.vector(text) for text in texts])

    def vector(self, text: str) -> np.ndarray:
        dims = self.identity.dims
        vec = np.zeros(dims, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vec[h % dims] += 1.0 if (h >> 32) & 1 else -1.0
        if not vec.any():
            vec[0] = 1.0  # empty text: a fixed unit vector
        return vec / np.linalg.norm(vec)


def _factory(config: EmbeddingConfig) -> FakeEmbedder:
    return FakeEmbedder(config.dims or DIMS)


def register(providers: EmbedderProviders | None = None) -> None:
    """Register provider ``"fake"`` (idempotent) on ``providers`` or the process-wide table."""
    from context_harness.embedding.providers import default_providers

    target = providers or default_providers
    target.register(PROVIDER, _factory, replace=True)


def fake_config(**overrides: Any) -> EmbeddingConfig:
    """An ``EmbeddingConfig`` selecting the fake provider (bypasses the ``provider`` literal check)."""
    from context_harness.config import EmbeddingConfig

    return EmbeddingConfig.model_construct(provider="fake", **overrides)
