"""The ``local`` provider: fastembed (ONNX) in-process, offline by default.

fastembed is imported lazily (it costs ~1 s) and each model is loaded once per process, on first
use, then shared by every ``LocalEmbedder`` that asks for it. Which model:

- no ``model`` / ``model_path`` (default): the bundled all-MiniLM-L6-v2 int8 — never downloads;
- ``model_path = "DIR"``: a local folder with ``model.onnx`` and tokenizer files, loaded as the
  fastembed model named by ``model`` (default all-MiniLM-L6-v2 pooling); never downloads; with
  ``model_sha256`` its weights are checked against that digest when they load;
- ``model = "<fastembed model>"``: downloaded into the cache on first use (progress on stderr).

Models whose cards require a query or document prefix (e5: ``query: ``/``passage: ``; BGE,
mxbai, Arctic Embed, stella and Qwen3: an instruction before queries; nomic and EmbeddingGemma: one
on each side) get it here (``MODEL_PREFIXES``): fastembed adds none. A model with a document prefix carries
``+prefixed`` in its identity, so vectors made without it are never mixed with those made with it.

A model that fails to load is remembered for ``LOAD_RETRY_AFTER`` seconds: requests meanwhile fail
at once with the same error instead of trying (and, offline, waiting on the hub) again.

Documents are embedded in batches of similar length (sorted by length, then restored to the
input order), so short chunks are not padded to the length of long ones. The bundled model embeds
them through ``batching.DocumentRunner`` (single-threaded ONNX sessions, one per core, runs cut by
token count), by default with the same int8-quantised copy queries use (``quantized_documents``);
its vectors then carry the identity ``all-MiniLM-L6-v2-int8-dynamic``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import context_harness.embedding.bundled as bundled
import context_harness.embedding.priority as priority
from context_harness.config import EmbeddingConfig
from context_harness.embedding.base import BaseEmbedder, EmbedderIdentity
from context_harness.errors import ConfigError, EmbeddingsUnavailable

log = logging.getLogger(__name__)

PROVIDER = "local"

LOAD_RETRY_AFTER = 60.0  # seconds a failed model load is remembered before the next attempt
HUB_CONNECT_TIMEOUT = 5.0  # seconds to reach the model hub before a download is given up

_RETRIEVAL_INSTRUCTION = "Represent this sentence for searching relevant passages: "
#: (query prefix, document prefix) by model name (lower case), as each model's card asks for retrieval.
MODEL_PREFIXES: dict[str, tuple[str, str]] = {
    **{name: ("query: ", "passage: ") for name in (
        "intfloat/multilingual-e5-small", "intfloat/multilingual-e5-base", "intfloat/multilingual-e5-large",
        "intfloat/e5-small-v2", "intfloat/e5-base-v2", "intfloat/e5-large-v2")},
    **{name: (_RETRIEVAL_INSTRUCTION, "") for name in (
        "baai/bge-small-en", "baai/bge-base-en", "baai/bge-small-en-v1.5", "baai/bge-base-en-v1.5",
        "baai/bge-large-en-v1.5", "mixedbread-ai/mxbai-embed-large-v1", "snowflake/snowflake-arctic-embed-xs",
        "snowflake/snowflake-arctic-embed-s", "snowflake/snowflake-arctic-embed-m",
        "snowflake/snowflake-arctic-embed-m-long", "snowflake/snowflake-arctic-embed-l")},
    "baai/bge-small-zh-v1.5": ("为这个句子生成表示以用于检索相关文章：", ""),
    **{name: ("search_query: ", "search_document: ") for name in (
        "nomic-ai/nomic-embed-text-v1", "nomic-ai/nomic-embed-text-v1.5", "nomic-ai/nomic-embed-text-v1.5-q")},
    "google/embeddinggemma-300m": ("task: search result | query: ", "title: none | text: "),
    **{name: ("Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:", "")
       for name in ("qwen/qwen3-embedding-0.6b", "qwen/qwen3-embedding-0.6b-q")},
    "qdrant/stella-en-400m-v5-doc-onnx": (
        "Instruct: Given a web search query, retrieve relevant passages that answer the query.\nQuery: ", ""),
}

_MODELS: dict[tuple[str, str, int | None], Any] = {}
_MODELS_LOCK = threading.Lock()
# (model key, cache folder) -> (when the load failed, its message)
_FAILURES: dict[tuple[tuple[str, str, int | None], str | None], tuple[float, str]] = {}


@dataclass(frozen=True)
class ModelSpec:
    """What to load: the fastembed entry, where its files are, and whether it may download."""

    fastembed_name: str
    identity_model: str
    model_path: Path | None  # a folder to load from (no download); None: fastembed's cache
    bundled: bool
    dims: int | None  # None until the fastembed model list is consulted
    query_prefix: str = ""
    document_prefix: str = ""
    weights_sha256: str | None = None  # model_path only: the digest its ONNX weights must have


def resolve_spec(config: EmbeddingConfig) -> ModelSpec:
    model, model_path = config.model, config.model_path
    if config.model_sha256 and model_path is None:
        raise ConfigError("embedding.model_sha256 pins the weights of a model_path folder; set model_path too, "
                          "or remove model_sha256 (the bundled model's weights are always checked)")
    if model_path is not None:
        name = model if model and model not in bundled.BUNDLED_ALIASES else bundled.FASTEMBED_NAME
        query, document = MODEL_PREFIXES.get(name.lower(), ("", ""))
        identity = f"{name}@{Path(model_path).name}" + ("+prefixed" if document else "")
        return ModelSpec(name, identity, Path(model_path), False, config.dims, query, document, config.model_sha256)
    if model is None or model in bundled.BUNDLED_ALIASES:
        return ModelSpec(bundled.FASTEMBED_NAME, bundled.BUNDLED_MODEL, None, True, bundled.BUNDLED_DIMS)
    query, document = MODEL_PREFIXES.get(model.lower(), ("", ""))
    return ModelSpec(model, model + ("+prefixed" if document else ""), None, False, config.dims, query, document)


class LocalEmbedder(BaseEmbedder):
    """fastembed-backed embedder. Construction is cheap; the model loads on first embed."""

    def __init__(self, config: EmbeddingConfig, *, cache_dir: Path | None = None) -> None:
        super().__init__()
        self.spec = resolve_spec(config)
        self.batch_size = config.batch_size
        self.threads = config.threads
        self.cache_dir = cache_dir
        self.quantized_queries = config.quantized_queries and self.spec.bundled
        self.quantized_documents = config.quantized_documents and self.spec.bundled
        self._query_model_checked = False
        self._pin_checked = False
        self._runners: dict[int, Any] = {}
        if self.spec.model_path is not None and not self.spec.model_path.is_dir():
            raise ConfigError(
                f"embedding.model_path: {self.spec.model_path} is not a folder "
                "(it must hold model.onnx plus tokenizer.json, tokenizer_config.json, config.json)"
            )
        self._identity: EmbedderIdentity | None = None
        if self.spec.dims is not None:
            model = bundled.QUANTIZED_MODEL if self.quantized_documents else self.spec.identity_model
            self._identity = EmbedderIdentity(PROVIDER, model, self.spec.dims)

    @property  # known only after the first call; BaseEmbedder lets simple embedders set it as an attribute
    def identity(self) -> EmbedderIdentity:  # type: ignore[override]
        if self._identity is None:
            dims = _fastembed_dims(self.spec.fastembed_name)
            self._identity = EmbedderIdentity(PROVIDER, self.spec.identity_model, dims)
        return self._identity

    def load(self) -> Any:
        """Load (or fetch from the process cache) the fastembed model; blocking. A pinned
        ``model_path`` (``model_sha256``) is checked once per embedder, before its first use."""
        if self.spec.weights_sha256 and not self._pin_checked:
            _check_pinned(self.spec)
            self._pin_checked = True
        return load_model(self.spec, self.threads, self.cache_dir)

    def warm(self) -> None:
        """Load the model and, with ``quantized_queries``, the query copy (built here if missing)."""
        self.load()
        self.query_session()

    def query_session(self) -> Any:
        """The ONNX session queries run through: the int8-quantised copy of the bundled model
        (``[embedding] quantized_queries``), else None (queries use the model itself)."""
        if not self.quantized_queries:
            return None
        return _query_session(self.threads, self.cache_dir)

    def document_runner(self, workers: int | None = None) -> Any:
        """The ``DocumentRunner`` the bundled model embeds documents with (None for other models),
        with ``workers`` sessions (default: ``threads``, else one per core); with
        ``quantized_documents`` it runs the int8 query copy, which is built here if missing."""
        threads = workers or self.threads or _cores()
        if threads in self._runners or not self.spec.bundled:
            return self._runners.get(threads)
        model = self.load()
        inner = getattr(model, "model", None)
        tokenizer = getattr(inner, "tokenizer", None)
        if tokenizer is None:
            if self.quantized_documents:
                raise EmbeddingsUnavailable(f"{self.identity.key}: the bundled model loaded without its tokenizer")
            return None
        model_dir = bundled.prepare_model_dir(self.cache_dir)
        path: Path | None = model_dir / bundled.MODEL_FILE
        if self.quantized_queries and not self._query_model_checked:
            # Build the query copy while documents embed (once per machine, ~3 s), not on a first search.
            self._query_model_checked = True
            bundled.query_model(model_dir)
        if self.quantized_documents:
            path = bundled.query_model(model_dir)
            if path is None:
                raise EmbeddingsUnavailable(
                    "the int8 copy of the bundled model could not be built (see the warning above); "
                    "set [embedding] quantized_documents = false to embed with the model itself "
                    "(then run `ctx embed rebuild`)"
                )
        assert path is not None
        # The int8 copy runs one text at a time: its activation scales are per run (see batching.py).
        max_texts = 1 if self.quantized_documents else self.batch_size
        self._runners[threads] = _document_runner(path, tokenizer, threads, max_texts, self.identity.dims)
        return self._runners[threads]

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for ``texts``; inside ``priority.background()`` on lowered threads and at most
        ``background_workers()`` sessions, so a serving process answers first."""
        if priority.in_background():
            workers = min(self.threads or _cores(), priority.background_workers())
            # Sessions and the tokenizer's thread pool live as long as the process: made here, at
            # normal priority, not on the lowered thread (threads started there inherit its nice value).
            self.document_runner(workers)
            return priority.run_lowered(lambda: self._embed_now(texts, workers))
        return self._embed_now(texts, None)

    def _embed_now(self, texts: list[str], workers: int | None) -> np.ndarray:
        if self.spec.document_prefix:
            texts = [self.spec.document_prefix + text for text in texts]
        runner = self.document_runner(workers)
        if runner is not None:
            return np.asarray(runner.embed(texts), dtype=np.float32)
        model = self.load()
        if self.quantized_queries and not self._query_model_checked:
            # Build the query copy while documents embed (once per machine, ~3 s), not on a first search.
            self._query_model_checked = True
            bundled.query_model(bundled.prepare_model_dir(self.cache_dir))
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.identity.dims), dtype=np.float32)
        vectors = model.passage_embed([texts[i] for i in order], batch_size=self.batch_size)
        count = 0
        for position, vector in zip(order, vectors, strict=False):
            out[position] = vector
            count += 1
        if count != len(texts):
            raise EmbeddingsUnavailable(f"{self.identity.key}: the model returned {count} of {len(texts)} vectors")
        return out

    def _embed_query(self, text: str, meanwhile: Callable[[], object]) -> np.ndarray:
        model = self.load()
        text = self.spec.query_prefix + text
        direct = _direct_query_runner(model)
        if direct is not None:
            return direct(text, self.query_session(), meanwhile)
        meanwhile()
        return np.asarray(next(iter(model.query_embed([text]))), dtype=np.float32)


