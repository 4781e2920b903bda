"""Small edits of the user's config file as text, so their comments and layout stay: append a
table, remove one. The result is parsed before it is written (a broken file is never left behind)."""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from pathlib import Path

from context_harness.errors import BadRequest, ConfigError

HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _headers(text: str) -> list[tuple[int, str]]:
    return [(i, m.group(1).replace('"', "").replace(" ", "")) for i, line in enumerate(text.splitlines())
            if (m := HEADER.match(line))]


def has_table(text: str, key: str) -> bool:
    return any(found == key or found.startswith(key + ".") for _, found in _headers(text))


def append_table(path: Path, key: str, block: str) -> None:
    """Append ``block`` (which opens with ``[key]``); ``BadRequest`` when ``[key]`` is there already."""
    text = _read(path)
    if has_table(text, key):
        raise BadRequest(f"{path} already has [{key}]; edit it there, or remove it first")
    joined = text.rstrip("\n") + ("\n\n" if text.strip() else "") + block.rstrip("\n") + "\n"
    _write(path, joined)


def remove_table(path: Path, key: str) -> bool:
    """Remove ``[key]`` and its sub-tables (up to the next other table); False when it is not there."""
    text = _read(path)
    lines = text.splitlines(keepends=True)
    headers = _headers(text)
    spans = []
    for n, (start, found) in enumerate(headers):
        if found == key or found.startswith(key + "."):
            end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
            spans.append((start, end))
    if not spans:
        return False
    drop = {i for start, end in spans for i in range(start, end)}
    _write(path, "".join(line for i, line in enumerate(lines) if i not in drop))
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.__class__.__name__})") from None


def _write(path: Path, text: str) -> None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: the edit would leave invalid TOML ({exc}); nothing written") from None
    fd, tmp = tempfile.mkstemp(prefix=".ctx-config-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["append_table", "has_table", "remove_table"]
