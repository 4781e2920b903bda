"""Text in any script: where a cut may fall (grapheme clusters), where a sentence ends, how many
tokens a text makes. The chunker, ``get``'s windows and the agent runs' budgets all ask here.

**Grapheme clusters.** A cut (a window's end, a chunk's piece of a run without spaces) never falls
inside a user-perceived character, Unicode's extended grapheme cluster (UAX #29): not inside ``\\r\\n``,
not before a combining or spacing mark, a variation selector, a skin-tone modifier, a tag character,
a zero-width (non-)joiner or Thai/Lao AM, not after a zero-width joiner (emoji ZWJ sequences) or a
prepended concatenation mark (Arabic number signs), not between the jamo of a Hangul syllable, not
inside an Indic conjunct (a consonant, a virama, a consonant: Devanagari, Bengali, Gujarati, Oriya,
Telugu, Malayalam) and not between the two regional indicators of a flag. The rules are those of
the standard read from ``unicodedata`` and a few code point ranges, checked against the ``regex``
module's ``\\X`` in the tests; they are asked only at a candidate cut, so they cost nothing a body's
length would notice. They never allow a cut the standard forbids; after a zero-width joiner they keep
what the standard would part (a joiner before a letter), which only moves a cut one character back.

**Sentence ends.** Latin-style sentences end at ``.``, ``!`` or ``?`` followed by space and a capital
(or digit, quote, bracket); Chinese and Japanese ones at ``。！？`` and their halfwidth and fullwidth
kin, with no space after them, closing quotes and brackets kept with the sentence they close.

**Token estimates** (``estimate_tokens``): every run of ASCII letters, every run of digits and every
other character that is not a space is a token; a letter run of n >= 7 adds (n - 4) // 3 pieces, a
digit run of n >= 3 adds (n - 1) // 2; combining marks add nothing (they belong to the character
before them, and WordPiece strips them). So a Han, kana or Hangul character is one token, which is
what the bundled MiniLM tokenizer makes of Chinese (0.996 real tokens per estimated one on XQuAD zh)
and an upper bound for multilingual-e5's (0.77). Calibrated against the MiniLM WordPiece tokenizer on
SciFact: the real count stays within 7 % above the estimate. It is computed with
``bytes.translate``/``split`` (C speed) on an ASCII stand-in of the text. ``payload_tokens`` is the
same estimate of a JSON payload as a client receives it (compact, non-ASCII unescaped): every quote,
colon, comma and bracket is a token, which errs high against the BPE tokenizers of chat models. It is
what ``max_tokens`` on ``search`` and ``get`` (``search/budget.py``) measures.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

# -- token estimates -----------------------------------------------------------------------------

_LETTERS = bytes(0x61 if (65 <= i <= 90 or 97 <= i <= 122) else 0x20 for i in range(256))
_DIGITS = bytes(0x30 if 48 <= i <= 57 else 0x20 for i in range(256))
_NOT_SINGLE = bytes(i for i in range(128) if chr(i).isalnum() or chr(i).isspace())
_LETTER_EXTRA = [(n - 4) // 3 if n >= 7 else 0 for n in range(1 << 12)]
_DIGIT_EXTRA = [(n - 1) // 2 if n >= 3 else 0 for n in range(1 << 12)]
# non-ASCII code point -> " " (space), "0" (digit), "" (a combining mark: nothing) or "." (other)
_STAND_IN: dict[int, str] = {}


def _stand_in_of(ch: str) -> str:
    if ch.isspace():
        return " "
    if ch.isdecimal():
        return "0"
    return "" if unicodedata.category(ch) in ("Mn", "Me") else "."


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _stand_in_match(found: re.Match[str]) -> str:
    ch = found.group()
    stand_in = _STAND_IN.get(ord(ch))
    if stand_in is None:
        stand_in = _STAND_IN[ord(ch)] = _stand_in_of(ch)
    return stand_in


def _ascii_stand_in(text: str) -> str:
    """``text`` with each non-ASCII character replaced by an ASCII one of the same token class (text with
    a few of them, such as JSON with an ellipsis: one by one, five times faster than the table)."""
    if len(text.encode("utf-8", "surrogatepass")) - len(text) < len(text) // 8:
        return _NON_ASCII.sub(_stand_in_match, text)
    return _table_stand_in(text)


def _table_stand_in(text: str) -> str:
    """``_ascii_stand_in`` through one translation table (faster where most characters are not ASCII)."""
    table = {}
    for ch in set(text):
        code = ord(ch)
        if code > 127:
            stand_in = _STAND_IN.get(code)
            if stand_in is None:
                stand_in = _STAND_IN[code] = _stand_in_of(ch)
            table[code] = stand_in
    return text.translate(table)


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see the module docstring): the chunker's sizes and, where a chat
    endpoint does not count them, an agent run's."""
    if not text.isascii():
        text = _ascii_stand_in(text)
    raw = text.encode("ascii")
    words = raw.translate(_LETTERS).split()
    numbers = raw.translate(_DIGITS).split()
    n = len(words) + len(numbers) + len(raw.translate(None, _NOT_SINGLE))
    try:
        return (n + sum(map(_LETTER_EXTRA.__getitem__, map(len, words)))
                + sum(map(_DIGIT_EXTRA.__getitem__, map(len, numbers))))
    except IndexError:  # a run of 4,096 letters or digits or more
        return (n + sum((len(w) - 4) // 3 for w in words if len(w) >= 7)
                + sum((len(d) - 1) // 2 for d in numbers if len(d) >= 3))


def payload_tokens(payload: Any) -> int:
    """Estimated tokens of ``payload`` as compact JSON with non-ASCII text as is (the module docstring)."""
    return estimate_tokens(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


# -- sentence ends -------------------------------------------------------------------------------

#: Ends of a Chinese or Japanese sentence: 。！？ and their halfwidth and fullwidth kin (｡ ． ‼ ⁇ ⁈ ⁉).
CJK_SENTENCE_ENDS = "。｡．！？‼⁇⁈⁉"
#: Closing quotes and brackets that stay with the sentence before them.
CJK_CLOSERS = "」』）】〕〗〙〛》〉”’\"')］｝｣"
_ENDS, _CLOSE = re.escape(CJK_SENTENCE_ENDS), re.escape(CJK_CLOSERS)
_LATIN_BREAK = r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])"
#: Where one sentence ends and the next begins; the match is the space between them (empty after
#: a CJK end with no space after it).
SENTENCE_BREAK = re.compile(
    _LATIN_BREAK
    + rf"|(?:(?<=[{_ENDS}])|(?<=[{_ENDS}][{_CLOSE}])|(?<=[{_ENDS}][{_CLOSE}]{{2}}))(?![{_CLOSE}0-9０-９])\s*(?=\S)")
_LATIN_SENTENCE_BREAK = re.compile(_LATIN_BREAK)  # text without a CJK end: the same, faster


def sentences(text: str) -> list[tuple[str, str]]:
    """``(sentence, separator before it)`` for each sentence of ``text`` (the first one's separator is
    ""); joined back with their separators they give ``text`` again."""
    out: list[tuple[str, str]] = []
    start, separator = 0, ""
    cjk = not text.isascii() and any(end in text for end in CJK_SENTENCE_ENDS)
    for found in (SENTENCE_BREAK if cjk else _LATIN_SENTENCE_BREAK).finditer(text):
        if found.start() > start:
            out.append((text[start:found.start()], separator))
            start, separator = found.end(), found.group()
    if start < len(text) or not out:
        out.append((text[start:], separator))
    return out


# -- grapheme clusters ---------------------------------------------------------------------------

_ZWJ, _ZWNJ = "\u200d", "\u200c"
# Prepend (GB9b): characters that join the one after them.
_PREPEND = ((0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
            (0x0D4E, 0x0D4E), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x111C2, 0x111C3), (0x1193F, 0x1193F),
            (0x11941, 0x11941), (0x11A3A, 0x11A3A), (0x11A84, 0x11A89), (0x11D46, 0x11D46), (0x11F02, 0x11F02))
# Indic conjuncts (GB9c): the virama that links two consonants, by script block.
_LINKERS = {0x094D: 0x0900, 0x09CD: 0x0980, 0x0ACD: 0x0A80, 0x0B4D: 0x0B00, 0x0C4D: 0x0C00, 0x0D4D: 0x0D00}


def _extends(ch: str) -> bool:
    """Whether ``ch`` belongs to the cluster of the character before it (Extend, SpacingMark, ZWJ)."""
    code = ord(ch)
    if code < 0x0300:
        return False
    return (unicodedata.category(ch) in ("Mn", "Me", "Mc") or ch in (_ZWJ, _ZWNJ) or code in (0x0E33, 0x0EB3)
            or 0xFE00 <= code <= 0xFE0F or 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F
            or 0xE0100 <= code <= 0xE01EF or 0xFF9E <= code <= 0xFF9F)


def _prepend(ch: str) -> bool:
    code = ord(ch)
    return 0x0600 <= code and any(lo <= code <= hi for lo, hi in _PREPEND)


def _hangul(ch: str) -> str:
    """The Hangul syllable type of ``ch``: "L", "V", "T", "LV", "LVT" or ""."""
    code = ord(ch)
    if code < 0x1100:
        return ""
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    return ""


_HANGUL_JOINS = {("L", "L"), ("L", "V"), ("L", "LV"), ("L", "LVT"), ("LV", "V"), ("LV", "T"), ("V", "V"),
                 ("V", "T"), ("LVT", "T"), ("T", "T")}


def _conjunct(body: str, pos: int) -> bool:
    """Whether ``body[pos]``, a consonant, follows a linking virama of its own script (GB9c)."""
    after = ord(body[pos])
    block = after & ~0x7F
    if block not in _LINKERS.values() or unicodedata.category(body[pos]) != "Lo":
        return False
    i = pos - 1
    while i >= 0 and pos - i <= 8 and _extends(body[i]):  # the marks between: the virama among them
        if _LINKERS.get(ord(body[i])) == block:
            return True
        i -= 1
    return False


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def splits_cluster(body: str, pos: int) -> bool:
    """Whether a cut at ``pos`` falls inside a grapheme cluster (see the module docstring)."""
    if pos <= 0 or pos >= len(body):
        return False
    before, after = body[pos - 1], body[pos]
    if before.isascii() and after.isascii():
        return before == "\r" and after == "\n"
    if _extends(after) or before == _ZWJ or _prepend(before):
        return True
    if (_hangul(before), _hangul(after)) in _HANGUL_JOINS or _conjunct(body, pos):
        return True
    if _regional(before) and _regional(after):
        run = pos - 1
        while run > 0 and _regional(body[run - 1]):
            run -= 1
        return (pos - run) % 2 == 1  # an odd count before: the cut parts a flag's pair
    return False


def cluster_cut(body: str, pos: int, floor: int) -> int:
    """``pos``, or the nearest cut before it (not below ``floor``) outside a grapheme cluster; ``pos``
    itself when the cluster reaches back past ``floor`` (one cluster larger than the whole window)."""
    cut = pos
    while cut > floor and splits_cluster(body, cut):
        cut -= 1
    return cut if cut > floor else pos


__all__ = ["CJK_CLOSERS", "CJK_SENTENCE_ENDS", "SENTENCE_BREAK", "cluster_cut", "estimate_tokens", "payload_tokens",
           "sentences", "splits_cluster"]
