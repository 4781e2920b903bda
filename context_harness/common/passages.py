"""Where a document's chunks lie in its body, and the windows of the body that ``get`` returns.

Chunk texts are not verbatim slices of the body: the chunker re-joins blocks with blank lines,
strips lines and may lead a chunk with the tail of the one before (``chunking.overlap_tokens``).
It only ever changes whitespace, though, so every word of a chunk is a word of the body, in order.
A chunk's *span* is therefore found from its words:

- it begins where its own first words (those after any overlap carried from the previous chunk)
  appear in the body, at or after the end of the previous chunk's words; chunk 0 begins at 0. The
  overlap is the longest run of the previous chunk's last words that the chunk starts with, at most
  ``overlap`` words (``chunking.overlap_tokens``: a word is at least one token), so repetitive text
  is not mistaken for one when the chunks were made without;
- it ends where the next chunk begins (the last one at the end of the body).

The spans are contiguous, never overlap and cover the whole body, so "the chunks in a window" are
the chunks whose spans overlap it. A chunk whose words cannot be found (a body changed behind the
store's back) gets an empty span at the previous chunk's start.

A window is a range ``[start, end)`` of character offsets (Python ``str`` offsets, so a character is
never split). A window that stops before the end of the body ends on a paragraph break, else a line
break, else a space, when one lies in its last quarter; the next window starts exactly there, so
concatenating the windows reproduces the body.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

ANCHOR_WORDS = 12  # words of a chunk that must match, in order, to place it
SEARCH_REACH = 4096  # characters past the expected start searched first (whitespace and dropped headings)
BOUNDARY_REACH = 4  # a window may end up to 1/4 of its budget early, to end on a break


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


def _matches_at(body: str, anchor: str, pos: int) -> bool:
    """Whether the words of ``anchor`` (single-spaced) are those of ``body`` at ``pos``, whatever
    whitespace separates them there."""
    if pos > 0 and not body[pos - 1].isspace():
        return False
    flat = " ".join(body[pos:pos + 2 * len(anchor) + 64].split())
    return flat.startswith(anchor) and (len(flat) == len(anchor) or flat[len(anchor)] == " ")


def _find(body: str, words: list[str], start: int, stop: int) -> int:
    """The first offset in ``[start, stop)`` where ``words`` begin, or -1."""
    anchor = " ".join(words)
    pos = body.find(words[0], start, stop)
    while pos != -1:
        if _matches_at(body, anchor, pos):
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
            anchor = _find(body, own[:ANCHOR_WORDS], floor, min(len(body), floor + len(text) + SEARCH_REACH))
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


def window_end(body: str, start: int, max_chars: int) -> int:
    """The end of the window of at most ``max_chars`` characters from ``start``: the body's end when
    it fits, else a paragraph, line or word break in the last quarter, else exactly the budget."""
    end = start + max_chars
    if end >= len(body):
        return len(body)
    earliest = end - max_chars // BOUNDARY_REACH
    for separator in ("\n\n", "\n", " "):
        cut = body.rfind(separator, earliest, end)
        if cut != -1 and cut + len(separator) > start:
            return cut + len(separator)
    return end


def section_window(body: str, spans: Sequence[tuple[int, int]], k: int, max_chars: int) -> tuple[int, int]:
    """The window for chunk ``k``: its span, widened by whole neighbouring chunks (the next one, then
    the previous one, in turn) while the budget allows. A chunk larger than the budget alone gives
    the window of ``max_chars`` from its start (``window_end``)."""
    start, end = spans[k]
    if end - start > max_chars:
        return start, window_end(body, start, max_chars)
    lo, hi = k, k
    grew = True
    while grew:
        grew = False
        if hi + 1 < len(spans) and spans[hi + 1][1] - start <= max_chars:
            hi += 1
            end = spans[hi][1]
            grew = True
        if lo > 0 and end - spans[lo - 1][0] <= max_chars:
            lo -= 1
            start = spans[lo][0]
            grew = True
    return start, end


__all__ = ["chunk_at", "chunk_spans", "chunk_starts", "section_window", "spans_of", "window_end"]
