"""Text from elsewhere (a model's arguments, a tool's result) made safe to show at a terminal.

``shown(text)`` escapes what a terminal would act on instead of showing: C0 controls but newline and
tab (ESC starts colour, cursor and OSC sequences; BEL, backspace and carriage return rewrite the
line), DEL, the C1 controls (U+0080-U+009F; CSI is one of them) and the bidirectional controls that
reorder what is shown (U+202E makes ``txt.exe`` of ``exe.txt``). Each becomes ``\\xNN`` or ``\\uNNNN``,
so a person sees that it is there.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, *, lines: bool = True) -> str:
    """``text`` with every control and bidirectional character escaped; ``lines=False`` escapes newlines
    and tabs too (a one-line display)."""
    escaped = _UNSAFE.sub(_escape, text)
    if not lines:
        escaped = escaped.replace("\n", "\\n").replace("\t", "\\t")
    return escaped


__all__ = ["shown"]
