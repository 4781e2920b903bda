"""A model folder of one's own: its weights pinned by SHA-256, and the prefixes its model card asks for.

The folders hold the real bundled weights and tokenizer, copied; fastembed loads them as the model
the test names, so the prefix tests run a real ONNX model end to end.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding import bundled
from context_harness.embedding.local import MODEL_PREFIXES, LocalEmbedder, resolve_spec
from context_harness.errors import ConfigError

BGE = "BAAI/bge-small-en-v1.5"  # fastembed loads its weights from model_optimized.onnx, CLS-pooled
INSTRUCTION = "Represent this sentence for searching relevant passages: "


def _folder(model_cache: Path, target: Path, weights: str = bundled.MODEL_FILE) -> Path:
    source = bundled.prepare_model_dir(model_cache)
    target.mkdir()
    for name in bundled.TOKENIZER_FILES:
        shutil.copyfile(source / name, target / name)
    shutil.copyfile(source / bundled.MODEL_FILE, target / weights)
    return target


def test_pinned_weights_load(model_cache: Path, tmp_path: Path) -> None:
    folder = _folder(model_cache, tmp_path / "pinned")
    pinned = LocalEmbedder(EmbeddingConfig(model_path=folder, model_sha256=bundled.WEIGHTS_SHA256, threads=1))
    plain = LocalEmbedder(EmbeddingConfig(model_path=folder, threads=1))
    text = "pinned weights make the same vectors"
    np.testing.assert_allclose(pinned.embed_documents([text]), plain.embed_documents([text]), atol=1e-6)


def test_replaced_weights_are_refused_naming_the_file_and_the_fix(model_cache: Path, tmp_path: Path) -> None:
    folder = _folder(model_cache, tmp_path / "replaced")
    other = bundled.query_model(bundled.prepare_model_dir(model_cache))  # valid ONNX, other vectors
    assert other is not None
    shutil.copyfile(other, folder / bundled.MODEL_FILE)
    assert LocalEmbedder(EmbeddingConfig(model_path=folder, threads=1)).embed_documents(["x"]).shape == (1, 384)
    embedder = LocalEmbedder(EmbeddingConfig(model_path=folder, model_sha256=bundled.WEIGHTS_SHA256, threads=1))
    with pytest.raises(ConfigError) as info:
        embedder.embed_documents(["x"])
    message = info.value.message
    assert str(folder / bundled.MODEL_FILE) in message and bundled.WEIGHTS_SHA256 in message
    assert "model_sha256" in message and "ctx embed rebuild" in message
    with pytest.raises(ConfigError, match="model_sha256"):  # the query path checks too
        LocalEmbedder(EmbeddingConfig(model_path=folder, model_sha256=bundled.WEIGHTS_SHA256)).embed_query("x")


def test_missing_weights_are_a_config_error(model_cache: Path, tmp_path: Path) -> None:
    folder = _folder(model_cache, tmp_path / "wrong-name", weights="other.onnx")
    embedder = LocalEmbedder(EmbeddingConfig(model_path=folder, model_sha256=bundled.WEIGHTS_SHA256))
    with pytest.raises(ConfigError, match="cannot read .*model.onnx"):
        embedder.embed_documents(["x"])


def test_a_pin_needs_a_model_path() -> None:
    with pytest.raises(ConfigError, match="set model_path too"):
        LocalEmbedder(EmbeddingConfig(model_sha256=bundled.WEIGHTS_SHA256))
    with pytest.raises(ValueError, match="model_sha256"):
        EmbeddingConfig(model_sha256="not-a-digest")


def test_queries_get_the_instruction_the_model_card_asks_for(model_cache: Path, tmp_path: Path) -> None:
    folder = _folder(model_cache, tmp_path / "bge", weights="model_optimized.onnx")
    embedder = LocalEmbedder(EmbeddingConfig(model=BGE, model_path=folder, threads=1))
    assert embedder.identity.model == f"{BGE}@bge"  # documents are embedded as they were: same identity
    query = embedder.embed_query("vitamin d and bone density")
    as_written = embedder.embed_documents([INSTRUCTION + "vitamin d and bone density"])[0]
    bare = embedder.embed_documents(["vitamin d and bone density"])[0]
    assert float(query @ as_written) > 0.9999
    assert float(query @ bare) < 0.999


def test_document_prefixes_change_the_identity() -> None:
    spec = resolve_spec(EmbeddingConfig(model="intfloat/multilingual-e5-large"))
    assert (spec.query_prefix, spec.document_prefix) == ("query: ", "passage: ")
    assert spec.identity_model == "intfloat/multilingual-e5-large+prefixed"
    assert resolve_spec(EmbeddingConfig(model="nomic-ai/nomic-embed-text-v1.5")).document_prefix == "search_document: "
    bundled_spec = resolve_spec(EmbeddingConfig())
    assert (bundled_spec.query_prefix, bundled_spec.document_prefix) == ("", "")
    assert all(name == name.lower() for name in MODEL_PREFIXES)


@pytest.mark.anyio
async def test_a_sync_with_replaced_weights_says_so_and_keyword_search_works(model_cache: Path, tmp_path: Path) -> None:
    from context_harness import config as config_mod
    from context_harness.core.harness import Harness
    from context_harness.models import SearchRequest

    folder = _folder(model_cache, tmp_path / "model")
    other = bundled.query_model(bundled.prepare_model_dir(model_cache))
    assert other is not None
    shutil.copyfile(other, folder / bundled.MODEL_FILE)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tea.md").write_text("# Tea\n\nGreen tea is brewed at 80 degrees.\n", encoding="utf-8")
    config = config_mod.from_dict({
        "db": {"path": str(tmp_path / "data" / "ctx.sqlite")},
        "connectors": {"filesystem": {"docs": {"root": str(tmp_path / "docs")}}},
        "embedding": {"model_path": str(folder), "model_sha256": bundled.WEIGHTS_SHA256, "threads": 1},
    }, None)
    async with Harness.open(config) as harness:
        report = await harness.sync()
        assert report.embedding_error is not None and report.embedding_error["code"] == "config_error"
        assert "model_sha256" in report.embedding_error["message"]
        found = await harness.search(SearchRequest(query="green tea temperature", mode="keyword"))
        assert [r.title for r in found.results] == ["Tea"]
        with pytest.raises(ConfigError, match="not the pinned"):
            await harness.search(SearchRequest(query="green tea temperature", mode="semantic"))
        explained = await harness.search(SearchRequest(query="green tea", mode="keyword", explain=True))
        assert explained.explain is not None and explained.explain.embedded_chunks == 0  # no other vectors


def test_every_model_fastembed_says_needs_prefixes_gets_them() -> None:
    """fastembed's own descriptions say which models need prefixes; it adds none itself."""
    import re

    from fastembed import TextEmbedding

    needs = {m["model"].lower() for m in TextEmbedding.list_supported_models()
             if re.search(r"Prefixes for queries/documents: (necessary|`)", m.get("description") or "")}
    assert needs and needs <= set(MODEL_PREFIXES), needs - set(MODEL_PREFIXES)
