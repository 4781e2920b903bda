"""The openai provider against a local OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding.fake import FakeEmbedder
from context_harness.embedding.openai import OpenAIEmbedder, endpoint_url
from context_harness.errors import ConfigError, EmbeddingsUnavailable
from support.http import serve_in_thread

KEY = "sk-test-good"
DIMS = 8
_REFERENCE = FakeEmbedder(DIMS)


class FakeOpenAI(ThreadingHTTPServer):
    """Answers /v1/embeddings with deterministic vectors; ``script`` injects failures first."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.script: list[int | str] = []  # HTTP status, "garbage" or "slow", consumed per request
        self.dims = DIMS
        self.base64 = "ignore"  # what to do with encoding_format=base64: "ignore", "honour" or "refuse"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up ("slow" answers outlive the timeout test's client) is expected."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        action = self.server.script.pop(0) if self.server.script else 200
        if action == "slow":
            time.sleep(0.5)
            action = 200
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            return self._send(401, {"error": {"message": "Incorrect API key provided"}})
        if action == "garbage":
            return self._send(200, b"<html>not json</html>")
        if action == "deep":  # nested 100,000 levels: json.loads would raise RecursionError
            return self._send(200, b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        if action != 200:
            return self._send(int(action), {"error": {"message": f"injected {action}"}}, {"Retry-After": "0"})
        if self.path != "/v1/embeddings":
            return self._send(404, {"error": {"message": "no such route"}})
        wants_base64 = body.get("encoding_format") == "base64"
        if wants_base64 and self.server.base64 == "refuse":
            return self._send(400, {"error": {"message": "unknown field encoding_format"}})
        vectors = [3.0 * _REFERENCE.vector(t)[: self.server.dims] for t in body["input"]]
        data = [
            {"object": "embedding", "index": i,
             "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
             if wants_base64 and self.server.base64 == "honour" else v.tolist()}
            for i, v in enumerate(vectors)
        ]
        self._send(200, {"object": "list", "data": list(reversed(data)), "model": body["model"]})

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with serve_in_thread(FakeOpenAI(), poll_interval=0.02) as srv:
        yield srv


def _embedder(server: FakeOpenAI, **overrides: Any) -> OpenAIEmbedder:
    values: dict[str, Any] = {
        "provider": "openai",
        "base_url": server.base_url,
        "api_key": KEY,
        "model": "test-embed",
        "dims": DIMS,
        "batch_size": 2,
        "max_retries": 3,
        "timeout": 5.0,
    }
    values.update(overrides)
    return OpenAIEmbedder(EmbeddingConfig(**values), backoff=0.001)


def _expected(texts: list[str]) -> np.ndarray:
    return np.stack([_REFERENCE.vector(t) for t in texts])


def test_batches_keep_order_and_normalise(server: FakeOpenAI) -> None:
    texts = ["one apple", "two pears", "three plums", "four figs", "five limes"]
    vectors = _embedder(server).embed_documents(texts)
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert all(r["path"] == "/v1/embeddings" and r["body"]["model"] == "test-embed" for r in server.requests)
    assert all(r["auth"] == f"Bearer {KEY}" for r in server.requests)
    np.testing.assert_allclose(vectors, _expected(texts), atol=1e-6)  # sorted by index, unit norm


@pytest.mark.parametrize("mode", ["honour", "ignore", "refuse"])
def test_vectors_come_as_base64_where_the_server_can(server: FakeOpenAI, mode: str) -> None:
    server.base64 = mode
    embedder = _embedder(server)
    texts = ["alpha", "beta", "gamma"]
    for _ in range(2):
        assert np.allclose(embedder.embed_documents(texts), _expected(texts), atol=1e-6)
    asked = [r["body"].get("encoding_format") for r in server.requests]
    if mode == "refuse":  # refused once, then every request is plain JSON
        assert asked == ["base64", None, None, None, None]
    else:
        assert asked == ["base64"] * 4


def test_query_is_cached(server: FakeOpenAI) -> None:
    embedder = _embedder(server)
    first = embedder.embed_query("a question")
    assert embedder.embed_query("a question") is first
    assert len(server.requests) == 1


def test_retries_429_and_500_then_succeeds(server: FakeOpenAI) -> None:
    server.script = [429, 500, 503]
    vectors = _embedder(server).embed_documents(["retry me"])
    assert len(server.requests) == 4
    np.testing.assert_allclose(vectors, _expected(["retry me"]), atol=1e-6)


def test_gives_up_after_max_retries(server: FakeOpenAI) -> None:
    server.script = [500, 500, 500]
    with pytest.raises(EmbeddingsUnavailable, match=r"HTTP 500 after 2 attempt\(s\): injected 500"):
        _embedder(server, max_retries=1).embed_documents(["x"])
    assert len(server.requests) == 2


def test_auth_failure_is_clear_and_not_retried(server: FakeOpenAI) -> None:
    with pytest.raises(EmbeddingsUnavailable) as info:
        _embedder(server, api_key="sk-wrong-secret").embed_documents(["x"])
    message = info.value.message
    assert "HTTP 401" in message and "api_key" in message and "Incorrect API key" in message
    assert "sk-wrong-secret" not in message
    assert len(server.requests) == 1


def test_bad_responses(server: FakeOpenAI) -> None:
    server.script = ["garbage"]
    with pytest.raises(EmbeddingsUnavailable, match="not OpenAI embeddings JSON"):
        _embedder(server).embed_documents(["x"])
    server.script = ["deep"]
    with pytest.raises(EmbeddingsUnavailable, match="not OpenAI embeddings JSON"):
        _embedder(server).embed_documents(["x"])
    with pytest.raises(EmbeddingsUnavailable, match="set dims = 8"):
        _embedder(server, dims=16).embed_documents(["x"])
    with pytest.raises(EmbeddingsUnavailable, match="404.*base_url"):
        _embedder(server, base_url=server.base_url + "/nested").embed_documents(["x"])


def test_dims_probed_when_not_configured(server: FakeOpenAI) -> None:
    embedder = _embedder(server, dims=None)
    assert embedder.identity.dims == DIMS
    assert embedder.identity.key == "openai:test-embed:8"


def test_timeout_is_retried_then_reported(server: FakeOpenAI) -> None:
    server.script = ["slow", "slow"]
    with pytest.raises(EmbeddingsUnavailable, match="cannot reach"):
        _embedder(server, timeout=0.1, max_retries=1).embed_documents(["x"])


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="model"):
        OpenAIEmbedder(EmbeddingConfig(provider="openai"))
    with pytest.raises(ConfigError, match="base_url"):
        endpoint_url("localhost:11434")
    assert endpoint_url(None) == "https://api.openai.com/v1/embeddings"
    assert endpoint_url("http://localhost:11434") == "http://localhost:11434/v1/embeddings"
    assert endpoint_url("http://h/v1/") == "http://h/v1/embeddings"
    assert endpoint_url("http://h/api/embeddings") == "http://h/api/embeddings"
