"""The ``openai`` provider: any OpenAI-compatible ``/v1/embeddings`` endpoint.

Works with OpenAI, Ollama, LM Studio, vLLM and the like. Requests go out in batches of
``batch_size``; 429, 5xx, timeouts and dropped connections are retried ``max_retries`` times with
exponential backoff (honouring ``Retry-After``). A refused connection (no server listening) and
other failures raise ``EmbeddingsUnavailable`` at once, with a message naming the config key to
fix. Uses stdlib ``urllib`` only.

Vectors are asked for as base64 (``encoding_format``, as OpenAI's own clients do): four bytes a number
instead of ~20 characters of JSON, which at a million chunks is the difference between the wire and
the JSON parser being the bottleneck. A server that refuses the parameter (HTTP 400 or 422) is asked
again without it, and so are later requests; a server that ignores it and sends lists works as is.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import numpy as np

from context_harness.common import jsonlimits
from context_harness.config import EmbeddingConfig
from context_harness.embedding.base import BaseEmbedder, EmbedderIdentity
from context_harness.errors import ConfigError, EmbeddingsUnavailable

log = logging.getLogger(__name__)

PROVIDER = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_BACKOFF = 30.0
_RETRY_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))


def endpoint_url(base_url: str | None) -> str:
    """``base_url`` -> the embeddings URL (``.../v1`` and bare hosts both work)."""
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    parsed = urllib.parse.urlsplit(base)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"embedding.base_url: expected an http(s) URL like {DEFAULT_BASE_URL}, got {base_url!r}")
    if parsed.path.endswith("/embeddings"):
        return base
    if parsed.path in ("", "/"):
        return base + "/v1/embeddings"
    return base + "/embeddings"


class OpenAIEmbedder(BaseEmbedder):
    """Embeddings over HTTP. Blocking; run it in a worker thread."""

    def __init__(self, config: EmbeddingConfig, *, backoff: float = 0.5) -> None:
        super().__init__()
        if not config.model:
            raise ConfigError(
                'embedding.model: the openai provider needs a model name (e.g. model = "text-embedding-3-small")'
            )
        self.model = config.model
        self.url = endpoint_url(config.base_url)
        self.api_key = config.api_key
        self.batch_size = config.batch_size
        self.max_retries = config.max_retries
        self.timeout = config.timeout
        self.backoff = backoff
        self.requested_dims = config.dims
        self._base64 = True  # until the server refuses encoding_format
        self._identity: EmbedderIdentity | None = None
        if config.dims is not None:
            self._identity = EmbedderIdentity(PROVIDER, self.model, config.dims)

    @property  # known only after the first call; BaseEmbedder lets simple embedders set it as an attribute
    def identity(self) -> EmbedderIdentity:  # type: ignore[override]
        if self._identity is None:  # dims not configured: ask the server once
            dims = self._request(["dimension probe"]).shape[1]
            self._identity = EmbedderIdentity(PROVIDER, self.model, dims)
        return self._identity

    def _embed(self, texts: list[str]) -> np.ndarray:
        dims = self.identity.dims
        out = np.empty((len(texts), dims), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            out[start : start + len(batch)] = self._request(batch)
        return out

    # -- HTTP -------------------------------------------------------------------------------

    def _request(self, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self.requested_dims is not None and self.model.startswith("text-embedding-3"):
            body["dimensions"] = self.requested_dims  # OpenAI's shortened embeddings
        if self._base64:
            body["encoding_format"] = "base64"
        payload = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        attempt = 0
        while True:
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                return self._parse(raw, len(batch))
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                if self._base64 and exc.code in (400, 422):  # perhaps encoding_format: ask as plain JSON
                    self._base64 = False
                    log.info("embeddings endpoint %s refused base64 vectors; asking for JSON lists", self.url)
                    return self._request(batch)
                if exc.code not in _RETRY_STATUS or attempt >= self.max_retries:
                    raise EmbeddingsUnavailable(self._http_message(exc.code, detail, attempt)) from None
                delay = self._delay(attempt, exc.headers.get("Retry-After") if exc.headers else None)
                log.warning("embeddings endpoint %s: HTTP %s, retrying in %.2fs", self.url, exc.code, delay)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, ConnectionRefusedError):  # nothing listens there: retrying only waits
                    raise EmbeddingsUnavailable(
                        f"the embeddings endpoint {self.url} is not reachable (connection refused); "
                        "check [embedding] base_url and that the server is running"
                    ) from None
                if attempt >= self.max_retries:
                    raise EmbeddingsUnavailable(
                        f"cannot reach the embeddings endpoint {self.url} ({reason}) after "
                        f"{attempt + 1} attempt(s); check [embedding] base_url and that the server is running"
                    ) from None
                delay = self._delay(attempt, None)
                log.warning("embeddings endpoint %s unreachable (%s), retrying in %.2fs", self.url, exc, delay)
            attempt += 1
            time.sleep(delay)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = self.backoff * (2**attempt)
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        return min(delay, MAX_BACKOFF)

    def _http_message(self, status: int, detail: str, attempt: int) -> str:
        where = f"the embeddings endpoint {self.url}"
        if status in (401, 403):
            return (
                f"{where} rejected the API key (HTTP {status}); set [embedding] api_key "
                '(e.g. api_key = "${OPENAI_API_KEY}") to a valid key' + (f": {detail}" if detail else "")
            )
        if status == 404:
            return (
                f"{where} answered 404; check [embedding] base_url (it should end in /v1) "
                f"and model {self.model!r}" + (f": {detail}" if detail else "")
            )
        if status in _RETRY_STATUS:
            return f"{where} kept failing with HTTP {status} after {attempt + 1} attempt(s)" + (
                f": {detail}" if detail else ""
            )
        return f"{where} refused the request (HTTP {status})" + (f": {detail}" if detail else "")

    def _parse(self, raw: bytes, expected: int) -> np.ndarray:
        try:
            data = jsonlimits.loads(raw)  # nested past the limit: a ValueError, not a RecursionError
            items = sorted(data["data"], key=lambda item: item.get("index", 0))
            vectors = np.asarray([_vector(item["embedding"]) for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            raise EmbeddingsUnavailable(
                f"the embeddings endpoint {self.url} sent a response that is not OpenAI embeddings JSON "
                "({'data': [{'index', 'embedding'}]}); check [embedding] base_url"
            ) from None
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise EmbeddingsUnavailable(
                f"the embeddings endpoint {self.url} returned {vectors.shape[0] if vectors.ndim else 0} "
                f"vectors for {expected} inputs"
            )
        if self._identity is not None and vectors.shape[1] != self._identity.dims:
            raise EmbeddingsUnavailable(
                f"model {self.model!r} returned {vectors.shape[1]}-dimensional vectors but "
                f"[embedding] dims = {self._identity.dims}; set dims = {vectors.shape[1]}"
            )
        if not np.isfinite(vectors).all():
            raise EmbeddingsUnavailable(f"the embeddings endpoint {self.url} returned non-finite numbers")
        return vectors


def _vector(embedding: Any) -> Any:
    """One ``embedding`` value: a list of numbers, or base64 of little-endian float32."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
    return embedding


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's own error message, shortened; never echoes our request."""
    try:
        body = exc.read(4096)
        data = jsonlimits.loads(body)
        error = data.get("error", data)
        message = error.get("message") if isinstance(error, dict) else error
        text = str(message) if message else ""
    except Exception:
        return ""
    return text[:200]
