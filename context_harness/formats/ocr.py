"""OCR: the text of scanned PDF pages and of pictures, offline, with RapidOCR (the ``ocr`` extra).

Opt-in (``[formats] ocr = true``): only PDF pages without a text layer that hold a picture, and image
files (PNG, JPEG, TIFF), are recognised. The models (PP-OCRv4 detection and recognition: ONNX, 16 MB;
its direction classifier is not used: it turned long upright lines over) ship inside the pinned wheel
``rapidocr_onnxruntime==1.4.4``; nothing is downloaded. Each file is checked against the SHA-256
pinned here when the engine loads (once per process and file state, as ``embedding/bundled.py``
checks the embedding model): other weights would read other text, so they are refused.

Bounds, per page: a page is rasterised at its scan's own resolution, at least ``RENDER_SCALE`` (216
dpi), with its longest side capped at ``MAX_SIDE`` pixels (memory: one 8-bit picture of at most 3600 x
3600; the lines are found on a copy at most ``DETECT_SIDE`` pixels long, then read at full size;
about 700 MB at the peak in all);
an image file of more than ``MAX_IMAGE_PIXELS`` is refused before it is decoded (``too_large``);
detection runs whole (about 1-3 s on a page of that size), then recognition in batches of ``BATCH``
text lines, stopping past the page's time limit (``[formats] ocr_page_seconds``): that page is
skipped (``ocr_timeout``), the rest goes on. A
document notes the pages it skipped and why in its metadata (``pages_skipped``).

Progress: ``reporting(callback, name)`` sets what hears, per page, ``{"event": "ocr", "document":
name, "page": n, "pages": total, "seconds": s, "skipped": reason or None}``; the sync passes these on
to its progress display (from the chunking helpers too, over their pipe).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_harness.errors import ConfigError

log = logging.getLogger(__name__)

EXTRA = "ocr"
PACKAGE = "rapidocr_onnxruntime"
PINNED = "rapidocr_onnxruntime==1.4.4"
#: The ONNX files of rapidocr_onnxruntime 1.4.4 (``rapidocr_onnxruntime/models``). Pinned here, not read
#: from the package: a release with other models reads other text.
MODEL_SHA256 = {
    "ch_PP-OCRv4_det_infer.onnx": "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
    "ch_PP-OCRv4_rec_infer.onnx": "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
}
# PDF points to pixels, at least: 216 dpi, 10-point text about 30 pixels high. At 144 dpi the recogniser
# (48 pixels high) left out half the spaces between words of 12-point Helvetica; at 216 dpi none. A page
# scanned finer is rendered at its scan's own resolution: 8-point Helvetica scanned at 300 dpi read 11 % of
# its words right at 216 dpi, all of them at 300.
RENDER_SCALE = 3.0
MIN_SIDE = 2600  # a picture smaller than this (longest side, pixels) is scaled up to it, at most MAX_UPSCALE times
MAX_SIDE = 3600  # a rasterised page's or picture's longest side, in pixels (an A4 page at 300 dpi: 3508)
# Lines are found on a copy of the page this long (RapidOCR's default: 2000), then read at full size. On the
# pages of benchmarks/ocr.py: 2000 px peaked at 1,031 MB and read 0.971 of the words right, 1280 px 679 MB
# and 0.987 (1024 px: 638 MB, 0.994; 960 px: 0.921, lines lost).
DETECT_SIDE = 1280
MAX_UPSCALE = 2.0  # a small picture is scaled up at most this much
MAX_IMAGE_PIXELS = 40_000_000  # an image file larger than this is not decoded (too_large)
MAX_FRAMES = 1000  # pages of a multi-page TIFF read
BATCH = 12  # text lines recognised at once; the time limit is checked between batches
MIN_SCORE = 0.5  # a recognised line less sure than this is dropped (RapidOCR's own default)
Report = Callable[[dict[str, Any]], None]

_ENGINE: Any = None
_LOCK = threading.Lock()  # one engine per process, loaded once, used by one conversion at a time
_VERIFIED: set[tuple[object, ...]] = set()
_REPORT = threading.local()


class PageSkipped(Exception):
    """One page that was not recognised; ``reason`` says why (``ocr_timeout``, ``too_large``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def available() -> bool:
    """Whether the ``ocr`` extra is installed."""
    try:
        return importlib.util.find_spec(PACKAGE) is not None
    except (ImportError, ValueError):
        return False


def require() -> None:
    """``ConfigError`` naming the install command unless the ``ocr`` extra is installed."""
    if not available():
        from context_harness.config.install import install_hint

        raise ConfigError(f"[formats] ocr = true needs the ocr extra (RapidOCR and its models, about 300 MB "
                          f"with OpenCV): {install_hint(EXTRA)}; or set ocr = false")


def _engine() -> Any:
    """The process's RapidOCR engine, its model files checked first."""
    global _ENGINE
    if _ENGINE is None:
        require()
        from importlib import metadata

        version = metadata.version(PACKAGE)
        if f"{PACKAGE}=={version}" != PINNED:
            raise ConfigError(f"{PACKAGE} {version} is installed, but OCR is pinned to {PINNED} (another release "
                              f"may carry other models); pip install {PINNED}")
        import rapidocr_onnxruntime

        folder = Path(rapidocr_onnxruntime.__file__).parent / "models"
        for name, expected in MODEL_SHA256.items():
            verify(folder / name, expected)
        logging.getLogger("RapidOCR").setLevel(logging.WARNING)  # its own stderr handler: load banners
        _ENGINE = rapidocr_onnxruntime.RapidOCR(max_side_len=DETECT_SIDE)
    return _ENGINE


def verify(path: Path, expected: str) -> None:
    """``ConfigError`` unless ``path`` holds ``expected`` (SHA-256); hashed once per process and file state."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ConfigError(f"the OCR model file {path} cannot be read ({exc.strerror}); reinstall {PINNED}") from None
    state = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, expected)
    if state in _VERIFIED:
        return
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ConfigError(f"the OCR model file {path} is damaged or was replaced (SHA-256 expected {expected}, "
                          f"found {digest.hexdigest()}); reinstall it: pip install --force-reinstall {PINNED}")
    _VERIFIED.add(state)


@contextlib.contextmanager
def reporting(report: Report | None, document: str | None) -> Iterator[None]:
    """Send this thread's per-page OCR events to ``report`` (naming ``document``) while inside."""
    before = getattr(_REPORT, "current", None)
    _REPORT.current = (report, document) if report is not None else None
    try:
        yield
    finally:
        _REPORT.current = before


def report_page(page: int, pages: int, seconds: float, skipped: str | None) -> None:
    """Tell what ``reporting`` set (if anything) that page ``page`` of ``pages`` was read or skipped."""
    current = getattr(_REPORT, "current", None)
    if current is not None:
        report, document = current
        report({"event": "ocr", "document": document, "page": page, "pages": pages,
                "seconds": round(seconds, 3), "skipped": skipped})


# -- recognition ------------------------------------------------------------------------------------

def recognise(image: Any, seconds: float) -> str:
    """The text of one page (a numpy array: gray, BGR or BGRA), lines in reading order; ``PageSkipped``
    (``ocr_timeout``) when it takes more than ``seconds``."""
    import numpy as np

    with _LOCK:
        engine = _engine()  # its first load (about 1 s) is not the page's time
        deadline = time.monotonic() + seconds
        found, _ = engine(image, use_cls=False, use_rec=False)  # detection only: the text lines' boxes
        if not found:
            return ""
        boxes = [np.array(box, dtype=np.float32) for box in found]
        image = engine.load_img(image)  # as the detector saw it (BGR)
        lines: list[tuple[Any, str]] = []
        for start in range(0, len(boxes), BATCH):
            if time.monotonic() > deadline:
                raise PageSkipped("ocr_timeout")
            batch = boxes[start:start + BATCH]
            crops = engine.get_crop_img_list(image, batch)  # no direction classifier: it turned long lines over
            recognised, _ = engine.text_rec(crops, True)
            for box, (text, score, info) in zip(batch, recognised, strict=True):
                if float(score) >= MIN_SCORE and text.strip():
                    lines.append((box, _spaced(text, info)))
        if time.monotonic() > deadline:
            raise PageSkipped("ocr_timeout")
    return _layout(lines)


def _spaced(text: str, info: list[Any]) -> str:
    """``text`` with the spaces the recogniser left out put back: where two letters lie much further apart
    (in its output columns) than the line's letters usually do. Its model, trained mostly on Chinese,
    often joins English words (``4471coversthe`` in Courier)."""
    _, words, columns, _, _ = info
    letters = [(char, col) for word, cols in zip(words, columns, strict=False)
               for char, col in zip(word, cols, strict=False)]
    if len(letters) < 3 or "".join(c for c, _ in letters) != text.replace(" ", ""):
        return text
    gaps = sorted(b[1] - a[1] for a, b in zip(letters, letters[1:], strict=False))
    usual = gaps[len(gaps) // 2]
    wide = max(2 * usual, usual + 3)
    spaces = _space_positions(text)
    out = [letters[0][0]]
    for index, (a, b) in enumerate(zip(letters, letters[1:], strict=False), 1):
        if index in spaces or b[1] - a[1] >= wide:
            out.append(" ")
        out.append(b[0])
    return "".join(out)


def _space_positions(text: str) -> set[int]:
    """For the spaces of ``text``: how many letters (not spaces) come before each."""
    positions, letters = set(), 0
    for char in text:
        if char == " ":
            positions.add(letters)
        else:
            letters += 1
    return positions


def _layout(lines: list[tuple[Any, str]]) -> str:
    """Recognised lines as text: boxes whose middles are at the same height (within half a line) on one
    line, left to right; lines top to bottom."""
    rows: list[list[tuple[float, float, str]]] = []  # (middle y, left x, text)
    for box, text in sorted(lines, key=lambda item: float(item[0][:, 1].mean())):
        middle, height = float(box[:, 1].mean()), float(box[:, 1].max() - box[:, 1].min())
        if rows and abs(rows[-1][0][0] - middle) < max(height, 1) / 2:
            rows[-1].append((middle, float(box[:, 0].min()), text))
        else:
            rows.append([(middle, float(box[:, 0].min()), text)])
    return "\n".join(" ".join(text for _, _, text in sorted(row, key=lambda r: r[1])) for row in rows)


# -- PDF pages and image files ------------------------------------------------------------------------

def render_page(page: Any, image_type: int = 3) -> Any:
    """A PDF page (pypdfium2) as an 8-bit gray picture: at the resolution of the finest picture on it, at
    least ``RENDER_SCALE``, with the longest side at most ``MAX_SIDE`` pixels."""
    width, height = page.get_size()
    scale = min(max(RENDER_SCALE, _scan_scale(page, image_type)), MAX_SIDE / max(width, height, 1))
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        return bitmap.to_numpy().copy()
    finally:
        bitmap.close()


def _scan_scale(page: Any, image_type: int) -> float:
    """Pixels per point of the finest picture on the page (a scan's own resolution), 0 when none says."""
    import itertools

    finest = 0.0
    for obj in itertools.islice(page.get_objects(), 10_000):
        if obj.type != image_type:
            continue
        try:
            pixels = obj.get_px_size()[0]
            left, _, right, _ = obj.get_bounds()
        except Exception:  # a picture PDFium cannot measure: the page's own scale stands
            continue
        if right - left > 1:
            finest = max(finest, pixels / (right - left))
    return finest


@dataclass
class PageText:
    """One recognised page: its text, or why it was skipped."""

    text: str
    skipped: str | None = None


def page_text(image: Any, page: int, pages: int, seconds: float) -> PageText:
    """Recognise one page and report it (``report_page``); a bound passed is a skip, never an error."""
    started = time.monotonic()
    try:
        result = PageText(recognise(image, seconds))
    except PageSkipped as skip:
        log.warning("OCR skipped page %d of %s: %s", page, _document(), skip.reason)
        result = PageText("", skip.reason)
    report_page(page, pages, time.monotonic() - started, result.skipped)
    return result


def _document() -> str:
    current = getattr(_REPORT, "current", None)
    return (current[1] if current else None) or "a document"


def pdf_pages(doc: Any, indexes: list[int], lock: Any, seconds: float, image_type: int = 3) -> dict[int, PageText]:
    """Recognise the pages ``indexes`` (0-based) of an open pypdfium2 document, one at a time: each is
    rasterised holding ``lock`` (PDFium is not thread-safe), recognised without it."""
    done = {}
    for count, index in enumerate(indexes, 1):
        with lock:
            page = doc[index]
            try:
                image = render_page(page, image_type)
            finally:
                page.close()
        done[index] = page_text(image, count, len(indexes), seconds)
        del image
    return done


def image_pages(raw: bytes, seconds: float) -> tuple[list[str], dict[str, str], int]:
    """Read an image file (PNG, JPEG, TIFF: a frame per page): the frames' texts, the frames skipped
    (number from 1 -> ``too_large``, ``ocr_timeout``) and how many frames were looked at.
    ``PageSkipped("too_large")`` for a picture so large that Pillow refuses to open it."""
    import io
    import warnings

    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # refused below, by our own bound
        try:
            picture = Image.open(io.BytesIO(raw))
        except Image.DecompressionBombError:
            raise PageSkipped("too_large") from None
    texts, skipped = [], {}
    with picture:
        frames = min(getattr(picture, "n_frames", 1), MAX_FRAMES)
        for index in range(frames):
            picture.seek(index)
            try:
                gray = _gray(picture)
            except PageSkipped as skip:
                report_page(index + 1, frames, 0.0, skip.reason)
                skipped[str(index + 1)] = skip.reason
                continue
            page = page_text(gray, index + 1, frames, seconds)
            del gray
            if page.skipped:
                skipped[str(index + 1)] = page.skipped
            elif page.text:
                texts.append(page.text)
    return texts, skipped, frames


def _gray(frame: Any) -> Any:
    """One frame as an 8-bit gray picture whose longest side is between ``MIN_SIDE`` and ``MAX_SIDE``
    (scaled up at most ``MAX_UPSCALE`` times: an A4 page scanned at 200 dpi is read as a PDF page is, at
    about 216 dpi; as scanned, the recogniser left out a third of the spaces of a JPEG's 12-point
    Helvetica); ``PageSkipped("too_large")`` past ``MAX_IMAGE_PIXELS``, before it is decoded."""
    import numpy as np
    from PIL import Image

    width, height = frame.size
    if width * height > MAX_IMAGE_PIXELS:
        raise PageSkipped("too_large")
    gray = frame.convert("L")
    longest = max(width, height, 1)
    scale = min(max(longest, MIN_SIDE), MAX_SIDE) / longest
    scale = min(scale, MAX_UPSCALE)
    if abs(scale - 1) > 0.02:
        gray = gray.resize((max(1, round(width * scale)), max(1, round(height * scale))), Image.Resampling.LANCZOS)
    return np.asarray(gray).copy()
