"""Jupyter notebooks (``nbformat``) as text: Markdown cells as they are, code cells as fenced code in
the kernel's language; raw cells are left out, and so are outputs unless ``[formats] notebook_outputs``
asks for them: then a code cell's text outputs (streams, ``text/plain`` results and displays, errors'
name and value) follow it in an ``output`` fence, at most ``MAX_OUTPUT_CHARS`` a cell.

The title is the notebook metadata's ``title``, else its first Markdown heading; the author its
metadata's ``authors``. Its JSON is parsed with its nesting bounded, and a notebook of more than
``MAX_CELLS`` cells is skipped as ``too_many_cells`` before ``nbformat`` reads it.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from context_harness.common import jsonlimits
from context_harness.formats.documents import ConversionFailed, Converted, ConvertOptions

MAX_CELLS = 10_000
MAX_OUTPUT_CHARS = 10_000
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_BACKTICKS = re.compile(r"`{3,}")


def notebook(raw: bytes, options: ConvertOptions) -> Converted:
    data = jsonlimits.loads(raw)
    if not isinstance(data, dict):
        raise ConversionFailed("corrupt")
    if _cell_count(data) > MAX_CELLS:
        raise ConversionFailed("too_many_cells")
    import nbformat

    with warnings.catch_warnings():  # nbformat warns of missing cell ids, which it adds
        warnings.simplefilter("ignore")
        nb = nbformat.reads(raw.decode("utf-8-sig"), as_version=4)
    language = _language(nb.metadata)
    blocks = []
    for cell in nb.cells:
        source = str(cell.get("source") or "").strip("\n")
        if not source.strip():
            continue
        if cell.cell_type == "markdown":
            blocks.append(source)
        elif cell.cell_type == "code":
            blocks.append(fenced(source, language))
            output = _outputs(cell) if options.notebook_outputs else ""
            if output:
                blocks.append(fenced(output, "output"))
    markdown = "\n\n".join(str(c.source) for c in nb.cells if c.cell_type == "markdown")
    heading = _HEADING.search(markdown)
    title = nb.metadata.get("title") or (heading.group(1) if heading else None)
    authors = [str(a.get("name")) for a in nb.metadata.get("authors") or [] if isinstance(a, dict) and a.get("name")]
    return Converted(str(title) if title else None, "\n\n".join(blocks), ", ".join(authors) or None)


def _outputs(cell: Any) -> str:
    """A code cell's text outputs, joined, cut at ``MAX_OUTPUT_CHARS``."""
    parts = []
    for output in cell.get("outputs") or []:
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_joined(output.get("text")))
        elif kind in ("execute_result", "display_data"):
            parts.append(_joined((output.get("data") or {}).get("text/plain")))
        elif kind == "error":
            parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return "\n".join(p.strip("\n") for p in parts if p and p.strip())[:MAX_OUTPUT_CHARS]


def _joined(text: Any) -> str:
    """A notebook's multi-line string: one string, or a list of lines (as older notebooks store it)."""
    return "".join(str(t) for t in text) if isinstance(text, list) else str(text or "")


def _cell_count(data: dict[str, Any]) -> int:
    """Cells of a notebook as stored: v4 ``cells``, v3 ``worksheets[].cells``."""
    count = len(data.get("cells") or [])
    for sheet in data.get("worksheets") or []:
        count += len(sheet.get("cells") or []) if isinstance(sheet, dict) else 0
    return count


def _language(metadata: Any) -> str:
    for key in ("language_info", "kernelspec"):
        value = metadata.get(key) or {}
        name = value.get("name") if key == "language_info" else value.get("language")
        if isinstance(name, str) and re.fullmatch(r"[\w+#.-]{1,40}", name):
            return name.lower()
    return ""


def fenced(code: str, language: str = "") -> str:
    """``code`` in a fence longer than any run of backticks inside it."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{code}\n{fence}"
