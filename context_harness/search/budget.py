"""Answers within a token budget: ``search`` and ``get`` with ``max_tokens``.

The whole answer counts, as a client receives it: ``measure`` gives its estimated tokens (the Harness
passes ``answer_tokens``: the larger of the JSON payload, ``common.text.payload_tokens``, and the text
block rendered beside it, ``common.text.estimate_tokens``; a client shows the model one of the two).
A budget only ever shortens an answer, and never fails one: what does not fit is left out, and
``omitted`` says what.

**search.** An answer that fits is returned as it is. Otherwise it keeps the most results that fit
with their snippets cut to ``MIN_SNIPPET_CHARS`` and without ``LEAN_RESULT``'s fields (``version``, a
content hash of some 50 tokens, ``source_url`` and ``heading``: ``get`` returns them too); with that
many results, the longest snippets that fit (one cap for all, in steps of ``CAP_STEP`` characters, cut
at a word, ending in ``…``), then
those fields back if they still fit. When not even one result fits so, the first one without its
snippet; else the answer has none, and ``omitted.results`` says how many there were (should even that
not fit, the optional ``explain`` and ``indexing`` parts go too). The results kept are the first
ones, so the ranking is unchanged; ``omitted.fields`` names the fields left out.

**get.** An answer that fits is returned as it is. Otherwise the window ``windows.read`` chose is cut:
from its start (for a chunk's section, from the start of the sentence or line where the chunk begins,
when that lies further on), to the last sentence end or line end that fits; when not even one
sentence fits, to the last space (a run without spaces: between grapheme clusters); else the body is
empty. ``truncated``, ``range`` and ``next_offset`` then say where the text lies and where to read
on, ``omitted.body_chars`` how much of the window was cut. Rather than cut the body shorter than
``LEAN_BODY_CHARS``, ``LEAN_FIELDS`` are left out (``metadata``, ``version``, ``chunks``,
``source_url``: ``omitted.fields`` names them); what is left, the document's identity and where the
window lies, is the least an answer holds (some 150 tokens: ``max_tokens`` is at least
``models.MIN_MAX_TOKENS``).

The sizes searched (results, snippet cap, cut) are found by bisection, each try measured whole, so a
fitted answer is always within the budget whatever the measure counts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from context_harness.common.text import cluster_cut, estimate_tokens, payload_tokens, sentences
from context_harness.models import ChunkOut, DocumentOut, Omitted, SearchResponse, TextRange

MIN_SNIPPET_CHARS = 80  # a snippet is not cut shorter than this before results are dropped
CAP_STEP = 16  # snippet caps are tried in steps of this many characters
CHARS_PER_TOKEN = 4  # where a window's cut is tried first: about this many characters a token
OPTIONAL = ("explain", "indexing")  # what a search answer without results may leave out too
LEAN_RESULT: dict[str, Any] = {"version": None, "source_url": None, "heading": None}  # search drops these first
LEAN_BODY_CHARS = 400  # `get` drops LEAN_FIELDS rather than cut its body shorter than this
LEAN_FIELDS: dict[str, Any] = {"metadata": {}, "version": None, "chunks": [], "source_url": None}
ELLIPSIS = " …"

Measure = Callable[[dict[str, Any]], int]
"""Estimated tokens of an answer, from its JSON payload."""

_LINE_END = re.compile("\n")


def answer_tokens(render: Callable[[dict[str, Any]], str] | None = None) -> Measure:
    """The measure of an answer: its payload's tokens, or its rendered text's when ``render`` gives more."""

    def measure(payload: dict[str, Any]) -> int:
        size = payload_tokens(payload)
        return max(size, estimate_tokens(render(payload))) if render is not None else size

    return measure


def _tokens(answer: BaseModel, measure: Measure) -> int:
    return measure(answer.model_dump(mode="json"))


def _most(lo: int, hi: int, fits: Callable[[int], bool]) -> int | None:
    """The largest ``x`` in ``[lo, hi]`` with ``fits(x)`` (``fits`` true up to some point, then false);
    None when not even ``lo`` fits."""
    if hi < lo or not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _most_from(ends: Sequence[int], guess: int, fits: Callable[[int], bool]) -> int | None:
    """``_most`` over the indexes of ``ends`` (offsets, ascending), tried first at the end near ``guess``
    and then at ends twice as far each time, so that the sizes measured follow the answer's size, not
    the window's (a window of a million characters fitted into a thousand tokens)."""
    lo, hi = 0, bisect_right(ends, guess)
    while hi < len(ends) and fits(hi):
        lo, hi = hi, bisect_right(ends, 2 * ends[hi] - (ends[0] if ends else 0))
    return _most(lo, min(hi, len(ends)) - 1, fits)


