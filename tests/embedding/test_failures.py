"""Embedding back-ends that cannot work fail fast, with one clear error, and do not retry in vain."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path

import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding import local as local_mod
from context_harness.embedding.local import LocalEmbedder
from context_harness.embedding.openai import OpenAIEmbedder
from context_harness.errors import EmbeddingsUnavailable

UNCACHED_MODEL = "BAAI/bge-small-en-v1.5"  # a fastembed model that is not bundled


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every outgoing connection (and name lookup) fails, as offline; returns the attempts made."""
    attempts: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(repr(args[:2]))
        raise OSError("network disabled by the test")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for name in ("HTTPS_PROXY", "https_proxy", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def _fail(embedder: LocalEmbedder) -> tuple[EmbeddingsUnavailable, float]:
    started = time.monotonic()
    with pytest.raises(EmbeddingsUnavailable) as info:
        embedder.embed_documents(["x"])
    return info.value, time.monotonic() - started


def test_offline_download_fails_fast_once_then_is_remembered(
    network_attempts: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    embedder = LocalEmbedder(EmbeddingConfig(model=UNCACHED_MODEL, threads=1), cache_dir=tmp_path)

    first, elapsed = _fail(embedder)
    assert elapsed < 2.0  # not fastembed's 3 + 9 + 27 s of download retries
    assert network_attempts  # it did try: the model may be downloaded when the network is there
    assert first.code == "embeddings_unavailable"
    assert UNCACHED_MODEL in first.message and "model_path" in first.message
    assert "fastembed" not in capfd.readouterr().err  # fastembed's own ERROR lines stay quiet

    tried = len(network_attempts)
    again = LocalEmbedder(EmbeddingConfig(model=UNCACHED_MODEL, threads=1), cache_dir=tmp_path)
    second, elapsed = _fail(again)
    assert elapsed < 0.5 and len(network_attempts) == tried  # remembered: no new attempt at all
    assert second.code == first.code and second.message.startswith(first.message)
    assert "not tried again" in second.message

    monkeypatch.setattr(local_mod, "LOAD_RETRY_AFTER", 0.0)  # the cool-down is over
    third, _ = _fail(again)
    assert len(network_attempts) > tried and third.message == first.message


def test_openai_endpoint_that_refuses_connections_fails_at_once(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens on it
    base_url = f"http://127.0.0.1:{port}/v1"
    config = EmbeddingConfig(provider="openai", base_url=base_url, model="test-embed", dims=8, max_retries=5)
    embedder = OpenAIEmbedder(config)  # the default backoff: five retries would take ~16 s

    started = time.monotonic()
    with caplog.at_level(logging.WARNING), pytest.raises(EmbeddingsUnavailable) as info:
        embedder.embed_documents(["x"])
    assert time.monotonic() - started < 2.0
    message = info.value.message
    assert base_url in message and "not reachable" in message and "base_url" in message
    assert not caplog.records  # no "retrying" warnings