_QUERY_SESSIONS: dict[tuple[str | None, int | None], Any] = {}
_RUNNERS: dict[tuple[str, int, int], Any] = {}


def _document_runner(path: Path, tokenizer: Any, threads: int, max_texts: int, dims: int) -> Any:
    """The process-wide ``DocumentRunner`` over ``path`` (its sessions are created once)."""
    key = (str(path), threads, max_texts)
    runner = _RUNNERS.get(key)
    if runner is None:
        with _MODELS_LOCK:
            runner = _RUNNERS.get(key)
            if runner is None:
                from context_harness.embedding.batching import DocumentRunner

                try:
                    runner = DocumentRunner(path, tokenizer, dims=dims, threads=threads, max_texts=max_texts)
                except Exception as exc:
                    raise EmbeddingsUnavailable(
                        f"the bundled embedding model {path.name} failed to load ({exc.__class__.__name__}); "
                        "reinstall context-harness, or set [embedding] quantized_documents = false"
                    ) from exc
                _RUNNERS[key] = runner
    return runner


def _cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _query_session(threads: int | None, cache_dir: Path | None) -> Any:
    """The process-wide session over the bundled model's query copy (None when it cannot be built).
    Keyed by the cache folder, so a query costs one dict lookup, not a look at the model files."""
    key = (str(cache_dir) if cache_dir else None, threads)
    if key in _QUERY_SESSIONS:
        return _QUERY_SESSIONS[key]
    with _MODELS_LOCK:
        if key not in _QUERY_SESSIONS:
            session = None
            path = bundled.query_model(bundled.prepare_model_dir(cache_dir))
            if path is not None:
                import onnxruntime as ort

                with _no_spinning():
                    options = ort.SessionOptions()
                # One short query gains little from a second thread (measured: 4.0 vs 4.3 ms alone,
                # and ~0.5 ms less per hybrid search over stdio), and the other core stays free.
                options.intra_op_num_threads = threads or 1
                try:
                    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                except Exception as exc:  # a damaged file: rebuilt next time, the original serves now
                    log.warning("could not load the query model %s (%s); queries use the original model", path, exc)
                    path.unlink(missing_ok=True)
            _QUERY_SESSIONS[key] = session
    return _QUERY_SESSIONS[key]


