"""The local provider with the real bundled model (small corpora only)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding import bundled
from context_harness.embedding import local as local_mod
from context_harness.embedding.base import Embedder, EmbedderIdentity
from context_harness.embedding.local import LocalEmbedder
from context_harness.errors import ConfigError, EmbeddingsUnavailable
from support.paths import REPO


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_bundled_identity_is_known_without_loading() -> None:
    embedder = LocalEmbedder(EmbeddingConfig())
    assert isinstance(embedder, Embedder)
    assert embedder.identity == EmbedderIdentity("local", "all-MiniLM-L6-v2-int8-dynamic", 384)
    assert embedder.identity.key == "local:all-MiniLM-L6-v2-int8-dynamic:384"


def test_vectors_are_unit_float32_384(local_embedder: LocalEmbedder) -> None:
    vectors = local_embedder.embed_documents(["Lua sandboxes limit memory.", "", "a" * 5000])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local_embedder.embed_documents([]).shape == (0, 384)


def test_paraphrase_ranks_above_unrelated(local_embedder: LocalEmbedder) -> None:
    docs = [
        "The cat is sleeping on the sofa.",
        "Quarterly revenue grew by five percent.",
        "How to restrict what a Lua script can access.",
    ]
    vectors = local_embedder.embed_documents(docs)
    kitten = local_embedder.embed_query("a kitten naps on the couch")
    sandbox = local_embedder.embed_query("sandboxing untrusted lua code")
    assert _cos(vectors[0], kitten) > 0.5 > _cos(vectors[1], kitten) + 0.3
    assert int(np.argmax(vectors @ sandbox)) == 2


def test_length_bucketing_keeps_input_order(local_embedder: LocalEmbedder) -> None:
    texts = [
        "short",
        "a much longer sentence about vector search, keyword search and how fusion combines them " * 3,
        "medium length text on embeddings",
        "x",
    ]
    batched = local_embedder.embed_documents(texts)
    one_by_one = np.stack([local_embedder.embed_documents([t])[0] for t in texts])
    assert np.all(np.sum(batched * one_by_one, axis=1) > 0.9999)


def test_query_embeddings_are_cached(local_embedder: LocalEmbedder) -> None:
    first = local_embedder.embed_query("cached query text")
    hits = local_embedder.query_cache.hits
    again = local_embedder.embed_query("cached query text")
    assert again is first and local_embedder.query_cache.hits == hits + 1
    assert not first.flags.writeable
    document = local_embedder.embed_documents(["cached query text"])[0]
    assert _cos(first, document) > 0.98  # the same text, through the model and its quantised query copy


def test_meanwhile_fires_once_before_the_model_runs_and_never_for_a_cached_query(local_embedder: LocalEmbedder) -> None:
    """Hybrid search starts its keyword half from ``meanwhile``: it must come after tokenising (Python
    work) and before the model run, once per embedded query."""
    calls: list[str] = []
    session = local_embedder.query_session()
    run = session.run

    class Watched:
        def run(self, *args, **kwargs):
            calls.append("model")
            return run(*args, **kwargs)

    key = (str(local_embedder.cache_dir) if local_embedder.cache_dir else None, local_embedder.threads)
    original = local_mod._QUERY_SESSIONS[key]
    local_mod._QUERY_SESSIONS[key] = Watched()
    try:
        vector = local_embedder.embed_query("a query asked for the first time", meanwhile=lambda: calls.append("meanwhile"))
        assert calls == ["meanwhile", "model"]
        again = local_embedder.embed_query("a query asked for the first time", meanwhile=lambda: calls.append("again"))
    finally:
        local_mod._QUERY_SESSIONS[key] = original
    assert again is vector and calls == ["meanwhile", "model"]


def test_direct_query_path_matches_fastembed(model_cache: Path) -> None:
    """Queries skip fastembed's batching generators; the vectors must not change."""
    embedder = LocalEmbedder(EmbeddingConfig(threads=1, quantized_queries=False), cache_dir=model_cache)
    model = embedder.load()
    queries = ["sandboxing untrusted lua code", "x", "Ünïcode — ünd émoji 🚀", "word " * 600]  # the last is truncated
    for query in queries:
        direct = embedder.embed_query(query)
        reference = np.asarray(next(iter(model.query_embed([query]))), dtype=np.float32)
        np.testing.assert_allclose(direct, reference, atol=1e-6)
    assert getattr(model, "_ctx_direct_query", None) is not None  # the direct path really ran
    assert embedder.query_session() is None


def test_quantized_queries_stay_close_and_rank_alike(local_embedder: LocalEmbedder, model_cache: Path) -> None:
    """The default: queries run through the int8-quantised copy, documents through the model."""
    assert local_embedder.query_session() is not None
    assert (bundled.prepare_model_dir(model_cache) / bundled.QUERY_MODEL_FILE).is_file()
    exact = LocalEmbedder(EmbeddingConfig(threads=1, quantized_queries=False), cache_dir=model_cache)
    docs = local_embedder.embed_documents([
        "The cat is sleeping on the sofa.", "Quarterly revenue grew by five percent.",
        "How to restrict what a Lua script can access.", "Tantivy is a full-text search library in Rust.",
    ])
    for query in ["a kitten naps on the couch", "sandboxing untrusted lua code", "rust search engine library",
                  "how much did sales grow"]:
        fast, slow = local_embedder.embed_query(query), exact.embed_query(query)
        assert float(fast @ slow) > 0.98 and not np.array_equal(fast, slow)
        assert list(np.argsort(-(docs @ fast))) == list(np.argsort(-(docs @ slow)))


