"""The ``Embedder`` protocol, the identity every vector carries, and the query-embedding cache.

An embedder turns text into L2-normalised float32 vectors. Every method blocks (ONNX inference,
HTTP calls): callers run them in a worker thread. The ``identity`` (provider, model, dims) is
stored with the vectors so an index never mixes vectors from two models.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from context_harness.errors import EmbeddingsUnavailable

if TYPE_CHECKING:  # numpy loads on first use, keeping `import context_harness.embedding` cheap
    import numpy as np

QUERY_CACHE_SIZE = 1024


@dataclass(frozen=True)
class EmbedderIdentity:
    """Which model made a vector. ``key`` is stable and safe to persist."""

    provider: str
    model: str
    dims: int

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}:{self.dims}"

    def __str__(self) -> str:
        return self.key


class EmbedderMismatch(EmbeddingsUnavailable):
    """The stored vectors were made by another embedder than the configured one."""


@runtime_checkable
class Embedder(Protocol):
    """What search and sync need from an embedding provider."""

    @property
    def identity(self) -> EmbedderIdentity: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Return a float32 array of shape ``(len(texts), dims)`` with unit-norm rows."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Return a float32 array of shape ``(dims,)`` with unit norm."""
        ...


@runtime_checkable
class Warming(Protocol):
    """An embedder that can load what its first query would wait for (a model) ahead of time."""

    def warm(self) -> None: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise each row in float32; all-zero rows stay zero."""
    import numpy as np

    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise ValueError(f"expected a 2-D array of vectors, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)


def empty_vectors(dims: int) -> np.ndarray:
    import numpy as np

    return np.zeros((0, dims), dtype=np.float32)


class QueryCache:
    """A thread-safe LRU of query text -> read-only vector."""

    def __init__(self, size: int = QUERY_CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vector = self._items.get(text)
            if vector is None:
                self.misses += 1
                return None
            self._items.move_to_end(text)
            self.hits += 1
            return vector

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def put(self, text: str, vector: np.ndarray) -> np.ndarray:
        import numpy as np

        vector = np.array(vector, dtype=np.float32)  # own copy: callers cannot mutate the cache
        vector.flags.writeable = False
        if self._size <= 0:
            return vector
        with self._lock:
            self._items[text] = vector
            self._items.move_to_end(text)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return vector

    def __len__(self) -> int:
        return len(self._items)


class BaseEmbedder:
    """Shared behaviour: input checks, empty input, and the cached ``embed_query``.

    Subclasses set ``identity`` and implement ``_embed(texts) -> (n, dims)`` for a non-empty list;
    they may override ``_embed_query`` when the model treats queries differently, and then call
    ``meanwhile()`` just before they block outside Python (a model run, an HTTP request).
    """

    identity: EmbedderIdentity

    def __init__(self, query_cache_size: int = QUERY_CACHE_SIZE) -> None:
        self.query_cache = QueryCache(query_cache_size)

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Embedders written for the older hook ``_embed_query(self, text)`` keep working: wrapped,
        they call ``meanwhile`` first."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("_embed_query")
        if own is not None and len(inspect.signature(own).parameters) == 2:
            def _embed_query(self: BaseEmbedder, text: str, meanwhile: Callable[[], object]) -> np.ndarray:
                meanwhile()
                return own(self, text)

            cls._embed_query = _embed_query  # type: ignore[method-assign]

    def warm(self) -> None:
        """Load whatever the first query would wait for (a model), now; blocking. Nothing by default."""
        return None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return empty_vectors(self.identity.dims)
        vectors = self._embed(texts)
        return self._checked(vectors, len(texts))

    def embed_query(self, text: str, *, meanwhile: Callable[[], object] | None = None) -> np.ndarray:
        """The query's vector (cached). ``meanwhile``, when given, is called once just before the
        embedder blocks outside Python, so the caller can start work on another thread that will not
        queue for the GIL behind this one; it is not called when the vector comes from the cache."""
        if not isinstance(text, str):
            raise TypeError(f"query must be a string, got {type(text).__name__}")
        cached = self.query_cache.get(text)
        if cached is not None:
            return cached
        vector = self._checked(self._embed_query(text, meanwhile or _nothing)[None, :], 1)[0]
        return self.query_cache.put(text, vector)

    def _embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def _embed_query(self, text: str, meanwhile: Callable[[], object]) -> np.ndarray:
        meanwhile()
        return self._embed([text])[0]

    def _checked(self, vectors: np.ndarray, n: int) -> np.ndarray:
        import numpy as np

        vectors = np.asarray(vectors, dtype=np.float32)
        dims = self.identity.dims
        if vectors.shape != (n, dims):
            raise ValueError(
                f"{self.identity.key}: expected vectors of shape ({n}, {dims}), got {vectors.shape}"
            )
        return normalize_rows(vectors)


def _nothing() -> None:
    return None


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a list of strings, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"text {i} is {type(text).__name__}, expected str")
    return out