def _direct_query_runner(model: Any) -> Any:
    """For mean-pooled, normalised models (MiniLM, the bundled default): embed one query by calling
    the model's tokenizer and ONNX session directly, the same computation as ``query_embed`` without
    its batching generators (~0.6 ms of a ~7 ms query on 2 cores). None for any other model."""
    runner = getattr(model, "_ctx_direct_query", False)
    if runner is not False:
        return runner
    runner = None
    try:
        from fastembed.text.pooled_normalized_embedding import PooledNormalizedEmbedding

        inner = getattr(model, "model", None)
        if type(inner) is PooledNormalizedEmbedding and inner.tokenizer is not None and inner.model is not None:
            session, tokenizer = inner.model, inner.tokenizer
            names = {node.name for node in session.get_inputs()}

            def runner(text: str, query_session: Any = None, meanwhile: Callable[[], object] = _nothing) -> np.ndarray:
                encoding = tokenizer.encode_batch([text])[0]
                ids = np.array([encoding.ids], dtype=np.int64)
                feed = {"input_ids": ids}
                if "attention_mask" in names:
                    feed["attention_mask"] = np.array([encoding.attention_mask], dtype=np.int64)
                if "token_type_ids" in names:
                    feed["token_type_ids"] = np.zeros_like(ids)
                meanwhile()
                tokens = (query_session or session).run(None, feed)[0][0]  # (tokens, dims): one sequence
                mask = np.asarray(encoding.attention_mask, dtype=bool)
                pooled = tokens[mask].sum(axis=0, dtype=np.float64) / max(int(mask.sum()), 1)
                return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)
    except (ImportError, AttributeError):
        runner = None
    try:
        model._ctx_direct_query = runner
    except AttributeError:
        pass
    return runner


