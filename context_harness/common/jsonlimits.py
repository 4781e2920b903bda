"""JSON from outside, parsed with its nesting bounded.

``json.loads`` recurses once per level of arrays and objects: a 2 kB line nested 990 deep raises
``RecursionError`` (which no ``except ValueError`` catches) and 100,000 levels cost nothing to send.
``loads`` scans the text first, without recursion, and refuses a text nested deeper than
``max_depth`` with ``TooDeep`` before ``json`` sees it::

    value = jsonlimits.loads(line)                  # at most MAX_DEPTH levels
    value = jsonlimits.loads(reply, max_depth=128)  # a chat completion around arguments of 64

``TooDeep`` is a ``json.JSONDecodeError`` (so a ``ValueError``): code that already answers JSON it
cannot read answers this too; code that wants to name the limit catches ``TooDeep`` first. The scan
is linear: brackets inside strings do not count, and a text whose brackets number at most
``max_depth`` is not scanned at all (most messages).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

MAX_DEPTH = 64
"""How deeply JSON from a client or a model may nest (arrays and objects); no request needs more."""

# A string (escapes included), a run of openers or of closers, or a quote that opens no whole string
# (an unterminated string: ``json`` stops there, so the scan does too).
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{]+|[\]}]+|"', re.DOTALL)
_OPENERS = (ord("["), ord("{"))
_QUOTE = ord('"')
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 and -1 as signed bytes
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")


class TooDeep(json.JSONDecodeError):
    """JSON nested deeper than ``limit``; ``pos`` is the opening bracket past the limit."""

    def __init__(self, limit: int, doc: str, pos: int) -> None:
        super().__init__(f"nested more than {limit} levels deep", doc, pos)
        self.limit = limit


def explain(what: str, limit: int = MAX_DEPTH) -> str:
    """The words every rim refuses too deep JSON with: ``what`` names the text (``the message``)."""
    return (f"{what} is nested more than {limit} levels deep (arrays and objects; the limit is {limit}): "
            "send flatter JSON")


def deeper_than(text: str | bytes, limit: int) -> int | None:
    """The position (a character's in a ``str``, a byte's in ``bytes``) of the first opening bracket past
    ``limit`` levels of nesting, or None when the
    text nests at most ``limit`` deep (counted as ``json`` reads it: up to the end of its first value
    or an unterminated string)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") <= limit:
        return None
    if not _utf8(data):
        data = data.decode(json.detect_encoding(data), "replace").encode("utf-8", "surrogatepass")
    if _nesting(data) <= limit:
        return None
    pos = _scan(_TOKENS.finditer(data), limit)  # where, exactly (and whether: the estimate is an upper bound)
    if pos is not None and isinstance(text, str):  # a character's position, not a byte's
        pos = len(data[:pos].decode("utf-8", "surrogatepass"))
    return pos


def check(text: str | bytes, max_depth: int = MAX_DEPTH) -> None:
    """``TooDeep`` when ``text`` nests deeper than ``max_depth``."""
    pos = deeper_than(text, max_depth)
    if pos is not None:
        raise TooDeep(max_depth, text if isinstance(text, str) else "", pos)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)`` after ``check``: ``TooDeep`` past ``max_depth`` levels."""
    check(text, max_depth)
    return json.loads(text, **kwargs)


def _utf8(data: bytes) -> bool:
    """UTF-8 (or ASCII) JSON: a bracket or quote byte is that character, never part of another one."""
    return not data[:4].count(0) and not data.startswith((b"\xff\xfe", b"\xfe\xff"))


def _nesting(data: bytes) -> int:
    """An upper bound of ``data``'s nesting, at C speed: strings dropped (escaped backslashes and quotes
    first, then what lies between quote pairs, an unterminated string to the end), then the deepest
    running count of opening minus closing brackets."""
    if b'"' in data:
        if b"\\" in data:
            data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
        data = b"".join(data.split(b'"')[::2])
    steps = memoryview(data.translate(_STEPS, _NOT_BRACKETS)).cast("b")
    return max(itertools.accumulate(steps), default=0)


def _scan(tokens: Any, limit: int) -> int | None:
    depth = 0
    for token in tokens:
        first = token.group()[0]
        if first in _OPENERS:
            width = token.end() - token.start()
            if depth + width > limit:
                return token.start() + (limit - depth)
            depth += width
        elif first == _QUOTE:
            if token.end() - token.start() == 1:  # a string never closed: json's error is there
                return None
        else:
            depth -= token.end() - token.start()
            if depth <= 0:  # the first value is whole: json reads nothing nested after it
                return None
    return None


__all__ = ["MAX_DEPTH", "TooDeep", "check", "deeper_than", "explain", "loads"]
