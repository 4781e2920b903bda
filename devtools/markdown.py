"""Small Markdown helpers for the generated reference pages, and the error that fails the build."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Sequence
from typing import Any


class Undocumented(Exception):
    """Something a user meets (a config key, a CLI option, a tool, an error) has no description.

    The message lists every one found, with where to add the description in the code."""

    def __init__(self, page: str, missing: Sequence[str], where: str) -> None:
        lines = "\n".join(f"  - {item}" for item in missing)
        super().__init__(f"{page}: {len(missing)} without a description (add it in {where}):\n{lines}")
        self.missing = list(missing)


def own_doc(obj: Any) -> str:
    """The docstring written on ``obj`` itself (not inherited), as Markdown; "" when it has none."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return rst_to_md(inspect.cleandoc(doc)) if doc else ""


def rst_to_md(text: str) -> str:
    """Docstring markup to Markdown: ``code`` -> `code`; lines of one paragraph joined."""
    text = text.replace("``", "`")
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def first_paragraph(text: str) -> str:
    return text.split("\n\n", 1)[0].strip()


def cell(text: str) -> str:
    """``text`` made safe for one table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def code(text: str) -> str:
    """Inline code that survives backticks inside ``text``."""
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


GENERATED_NOTE = ("<!-- Generated from {source} by `python -m devtools.reference --write` (a test fails when it is "
                  "stale); edit the code, not this page. -->")
