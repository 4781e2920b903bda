"""Providers by name: built-ins, the disabled provider, and test/extension providers."""

from __future__ import annotations

import numpy as np
import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding import EmbedderProviders, build_embedder, fake
from context_harness.embedding.base import Embedder, EmbedderIdentity
from context_harness.embedding.local import LocalEmbedder
from context_harness.embedding.openai import OpenAIEmbedder
from context_harness.errors import ConfigError, EmbeddingsDisabled


@pytest.fixture
def providers() -> EmbedderProviders:
    return EmbedderProviders.with_builtins()


def test_builtins_are_registered(providers: EmbedderProviders) -> None:
    assert providers.names() == ["disabled", "local", "openai"]
    assert isinstance(build_embedder(EmbeddingConfig(), using=providers), LocalEmbedder)
    openai = build_embedder(EmbeddingConfig(provider="openai", model="m", dims=3), using=providers)
    assert isinstance(openai, OpenAIEmbedder) and openai.identity == EmbedderIdentity("openai", "m", 3)


def test_disabled_provider_explains_how_to_enable(providers: EmbedderProviders) -> None:
    with pytest.raises(EmbeddingsDisabled) as info:
        build_embedder(EmbeddingConfig(provider="disabled"), using=providers)
    assert info.value.code == "embeddings_disabled"
    assert '[embedding] provider = "local"' in info.value.message


def test_unknown_provider_lists_the_known_ones(providers: EmbedderProviders) -> None:
    with pytest.raises(ConfigError, match="'local'"):
        providers.create(EmbeddingConfig(), provider="nope")


def test_fake_registers_like_a_builtin(providers: EmbedderProviders) -> None:
    fake.register(providers)
    fake.register(providers)  # idempotent
    embedder = build_embedder(fake.fake_config(), using=providers)
    assert isinstance(embedder, Embedder)
    assert embedder.identity == EmbedderIdentity("fake", "hashing-bow-64", 64)
    vectors = embedder.embed_documents(["red apple pie", "apple pie recipe", "tax law"])
    assert vectors.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    query = embedder.embed_query("apple pie")
    assert float(vectors[1] @ query) > float(vectors[2] @ query)
    again = build_embedder(fake.fake_config(), using=providers).embed_documents(["red apple pie"])
    np.testing.assert_array_equal(again[0], vectors[0])  # deterministic across instances


def test_extension_provider_and_duplicates(providers: EmbedderProviders) -> None:
    providers.register("mine", lambda config: fake.FakeEmbedder(dims=config.dims or 8))
    embedder = providers.create(EmbeddingConfig(dims=16), provider="mine")
    assert embedder.identity.dims == 16
    with pytest.raises(ValueError, match="already registered"):
        providers.register("mine", lambda config: fake.FakeEmbedder())
    with pytest.raises(ValueError):
        providers.register("bad name", lambda config: fake.FakeEmbedder())
    providers.unregister("mine")
    assert "mine" not in providers


def test_embed_documents_checks_its_input() -> None:
    embedder = fake.FakeEmbedder()
    with pytest.raises(TypeError):
        embedder.embed_documents("one string")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        embedder.embed_documents(["ok", 3])  # type: ignore[list-item]
    assert embedder.embed_documents([]).shape == (0, 64)


def test_an_embedder_written_for_the_older_query_hook_still_works() -> None:
    """``_embed_query(self, text)`` predates ``meanwhile``; such a subclass still embeds queries, and
    ``meanwhile`` still fires (before its model runs), so hybrid search can overlap with it."""
    from context_harness.embedding.base import BaseEmbedder

    class OlderHook(BaseEmbedder):
        identity = EmbedderIdentity("older", "unit-2", 2)

        def __init__(self) -> None:
            super().__init__()
            self.order: list[str] = []

        def _embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 2), dtype=np.float32)

        def _embed_query(self, text: str) -> np.ndarray:
            self.order.append("model")
            return np.array([3.0, 4.0], dtype=np.float32)

    embedder = OlderHook()
    vector = embedder.embed_query("q", meanwhile=lambda: embedder.order.append("meanwhile"))
    np.testing.assert_allclose(vector, [0.6, 0.8])
    assert embedder.order == ["meanwhile", "model"]
    assert embedder.embed_query("q") is vector  # cached, as before
