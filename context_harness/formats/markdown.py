"""Markdown front matter and titles.

Front matter is read by the bounded YAML loader (``formats.yamlsafe``: no aliases, 64 KiB, 64
levels). Front matter that is not YAML, not a mapping, or past a bound is not front matter: the
note keeps its whole text as its body (so it is still indexed and found, the would-be front matter
searchable as text), and ``read_front_matter`` says why for the callers that report it (an agent or
skill file is then unavailable, naming the reason).

A note's tags are its front matter's ``tags`` (or ``keywords``) and those of a ``Tags: a, b`` line of
the exact shape ``note_write`` writes without front matter (``tags_line``): the body's first line, or
the line after a first-line ``# Title`` and one blank line, followed by a blank line or the end.
A ``Tags:`` line anywhere else is prose.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from typing import Any, NamedTuple

from context_harness.common import dates

log = logging.getLogger(__name__)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SETEXT_H1 = re.compile(r"^(\S[^\n]*)\n=+[ \t]*$", re.MULTILINE)
_TAGS_LINE = re.compile(r"(?:#[ \t]+[^\r\n]*\r?\n\r?\n)?Tags: ([^\r\n]{1,6000})(?:\r?\n\r?\n|\r?\n?\Z)")


class FrontMatter(NamedTuple):
    meta: dict[str, Any]
    body: str
    refused: str | None = None  # why front matter that is there was not read (past a bound of yamlsafe)


def read_front_matter(text: str) -> FrontMatter:
    """(front matter mapping, body, why refused). Invalid or non-mapping YAML leaves the text untouched;
    so does YAML past a bound of ``yamlsafe``, and ``refused`` says which."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return FrontMatter({}, text)
    import yaml  # here: a process that reads no front matter (``ctx search``) does not load PyYAML

    from context_harness.formats import yamlsafe

    try:
        data = yamlsafe.load(match.group(1) or "", first_line=2) or {}
    except yamlsafe.Refused as exc:
        log.info("front matter not read, kept as text: %s", exc)
        return FrontMatter({}, text, str(exc))
    except yaml.YAMLError:
        return FrontMatter({}, text)
    if not isinstance(data, dict):
        return FrontMatter({}, text)
    return FrontMatter({str(k): v for k, v in data.items()}, text[match.end():])


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Return (front matter mapping, body); see ``read_front_matter``."""
    meta, body, _ = read_front_matter(text)
    return meta, body


def first_heading(body: str) -> str | None:
    """The first level-1 heading outside fenced code, ATX (``# Title``) or setext style."""
    fence: str | None = None
    lines = body.splitlines()
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        if fence:
            continue
        match = _H1.match(line)
        if match:
            return match.group(1).strip() or None
        if i + 1 < len(lines) and line.strip() and re.fullmatch(r"=+\s*", lines[i + 1]):
            return line.strip()
    return None


def front_matter_tags(meta: dict[str, Any]) -> list[str]:
    raw = meta.get("tags", meta.get("keywords"))
    if raw is None:
        return []
    if isinstance(raw, str):
        items = [t for t in re.split(r"[,\s]+", raw) if t]
    elif isinstance(raw, (list, tuple)):
        items = [str(t) for t in raw if t is not None and str(t).strip()]
    else:
        items = [str(raw)]
    seen: dict[str, None] = {}
    for tag in items:
        seen.setdefault(tag.strip().lstrip("#"), None)
    return [t for t in seen if t]


def tags_line(body: str) -> tuple[list[str], int]:
    """The tags of the ``Tags: a, b`` line ``note_write`` writes when a source has no front matter, and
    where the text after the line (and its blank line) starts; ``([], 0)`` without one. Only that
    line's exact place counts (the module's docstring): a user's "Tags:" line elsewhere stays prose."""
    match = _TAGS_LINE.match(body)
    if match is None:
        return [], 0
    seen: dict[str, None] = {}
    for tag in match.group(1).split(","):
        seen.setdefault(tag.strip().lstrip("#").strip(), None)
    return [t for t in seen if t], match.end()


def note_tags(meta: dict[str, Any], body: str) -> list[str]:
    """A Markdown note's tags: its front matter's, then its ``Tags:`` line's (``tags_line``)."""
    return list(dict.fromkeys(front_matter_tags(meta) + tags_line(body)[0]))


def front_matter_time(meta: dict[str, Any], *keys: str) -> dt.datetime | None:
    """The first of ``keys`` in ``meta`` that holds a time (``dates.meta_time``), as UTC."""
    for key in keys:
        if (found := dates.meta_time(meta.get(key))) is not None:
            return found
    return None


def json_safe(value: Any) -> Any:
    """Front matter values as JSON-compatible data (dates become ISO strings)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