# -- search --------------------------------------------------------------------------------------

def shorten(text: str, cap: int) -> tuple[str, int]:
    """``text`` cut to about ``cap`` characters at a word (ending in ``…``), and how many it lost."""
    if len(text) <= cap:
        return text, 0
    if cap <= 0:
        return "", len(text)
    cut = text.rfind(" ", 0, cap + 1)
    if cut <= cap // 2:  # no space near: a run without spaces, cut between grapheme clusters
        cut = cluster_cut(text, cap, 0)
    kept = text[:cut].rstrip()
    return kept + ELLIPSIS, len(text) - len(kept)


def fit_search(response: SearchResponse, max_tokens: int, measure: Measure) -> SearchResponse:
    """``response`` within ``max_tokens`` (the module docstring)."""
    payload = response.model_dump(mode="json")
    fitted = fit_search_payload(payload, max_tokens, measure)
    return response if fitted is payload else SearchResponse.model_validate(fitted)


def fit_search_payload(payload: dict[str, Any], max_tokens: int, measure: Measure) -> dict[str, Any]:
    """A search's JSON payload within ``max_tokens``: ``payload`` itself when it fits. The sizes are tried
    on plain dicts, so a payload with more than ``SearchResponse`` holds (results merged from several
    workspaces, each labelled) is fitted alike."""
    if measure(payload) <= max_tokens:
        return payload
    rows: list[dict[str, Any]] = payload["results"]
    longest = max((len(r.get("snippet") or "") for r in rows), default=0)
    floor = min(MIN_SNIPPET_CHARS, longest)

    def answer(n: int, cap: int, lean: bool) -> dict[str, Any]:
        kept, cut_chars = [], 0
        for row in rows[:n]:
            snippet, lost = shorten(row.get("snippet") or "", cap)
            cut_chars += lost
            kept.append(row | {"snippet": snippet} | (LEAN_RESULT if lean else {}))
        dropped = [name for name in LEAN_RESULT if lean and any(r.get(name) for r in rows[:n])]
        omitted = Omitted(results=len(rows) - n or None, snippet_chars=cut_chars or None, fields=dropped or None)
        return payload | {"results": kept, "omitted": omitted.model_dump(mode="json")}

    def fits(n: int, cap: int, lean: bool) -> bool:
        return measure(answer(n, cap, lean)) <= max_tokens

    n = _most(1, len(rows), lambda k: fits(k, floor, True))
    if n is None:  # not one result with a short snippet: the first without one, else none
        if rows and fits(1, 0, True):
            return answer(1, 0, True)
        empty = answer(0, 0, False)  # without its optional parts too when it does not fit with them
        return empty if measure(empty) <= max_tokens else {k: v for k, v in empty.items() if k not in OPTIONAL}
    steps = _most(1, -(-longest // CAP_STEP), lambda k: fits(n, max(k * CAP_STEP, floor), True))  # in steps
    cap = max((steps or 0) * CAP_STEP, floor)
    return answer(n, cap, not fits(n, cap, False))


# -- get -----------------------------------------------------------------------------------------

def breaks(body: str) -> list[int]:
    """Where a budget may end ``body``: after each sentence (``common.text.sentences``) and at each line end."""
    found = {m.start() for m in _LINE_END.finditer(body)}
    at = 0
    for text, separator in sentences(body):
        at += len(separator) + len(text)
        found.add(at)
    return sorted(p for p in found if 0 < p)


def _begin(body: str, cuts: Sequence[int], at: int) -> int:
    """The start of the sentence or line that holds ``at``, past the spaces before it."""
    k = bisect_right(cuts, at) - 1
    begin = cuts[k] if k >= 0 else 0
    while begin < at and body[begin].isspace():
        begin += 1
    return begin


def fit_document(doc: DocumentOut, max_tokens: int, measure: Measure, chunk: int | None = None) -> DocumentOut:
    """``doc`` (``get``'s answer; for ``chunk``, a chunk's section) within ``max_tokens`` (the module docstring)."""
    if _tokens(doc, measure) <= max_tokens:
        return doc
    offset = doc.range.start if doc.range is not None else 0
    total = doc.total_chars if doc.total_chars is not None else offset + len(doc.body)
    body, cuts = doc.body, breaks(doc.body)
    anchor = next((c.start for c in doc.chunks if c.index == chunk and c.start is not None), None)
    begin = _begin(body, cuts, anchor - offset) if anchor is not None and anchor > offset else 0

    def cut(end: int, lean: bool = False) -> DocumentOut:
        lo, hi = offset + begin, offset + end
        whole = lo == 0 and hi == total
        shown = [c if whole else c.model_copy(update={"text": ""}) for c in doc.chunks if _overlaps(c, lo, hi)]
        update: dict[str, Any] = {
            "body": body[begin:end], "chunks": shown, "truncated": not whole, "range": TextRange(start=lo, end=hi),
            "next_offset": hi if hi < total else None}
        dropped = [name for name in LEAN_FIELDS if getattr(doc, name)] if lean else []
        update |= {name: LEAN_FIELDS[name] for name in dropped}
        update["omitted"] = Omitted(body_chars=len(body) - (end - begin) or None, fields=dropped or None)
        return doc.model_copy(update=update)

    def fits(candidate: DocumentOut) -> bool:
        return _tokens(candidate, measure) <= max_tokens

    lean = not fits(cut(_word_end(body, begin, min(begin + LEAN_BODY_CHARS, len(body)))))
    ends = [p for p in cuts if p > begin]
    k = _most_from(ends, begin + max_tokens * CHARS_PER_TOKEN, lambda i: fits(cut(ends[i], lean)))
    if k is not None:
        return cut(ends[k], lean)
    stop = ends[0] if ends else len(body)  # not one sentence fits: a word of the first
    chars = _most(begin, stop, lambda e: fits(cut(_word_end(body, begin, e), lean)))
    return cut(_word_end(body, begin, chars) if chars is not None else begin, lean)


def _word_end(body: str, begin: int, end: int) -> int:
    """``end`` moved back to the space before the word it falls in; with no space after ``begin`` (a run
    without spaces), out of any grapheme cluster it would split."""
    if end >= len(body) or body[end].isspace():
        return end
    space = max(body.rfind(" ", begin, end), body.rfind("\n", begin, end))
    return space if space > begin else cluster_cut(body, end, begin)


def _overlaps(chunk: ChunkOut, lo: int, hi: int) -> bool:
    """Whether ``chunk``'s span meets ``[lo, hi)`` (an empty span counts as its one position)."""
    if chunk.start is None or chunk.end is None:
        return True
    return chunk.start < max(hi, lo + 1) and max(chunk.end, chunk.start + 1) > lo


__all__ = ["ELLIPSIS", "MIN_SNIPPET_CHARS", "Measure", "answer_tokens", "breaks", "fit_document", "fit_search",
           "fit_search_payload", "shorten"]

