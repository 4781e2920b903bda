"""Markdown front matter and titles."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml

from context_harness.common import timestamps

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SETEXT_H1 = re.compile(r"^(\S[^\n]*)\n=+[ \t]*$", re.MULTILINE)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Return (front matter mapping, body). Invalid or non-mapping YAML leaves the text untouched."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1) or "") or {}
    except yaml.YAMLError:
        return {}, text
    if not isinstance(data, dict):
        return {}, text
    return {str(k): v for k, v in data.items()}, text[match.end():]


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


def front_matter_time(meta: dict[str, Any], *keys: str) -> dt.datetime | None:
    for key in keys:
        value = meta.get(key)
        if isinstance(value, dt.datetime):
            return timestamps.as_utc(value)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=timestamps.UTC)
        if isinstance(value, str):
            try:
                return timestamps.parse(value)
            except ValueError:
                continue
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
