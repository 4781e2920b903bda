"""Where a document's chunks lie in its body, and the windows of the body that ``get`` returns.

Chunk texts are not verbatim slices of the body: the chunker re-joins blocks with blank lines,
strips lines and may lead a chunk with the tail of the one before (``chunking.overlap_tokens``).
It only ever changes whitespace, though, so every word of a chunk is a word of the body, in order
(or a piece of one: a run without spaces, Chinese or Japanese text, is cut at its sentence ends or,
when longer than a chunk, between grapheme clusters). A chunk's *span* is therefore found from its words:

- it begins where its own first words (those after any overlap carried from the previous chunk)
  appear in the body, at or after the end of the previous chunk's words, at the start of a word of
  the body, else (a chunk cut from inside a run) where they go on from there; chunk 0 begins at 0. The
  overlap is the longest run of the previous chunk's last words that the chunk starts with, at most
  ``overlap`` words (``chunking.overlap_tokens``: a word is at least one token), so repetitive text
  is not mistaken for one when the chunks were made without;
- it ends where the next chunk begins (the last one at the end of the body).

The spans are contiguous, never overlap and cover the whole body, so "the chunks in a window" are
the chunks whose spans overlap it. A chunk whose words cannot be found (a body changed behind the
store's back) gets an empty span at the previous chunk's start.

A window is a range ``[start, end)`` of character offsets (Python ``str`` offsets, so a code point is
never split). A window that stops before the end of the body ends on a paragraph break, else a line
break, else a space, else after CJK punctuation (。！？；，、 and their halfwidth forms), when one lies
in its last quarter; the next window starts exactly there, so concatenating the windows reproduces the
body. Where no break is near, the cut never falls inside a grapheme cluster either (``common.text``:
combining marks, emoji ZWJ sequences and flags, Hangul jamo, Thai and Lao AM, Indic conjuncts,
``\r\n``), unless one cluster is longer than the whole budget.

The window of a chunk (``section_window``) is its *section*: from the heading line the chunk's heading
path ends with to the next heading of the same or a higher level (Markdown ATX headings, outside fenced
code: what the chunker reads), and always the whole chunk; without a heading, the run of heading-less
chunks around it (the whole of a document without headings). A section longer than the budget is cut
to a window of the budget centred on the chunk, ending on breaks as above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from context_harness.common.text import cluster_cut, splits_cluster

ANCHOR_WORDS = 12  # words of a chunk that must match, in order, to place it
SEARCH_REACH = 4096  # characters past the expected start searched first (whitespace and dropped headings)
BOUNDARY_REACH = 4  # a window may end up to 1/4 of its budget early, to end on a break
BREAKS = ("\n\n", "\n", " ")  # where a window prefers to end, best first
CJK_BREAKS = ("。", "｡", "！", "？", "；", "，", "、", "､")  # after these where no space is near (CJK text has none)
_HEADING = re.compile(r"(#{1,6})[ \t]+(.*?)[ \t#]*")  # the chunker's (``ingest/chunking.py``), whole line
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines' breaks
_SPACE = re.compile(r"\s+")


def _overlap(previous: list[str], words: list[str], most: int) -> int:
    """How many leading ``words`` (at most ``most``) repeat the tail of ``previous`` (the chunker's overlap)."""
    if len(words) < 2 or most <= 0:
        return 0
    first, i = words[0], max(len(previous) - len(words) + 1, len(previous) - most, 0)
    while True:
        try:
            i = previous.index(first, i)
        except ValueError:
            return 0
        if previous[i:] == words[:len(previous) - i]:
            return len(previous) - i
        i += 1


def _matches_at(body: str, anchor: str, pos: int, inside: bool = False) -> bool:
    """Whether the words of ``anchor`` (single-spaced) are those of ``body`` at ``pos``, whatever
    whitespace separates them there; from the start to the end of words of the body, unless ``inside``
    (the anchor may begin and end inside runs without spaces)."""
    if pos > 0 and not inside and not body[pos - 1].isspace():
        return False
    flat = " ".join(body[pos:pos + 2 * len(anchor) + 64].split())
    return flat.startswith(anchor) and (inside or len(flat) == len(anchor) or flat[len(anchor)] == " ")


def _find(body: str, words: list[str], start: int, stop: int, inside: bool = False) -> int:
    """The first offset in ``[start, stop)`` where ``words`` begin (at a word's start, or anywhere
    with ``inside``), or -1."""
    anchor = " ".join(words)
    pos = body.find(words[0], start, stop)
    while pos != -1:
        if not inside and pos > 0 and not body[pos - 1].isspace():
            # Inside a word: go on after the next space, not one character on (a 200,000-character run
            # of "<" held the word at every offset: quadratic, 5 s for one feed entry).
            space = _SPACE.search(body, pos, stop)
            if space is None:
                return -1
            pos = body.find(words[0], space.end(), stop)
            continue
        if _matches_at(body, anchor, pos, inside):
            return pos
        pos = body.find(words[0], pos + 1, stop)
    return -1


def chunk_starts(body: str, texts: Iterable[str], overlap: int = 0, until: int | None = None) -> list[int]:
    """The start offset in ``body`` of each chunk (texts in index order); see the module docstring.
    With ``until``, stops after the first chunk starting past that offset (reading no further text)."""
    starts: list[int] = []
    previous: list[str] = []
    floor = 0  # where the previous chunk's own words end, at the earliest
    for text in texts:
        words = text.split()
        own = words[_overlap(previous, words, overlap):] if starts else words
        last = starts[-1] if starts else 0
        anchor = -1
        if own:
            reach = min(len(body), floor + len(text) + SEARCH_REACH)
            anchor = _find(body, own[:ANCHOR_WORDS], floor, reach)
            if anchor == -1:  # a chunk that starts inside a run without spaces (CJK text): where it goes on
                anchor = _find(body, own[:ANCHOR_WORDS], floor, reach, inside=True)
            if anchor == -1:
                anchor = _find(body, own[:ANCHOR_WORDS], last, len(body))
        starts.append(0 if not starts else anchor if anchor != -1 else last)
        if anchor != -1:
            floor = anchor + sum(map(len, own)) + len(own) - 1  # the length of the words, single-spaced
        previous = words
        if until is not None and starts[-1] > until:
            break
    return starts


def chunk_spans(body: str, texts: Sequence[str], overlap: int = 0) -> list[tuple[int, int]]:
    """``(start, end)`` of every chunk in ``body``: contiguous, covering the whole body."""
    return spans_of(chunk_starts(body, texts, overlap), len(body))


def spans_of(starts: Sequence[int], length: int) -> list[tuple[int, int]]:
    """The spans of chunks starting at ``starts`` (as ``chunk_starts`` found them) in a body of ``length``
    (none for a document without chunks: an empty or blank one)."""
    return list(zip(starts, [*starts[1:], length], strict=True)) if starts else []


def chunk_at(body: str, texts: Iterable[str], offset: int, overlap: int = 0) -> int | None:
    """The position (in ``texts``) of the chunk whose span holds ``offset``; None without chunks."""
    starts = chunk_starts(body, texts, overlap, until=offset)
    holding = [i for i, start in enumerate(starts) if start <= offset]
    return holding[-1] if holding else None


def _last_break(body: str, lo: int, hi: int) -> int:
    """The end of the best break (``BREAKS``, then ``CJK_BREAKS``) lying in ``[lo, hi)``, latest first; -1."""
    for separator in BREAKS:
        cut = body.rfind(separator, lo, hi)
        if cut != -1:
            return cut + len(separator)
    cut = max(body.rfind(mark, lo, hi) for mark in CJK_BREAKS)
    return cut + 1 if cut != -1 else -1


def _first_break(body: str, lo: int, hi: int) -> int:
    """The end of the best break lying in ``[lo, hi)``, earliest first; -1."""
    for separator in BREAKS:
        cut = body.find(separator, lo, hi)
        if cut != -1:
            return cut + len(separator)
    found = [cut for mark in CJK_BREAKS if (cut := body.find(mark, lo, hi)) != -1]
    return min(found) + 1 if found else -1


def window_end(body: str, start: int, max_chars: int) -> int:
    """The end of the window of at most ``max_chars`` characters from ``start``: the body's end when
    it fits, else a paragraph, line, word or CJK break in the last quarter, else the budget moved back
    out of any grapheme cluster it would split."""
    end = start + max_chars
    if end >= len(body):
        return len(body)
    cut = _last_break(body, max(start, end - max_chars // BOUNDARY_REACH), end)
    return cut if cut > start and not splits_cluster(body, cut) else cluster_cut(body, end, start)


def _snap_start(body: str, lo: int, limit: int) -> int:
    """Where a window meant to begin at ``lo`` begins: after the first break ending at or before
    ``limit`` (so it starts on a paragraph, a line or a word), else at ``lo`` moved on out of a
    grapheme cluster (not past ``limit``)."""
    cut = _first_break(body, lo, limit)
    if cut != -1:
        return cut
    while lo < limit and splits_cluster(body, lo):
        lo += 1
    return lo


def _snap_end(body: str, hi: int, limit: int) -> int:
    """Where a window meant to end at ``hi`` ends: after the last break lying at or after ``limit``,
    else at ``hi`` moved back out of a grapheme cluster (not below ``limit``)."""
    cut = _last_break(body, limit, hi)
    return cut if cut != -1 else cluster_cut(body, hi, limit)


def heading_lines(body: str, lo: int, hi: int, limit: int | None = None) -> list[tuple[int, int, str]]:
    """``(offset, level, title)`` of the Markdown headings whose lines begin in ``[lo, hi)``, outside
    fenced code (``lo`` is taken to lie outside a fence: a chunk's start is a block's); lines are read
    no further than ``limit``."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    limit = len(body) if limit is None else min(limit, len(body))
    pos = lo
    while pos < hi:
        breaks = _LINE_BREAK.search(body, pos, limit)
        stop = breaks.start() if breaks else limit
        line = body[pos:stop]
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence) \
                    and not line.strip()[len(marker.group(1)):].strip():
                fence = None
        elif marker:
            fence = marker.group(1)
        elif (heading := _HEADING.fullmatch(line)) is not None:
            found.append((pos, len(heading.group(1)), heading.group(2).strip()))
        if breaks is None:
            break
        pos = breaks.end()
    return found


def _run(headings: Sequence[str], k: int, first: int, last: int) -> tuple[int, int]:
    """The chunks around ``k`` (within ``first``..``last``) whose heading path is ``k``'s or under it
    (for a chunk without one: the chunks without one)."""
    path = headings[k]

    def under(other: str) -> bool:
        return other == path or (bool(path) and other.startswith(path + " > "))

    a, b = k, k
    while a > first and under(headings[a - 1]):
        a -= 1
    while b < last and under(headings[b + 1]):
        b += 1
    return a, b


def section_extent(body: str, spans: Sequence[tuple[int, int]], headings: Sequence[str], k: int,
                   first: int, last: int, stop: int) -> tuple[int, int]:
    """``[start, end)`` of chunk ``k``'s section, as far as the chunks ``first``..``last`` and the body
    up to ``stop`` tell (see the module docstring); it always holds the chunk's own span."""
    a, b = _run(headings, k, first, last)
    own_start, own_end = spans[k][0], min(spans[k][1], stop)
    start, end = spans[a][0], min(spans[b][1], stop)
    found = heading_lines(body, spans[a - 1][0] if a > first else start, end, stop)
    title = headings[k].rsplit(" > ", 1)[-1]
    limit: int | None = 6 if not headings[k] else None  # a heading-less run ends at any heading
    if headings[k]:
        own = [(pos, level) for pos, level, text in found if pos <= own_start and text == title]
        if own:
            start, limit = own[-1]
    if limit is not None:  # the next heading of the same or a higher level after the chunk's start
        end = next((pos for pos, level, _ in found if own_start < pos < end and level <= limit), end)
    return min(start, own_start), max(end, own_end)


def section_window(body: str, spans: Sequence[tuple[int, int]], headings: Sequence[str], k: int,
                   max_chars: int) -> tuple[int, int]:
    """The window for chunk ``k``: its section (``section_extent``) when it fits in ``max_chars``, else
    ``max_chars`` of it centred on the chunk; a chunk larger than the budget alone gives the window of
    ``max_chars`` from its start (``window_end``). Only the chunks and text within ``max_chars`` of
    the chunk's start are looked at (all a window can reach), so a store that reads just those
    (``search/windows.read_window``) finds the same window."""
    own_start, own_end = spans[k]
    if own_end - own_start > max_chars:
        return own_start, window_end(body, own_start, max_chars)
    reach_lo, stop = own_start - max_chars - 1, min(len(body), own_start + max_chars + 1)
    first = k  # the last chunk starting at or before reach_lo (the first when none does)
    while first > 0 and (reach_lo < 0 or spans[first][0] > reach_lo):
        first -= 1
    last = k
    while last + 1 < len(spans) and spans[last + 1][0] <= own_start + max_chars:
        last += 1
    start, end = section_extent(body, spans, headings, k, first, last, stop)
    if end - start <= max_chars:
        return start, end
    spare = max_chars - (own_end - own_start)
    lo = max(start, own_start - spare // 2)
    hi = min(end, lo + max_chars)
    lo = max(start, hi - max_chars)
    # each side may move inwards by up to half its margin (at most an eighth of the budget) to a break
    if lo > start:
        lo = _snap_start(body, lo, lo + min((own_start - lo) // 2, max_chars // 8))
    if hi < end:
        hi = _snap_end(body, hi, hi - min((hi - own_end) // 2, max_chars // 8))
    return lo, hi


__all__ = ["chunk_at", "chunk_spans", "chunk_starts", "cluster_cut", "heading_lines", "section_extent",
           "section_window", "spans_of", "splits_cluster", "window_end"]
