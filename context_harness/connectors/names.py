"""File names as document ids: any name the OS allows, as valid UTF-8 text, reversibly.

A path relative to a source's root becomes its ``source_id`` one ``/``-separated part at a time:

- a part that is valid UTF-8 stays as it is (the ids of existing documents never change), unless it
  holds a backslash followed by ``x`` and two hex digits (``\\x41``);
- any other part is *escaped*: each byte that is not valid UTF-8 becomes ``\\xNN`` (two lowercase hex
  digits) and each backslash becomes ``\\x5c``; every other character stays.

So ``café.md`` in Latin-1 (bytes ``63 61 66 e9 2e 6d 64``) is indexed as ``caf\\xe9.md``, and a valid
name that merely looks escaped (``caf\\xe9.md`` typed literally) as ``caf\\x5cxe9.md``. The mapping is
one-to-one: no two names on disk share an id, and ``unescape_name`` gives back the name
(``os.fsencode`` of it gives the raw bytes). Python hands undecodable bytes over as surrogates
(``surrogateescape``); those are what ``escape_name`` replaces.
"""

from __future__ import annotations

import os
import re

_LOOKS_ESCAPED = re.compile(r"\\x[0-9a-fA-F]{2}")
_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _escape_part(part: str) -> str:
    raw = os.fsencode(part)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")
    else:
        if not _LOOKS_ESCAPED.search(text):
            return text
    out = []
    for char in text:
        if "\udc80" <= char <= "\udcff":
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif char == "\\":
            out.append("\\x5c")
        else:
            out.append(char)
    return "".join(out)


def _unescape_part(part: str) -> str:
    if not _LOOKS_ESCAPED.search(part):
        return part
    raw = bytearray()
    position = 0
    for match in _ESCAPE.finditer(part):
        raw += part[position:match.start()].encode("utf-8", "surrogatepass")
        raw.append(int(match.group(1), 16))
        position = match.end()
    raw += part[position:].encode("utf-8", "surrogatepass")
    return os.fsdecode(bytes(raw))


def escape_name(rel: str) -> str:
    """The ``source_id`` of the OS path ``rel`` (relative, ``/``-separated; undecodable bytes as
    surrogates): valid UTF-8 text, equal to ``rel`` for every ordinary name (see the module doc)."""
    return "/".join(_escape_part(part) for part in rel.split("/"))


def unescape_name(source_id: str) -> str:
    """The OS path whose ``escape_name`` is ``source_id``; ``os.fsencode`` of it gives the raw bytes."""
    return "/".join(_unescape_part(part) for part in source_id.split("/"))
