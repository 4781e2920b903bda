"""Embedding providers by name: built-ins and extensions register the same way.

A provider is a factory ``(EmbeddingConfig) -> Embedder``. The built-ins (``local``, ``openai``,
``disabled``) are registered on every ``EmbedderProviders.with_builtins()``; tests and extensions
add theirs with ``register`` (see ``context_harness.embedding.fake`` for the test embedder).
Factories import their provider module lazily, so importing this module stays cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from context_harness.embedding.base import Embedder
from context_harness.errors import ConfigError, embeddings_disabled

if TYPE_CHECKING:
    from context_harness.config import EmbeddingConfig

EmbedderFactory = Callable[["EmbeddingConfig"], Embedder]


class EmbedderProviders:
    """Maps a provider name to its factory."""

    def __init__(self) -> None:
        self._factories: dict[str, EmbedderFactory] = {}
        self._lock = threading.Lock()

    @classmethod
    def with_builtins(cls) -> EmbedderProviders:
        providers = cls()
        providers.register("local", _local)
        providers.register("openai", _openai)
        providers.register("disabled", _disabled)
        return providers

    def register(self, name: str, factory: EmbedderFactory, *, replace: bool = False) -> None:
        if not name or not name.isidentifier():
            raise ValueError(f"embedding provider name must be an identifier, got {name!r}")
        with self._lock:
            if name in self._factories and not replace:
                raise ValueError(f"embedding provider {name!r} is already registered (pass replace=True)")
            self._factories[name] = factory

    def unregister(self, name: str) -> None:
        with self._lock:
            self._factories.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def create(self, config: EmbeddingConfig, provider: str | None = None) -> Embedder:
        """Build the embedder ``config`` asks for (``provider`` overrides ``config.provider``).

        Raises ``EmbeddingsDisabled`` for ``provider = "disabled"`` and ``ConfigError`` for an
        unknown provider. Construction is cheap; models load on first use.
        """
        name = provider or config.provider
        factory = self._factories.get(name)
        if factory is None:
            known = ", ".join(repr(n) for n in self.names())
            raise ConfigError(f"embedding.provider: unknown provider {name!r} (known: {known})")
        return factory(config)


def _local(config: EmbeddingConfig) -> Embedder:
    from context_harness.embedding.local import LocalEmbedder

    return LocalEmbedder(config)


def _openai(config: EmbeddingConfig) -> Embedder:
    from context_harness.embedding.openai import OpenAIEmbedder

    return OpenAIEmbedder(config)


def _disabled(config: EmbeddingConfig) -> Embedder:
    raise embeddings_disabled()


#: The process-wide providers that ``build_embedder`` uses; extensions register here.
default_providers = EmbedderProviders.with_builtins()


def register_provider(name: str, factory: EmbedderFactory, *, replace: bool = False) -> None:
    default_providers.register(name, factory, replace=replace)


def build_embedder(config: EmbeddingConfig, *, using: EmbedderProviders | None = None) -> Embedder:
    return (using or default_providers).create(config)