def _nothing() -> None:
    return None


def load_model(spec: ModelSpec, threads: int | None, cache_dir: Path | None = None) -> Any:
    """Return the process-wide fastembed ``TextEmbedding`` for ``spec``, loading it once.

    A failed load is remembered: for ``LOAD_RETRY_AFTER`` seconds the same error is raised at once."""
    key = (spec.fastembed_name, str(spec.model_path) if spec.model_path else spec.identity_model, threads)
    model = _MODELS.get(key)
    if model is not None:
        return model
    failure_key = (key, str(cache_dir) if cache_dir else None)
    _raise_recent_failure(failure_key)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            _raise_recent_failure(failure_key)  # another thread's attempt failed meanwhile
            try:
                model = _load(spec, threads, cache_dir)
            except EmbeddingsUnavailable as exc:
                _FAILURES[failure_key] = (time.monotonic(), exc.message)
                raise
            _FAILURES.pop(failure_key, None)
            _MODELS[key] = model
    return model


def _raise_recent_failure(failure_key: tuple[tuple[str, str, int | None], str | None]) -> None:
    failure = _FAILURES.get(failure_key)
    if failure is None:
        return
    failed_at, message = failure
    wait = failed_at + LOAD_RETRY_AFTER - time.monotonic()
    if wait > 0:
        raise EmbeddingsUnavailable(f"{message} (not tried again for {wait:.0f} s)")


