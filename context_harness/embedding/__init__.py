"""Embeddings: the ``Embedder`` protocol, providers by name, and the bundled offline model.

Importing this package is cheap: fastembed and the provider modules load on first use.
"""

from context_harness.embedding.base import BaseEmbedder, Embedder, EmbedderIdentity, normalize_rows
from context_harness.embedding.providers import (
    EmbedderProviders,
    build_embedder,
    default_providers,
    register_provider,
)

__all__ = [
    "BaseEmbedder",
    "Embedder",
    "EmbedderIdentity",
    "EmbedderProviders",
    "build_embedder",
    "normalize_rows",
    "register_provider",
    "default_providers",
]