def test_model_is_loaded_once_per_process(local_embedder: LocalEmbedder, model_cache: Path) -> None:
    other = LocalEmbedder(EmbeddingConfig(threads=1), cache_dir=model_cache)
    assert other.load() is local_embedder.load()


def test_bundled_model_folder_links_the_installed_files(model_cache: Path) -> None:
    folder = bundled.prepare_model_dir(model_cache)
    assert bundled.prepare_model_dir(model_cache) == folder  # reused, not rebuilt
    assert (folder / "model.onnx").resolve() == bundled.onnx_file().resolve()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == 256
    assert (bundled.vendored_dir() / "LICENSE").is_file() and (bundled.vendored_dir() / "NOTICE").is_file()


def test_building_a_model_folder_removes_those_of_installs_that_are_gone(tmp_path: Path) -> None:
    models = bundled.models_dir(tmp_path)
    gone_install = tmp_path / "old-venv" / "model.onnx"
    gone_install.parent.mkdir()
    gone_install.write_bytes(b"weights")
    orphan, live, copied = (models / f"{bundled.BUNDLED_MODEL}-{key}" for key in ("0rphan", "11ve", "c0py"))
    for folder in (orphan, live, copied):
        folder.mkdir(parents=True)
        (folder / bundled.QUERY_MODEL_FILE).write_bytes(b"query model copy")
    (orphan / "model.onnx").symlink_to(gone_install)
    (live / "model.onnx").symlink_to(bundled.onnx_file())
    (copied / "model.onnx").write_bytes(b"weights")
    gone_install.unlink()  # that install was removed

    folder = bundled.prepare_model_dir(tmp_path)
    assert folder.parent == models and (folder / "model.onnx").is_file()
    assert not orphan.exists()
    assert live.is_dir() and copied.is_dir()


def test_model_path_loads_a_local_folder(model_cache: Path) -> None:
    folder = bundled.prepare_model_dir(model_cache)
    embedder = LocalEmbedder(EmbeddingConfig(model_path=folder, threads=1))
    assert embedder.identity.dims == 384
    assert embedder.identity.model == f"{bundled.FASTEMBED_NAME}@{folder.name}"
    assert embedder.document_runner() is None  # fastembed embeds a model_path folder's documents
    exact = LocalEmbedder(EmbeddingConfig(threads=1, quantized_documents=False), cache_dir=model_cache)
    text = "local folders load without a download"
    assert _cos(embedder.embed_documents([text])[0], exact.embed_documents([text])[0]) > 0.9999
    with pytest.raises(ConfigError, match="model_path"):
        LocalEmbedder(EmbeddingConfig(model_path=folder / "missing"))


def test_unknown_model_is_a_config_error(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    embedder = LocalEmbedder(EmbeddingConfig(model="nobody/no-such-model"), cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="bundled all-MiniLM-L6-v2"):
        embedder.embed_documents(["x"])


def test_uncached_model_offline_says_how_to_fix(
    local_embedder: LocalEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    embedder = LocalEmbedder(EmbeddingConfig(model="BAAI/bge-small-en-v1.5"), cache_dir=tmp_path)
    with pytest.raises(EmbeddingsUnavailable) as info:
        embedder.embed_documents(["x"])
    message = info.value.message
    assert "BAAI/bge-small-en-v1.5" in message and "model_path" in message and "bundled" in message


def _run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_is_cheap_and_lazy() -> None:
    result = _run_python(
        """
        import sys
        import context_harness.embedding
        from context_harness.config import EmbeddingConfig
        from context_harness.embedding import build_embedder
        embedder = build_embedder(EmbeddingConfig())
        print(embedder.identity.key, "fastembed" in sys.modules, "onnxruntime" in sys.modules)
        """,
        dict(os.environ),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["local:all-MiniLM-L6-v2-int8-dynamic:384", "False", "False"]


def test_default_config_never_touches_the_network(tmp_path: Path) -> None:
    """First use in a fresh process and cache, HF_HUB_OFFLINE unset, every socket refused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "FASTEMBED_"))}
    env["CTX_CACHE_DIR"] = str(tmp_path / "cache")
    env["HOME"] = str(tmp_path / "home")
    env.pop("XDG_CACHE_HOME", None)
    result = _run_python(
        """
        import json, socket
        attempts = []
        def refuse(*args, **kwargs):
            attempts.append(repr(args[:2]))
            raise OSError("network access attempted")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from context_harness.config import EmbeddingConfig
        from context_harness.embedding import build_embedder
        embedder = build_embedder(EmbeddingConfig())
        vectors = embedder.embed_documents(["offline first use", "second text"])
        print(json.dumps({"shape": list(vectors.shape), "attempts": attempts}))
        """,
        env,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"shape": [2, 384], "attempts": []}  # stdout holds only our line