def _load(spec: ModelSpec, threads: int | None, cache_dir: Path | None) -> Any:
    text_embedding = _import_fastembed()
    kwargs: dict[str, Any] = {"model_name": spec.fastembed_name, "threads": threads}
    offline = spec.bundled or spec.model_path is not None
    if spec.bundled:
        kwargs["specific_model_path"] = str(bundled.prepare_model_dir(cache_dir))
    elif spec.model_path is not None:
        kwargs["specific_model_path"] = str(spec.model_path)
    else:
        download_dir = bundled.models_dir(cache_dir) / "fastembed"
        download_dir.mkdir(parents=True, exist_ok=True)
        kwargs["cache_dir"] = str(download_dir)
        _check_known(spec.fastembed_name)
        log.info("loading embedding model %s (downloads into %s on first use)", spec.fastembed_name, download_dir)
    try:
        with _hub_offline(offline), _no_spinning(), _fastembed_muted():
            model = text_embedding(**kwargs) if offline else _cached_or_downloaded(text_embedding, kwargs)
    except (ConfigError, EmbeddingsUnavailable):
        raise
    except Exception as exc:
        log.debug("loading %s failed", spec.fastembed_name, exc_info=True)
        raise EmbeddingsUnavailable(_load_failure(spec, exc, kwargs.get("cache_dir"))) from exc
    log.info("embedding model %s loaded", spec.identity_model)
    return model


def _cached_or_downloaded(text_embedding: Any, kwargs: dict[str, Any]) -> Any:
    """Load a fastembed model from the cache without touching the network, else download it.

    Before a download the hub must accept a connection: fastembed retries an unreachable hub with
    3 + 9 + 27 s sleeps, so offline a request would wait ~40 s for the same failure."""
    try:
        return text_embedding(**kwargs, local_files_only=True)
    except Exception:
        if _truthy(os.environ.get("HF_HUB_OFFLINE")):
            raise
        log.debug("%s is not in the cache; downloading it", kwargs["model_name"], exc_info=True)
    _check_hub_reachable()
    return text_embedding(**kwargs)


def _check_hub_reachable() -> None:
    """Raise ``OSError`` when the Hugging Face hub (``HF_ENDPOINT``) refuses or drops a connection.
    Skipped behind an HTTPS proxy, which only the download itself can go through."""
    if urllib.request.getproxies().get("https"):
        return
    endpoint = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=HUB_CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        raise OSError(f"the model hub {host}:{port} is unreachable: {exc}") from exc


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "TRUE", "YES", "ON"}


@contextlib.contextmanager
def _fastembed_muted() -> Iterator[None]:
    """fastembed logs each failed load step as an ERROR line on stderr (through loguru), about six
    for one offline download; while a model loads they are muted, and our one error says what to do
    (the cause is logged at debug level)."""
    try:
        from loguru import logger
    except ImportError:
        yield
        return
    logger.disable("fastembed")
    try:
        yield
    finally:
        logger.enable("fastembed")


@contextlib.contextmanager
def _no_spinning() -> Iterator[None]:
    """Sessions created meanwhile do not spin-wait between runs.

    ONNX Runtime's intra-op threads busy-wait after each run by default; on 2 cores that steals the
    CPU from the keyword and vector search that follow a query embedding (measured: hybrid search
    30 ms with spinning, 19 ms without). fastembed exposes no such option, so the session options
    class is swapped while the model loads."""
    import onnxruntime as ort

    original = ort.SessionOptions

    def quiet_options() -> Any:
        options = original()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        return options

    ort.SessionOptions = quiet_options
    try:
        yield
    finally:
        ort.SessionOptions = original


def _load_failure(spec: ModelSpec, exc: Exception, download_dir: str | None) -> str:
    if spec.bundled:
        return (
            f"the bundled embedding model failed to load ({exc.__class__.__name__}); "
            "reinstall context-harness, or set [embedding] model_path to a model folder"
        )
    if spec.model_path is not None:
        return (
            f"embedding.model_path {spec.model_path} could not be loaded as {spec.fastembed_name} "
            f"({exc.__class__.__name__}); the folder needs model.onnx, tokenizer.json, "
            "tokenizer_config.json, special_tokens_map.json and config.json"
        )
    return (
        f"embedding model {spec.fastembed_name!r} is not in the cache ({download_dir}) and could not be "
        "downloaded (offline, or the hub is unreachable). Fix: run once with network access so it "
        "downloads; or download it elsewhere and set [embedding] model_path = \"/path/to/folder\"; "
        "or remove [embedding] model to use the bundled all-MiniLM-L6-v2, which needs no network"
    )


def _check_pinned(spec: ModelSpec) -> None:
    """``ConfigError`` unless the ONNX file fastembed loads from ``model_path`` has ``model_sha256``."""
    assert spec.model_path is not None and spec.weights_sha256 is not None
    files = {m["model"].lower(): m.get("model_file") for m in _import_fastembed().list_supported_models()}
    weights = spec.model_path / (files.get(spec.fastembed_name.lower()) or bundled.MODEL_FILE)
    try:
        with weights.open("rb") as handle:
            found = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise ConfigError(f"embedding.model_sha256: cannot read {weights} ({exc.strerror or exc}); model_path must "
                          f"hold the weights {spec.fastembed_name} loads") from None
    if found != spec.weights_sha256:
        raise ConfigError(
            f"embedding.model_sha256: the weights {weights} have SHA-256 {found}, not the pinned "
            f"{spec.weights_sha256}: they are damaged or were replaced, and would make other vectors. Put the "
            "pinned model back in model_path, or, if the new weights are meant, set model_sha256 to their digest "
            "and run `ctx embed rebuild`"
        )


def _import_fastembed() -> Any:
    try:
        from fastembed import TextEmbedding
    except ImportError as exc:
        raise EmbeddingsUnavailable(
            f"fastembed cannot be imported ({exc}); reinstall context-harness, "
            'or set [embedding] provider = "openai" or "disabled"'
        ) from None
    return TextEmbedding


def _supported() -> dict[str, int]:
    text_embedding = _import_fastembed()
    return {m["model"].lower(): int(m["dim"]) for m in text_embedding.list_supported_models()}


def _check_known(name: str) -> None:
    if name.lower() not in _supported():
        raise ConfigError(
            f"embedding.model: {name!r} is not a model fastembed knows (e.g. 'BAAI/bge-small-en-v1.5'); "
            "remove it to use the bundled all-MiniLM-L6-v2, or point model_path at a local model folder"
        )


def _fastembed_dims(name: str) -> int:
    _check_known(name)
    return _supported()[name.lower()]


@contextlib.contextmanager
def _hub_offline(offline: bool) -> Iterator[None]:
    """Set ``HF_HUB_OFFLINE=1`` while loading a model from local files (restored afterwards)."""
    if not offline or os.environ.get("HF_HUB_OFFLINE"):
        yield
        return
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        os.environ.pop("HF_HUB_OFFLINE", None)
