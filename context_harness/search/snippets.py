"""Query-aware snippets, cut from a result's text in Python.

The words of the query are found by their indexed form (lowercased and stemmed, as the keyword index
sees them), so "collectors" in a document matches the query word "collector". Each query word
weighs its IDF: the window shown is the one holding the rarest query words, not the one where a
common word repeats most. A text without any query word gets its opening instead. A word found ``MAX_MATCHES`` times is
everywhere in the text (a long manual's own name, say): it says nothing about where the passage is,
so the window is placed by the other query words when the text has any. Prose is shown before code:
when the lines outside fenced code blocks hold every query word the text holds, the window is placed
among them (a how-to's shell transcript repeats the words the paragraph after it explains).

Finding words costs one ``str.find`` scan per query word and a cached stem per candidate word, so
snippets of a dozen results take well under a millisecond even for long documents.

In scripts written without spaces (Chinese, Japanese, Korean, Thai ...) a query term is a character
pair or a segmented word (``common/analysis.py``): it is found where it stands, inside its run, and a
snippet is cut there at most ``MAX_WIDEN`` characters from the matches, never inside a grapheme cluster.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from context_harness.common.analysis import UNSPACED_CHARS, has_unspaced
from context_harness.common.text import splits_cluster

MAX_TERMS = 12  # the rarest query words a snippet looks for
MIN_WEIGHT = 0.25  # ...each at least this fraction of the rarest one's weight ("a", "of" rarely are)
MAX_MATCHES = 32  # occurrences of one word considered
REPEAT_WEIGHT = 0.1  # a word already in the window adds this fraction of its weight again
MAX_WIDEN = 30  # characters a cut may move to reach a space (a run without spaces is cut anywhere)
_WORD_AT = re.compile(f"[^\\W_{UNSPACED_CHARS}]+")  # a word of a spaced script (combining marks: _word_end)
_UNSPACED = re.compile(f"[{UNSPACED_CHARS}]")
_SENTENCE_ENDS = (". ", "\n", "。", "！", "？")
_MARKUP = " \t\r\n#>*-_`"  # what may stand before a snippet's first word without hiding text
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)(.*)$", re.MULTILINE)


@dataclass
class Snippet:
    text: str
    start: int  # offset in the source text of the first word shown with a match (or 0)
    matched: bool


def _lowered(text: str) -> str:
    """``text`` lowercased with every offset kept (a few characters lowercase to two)."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(ch.lower()[:1] for ch in text)


def salient(weights: dict[str, float]) -> dict[str, float]:
    """The query words worth showing: the rarest ones, dropping those far more common than the rarest."""
    if not weights:
        return {}
    top = max(weights.values())
    ranked = sorted(weights.items(), key=lambda kv: -kv[1])[:MAX_TERMS]
    return {term: w for term, w in ranked if w >= MIN_WEIGHT * top}


def _word_end(text: str, pos: int) -> int:
    """Where the word of a spaced script starting at ``pos`` ends (its combining marks in it: a virama,
    a decomposed accent); ``pos`` when none starts there."""
    end = pos
    while (word := _WORD_AT.match(text, end)) or (end > pos and end < len(text)
                                                  and unicodedata.category(text[end])[0] == "M"):
        end = word.end() if word else end + 1
    return end


def _in_word(text: str, pos: int) -> bool:
    """Whether ``pos`` is inside a word of a spaced script (not at its start)."""
    before = text[pos - 1] if pos > 0 else " "
    return (before.isalnum() or unicodedata.category(before)[0] == "M") and not _UNSPACED.match(before)


def _unspaced_matches(lower: str, term: str) -> list[tuple[int, int, str]]:
    """Where a term of an unspaced script (a character pair, a Thai word) stands: found inside runs."""
    found: list[tuple[int, int, str]] = []
    pos = lower.find(term)
    while pos != -1 and len(found) < MAX_MATCHES:
        found.append((pos, pos + len(term), term))
        pos = lower.find(term, pos + 1)
    return found


def _matches(text: str, weights: dict[str, float], stem: Callable[[str], str | None]) -> list[tuple[int, int, str]]:
    """(start, end, term) of the words of ``text`` whose indexed form is a query term, in order."""
    lower = _lowered(text)
    found: list[tuple[int, int, str]] = []
    for term in weights:
        if has_unspaced(term):
            found.extend(_unspaced_matches(lower, term))
            continue
        # A stem is a prefix of its words, give or take its last letter ("studi" <- "study").
        prefix = term[:-1] if len(term) >= 3 else term
        pos = lower.find(prefix)
        count = 0
        while pos != -1 and count < MAX_MATCHES:
            if _in_word(lower, pos):
                pos = lower.find(prefix, pos + 1)  # inside a longer word
                continue
            end = _word_end(lower, pos)
            if end > pos and stem(lower[pos:end]) == term:
                found.append((pos, end, term))
                count += 1
            pos = lower.find(prefix, max(end, pos + 1))
    found.sort()
    return found


def _code_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of the fenced code blocks of ``text``. A chunk may begin inside one: when its first
    fence is bare (no info string) and the fences are odd in number, the text before it is code."""
    fences = [(m.start(), m.end(), bool(m.group(1).strip())) for m in _FENCE.finditer(text)]
    spans: list[tuple[int, int]] = []
    if len(fences) % 2 and not fences[0][2]:
        spans.append((0, fences[0][1]))
        fences = fences[1:]
    for (start, _, _), (_, end, _) in zip(fences[::2], fences[1::2], strict=False):
        spans.append((start, end))
    if len(fences) % 2:  # an opened block the text ends inside
        spans.append((fences[-1][0], len(text)))
    return spans


def _prose(matches: list[tuple[int, int, str]], text: str) -> list[tuple[int, int, str]]:
    """The matches outside code blocks, when they hold every term of ``matches``; else ``matches``."""
    spans = _code_spans(text) if "```" in text or "~~~" in text else []
    if not spans:
        return matches
    starts = [a for a, _ in spans]  # in order, not overlapping: the span before a match is the only one to ask
    outside = [m for m in matches if (k := bisect_right(starts, m[0]) - 1) < 0 or m[0] >= spans[k][1]]
    if outside and len(outside) < len(matches) and {m[2] for m in outside} == {m[2] for m in matches}:
        return outside
    return matches


def _best_window(matches: list[tuple[int, int, str]], weights: dict[str, float], chars: int) -> tuple[int, int]:
    """Indexes [i, j) of the matches inside the ``chars``-wide window worth the most."""
    best = (0, 1)
    best_score = -1.0
    for i, (start, _, _) in enumerate(matches):
        seen: set[str] = set()
        score = 0.0
        j = i
        while j < len(matches) and matches[j][1] - start <= chars:
            term = matches[j][2]
            score += weights[term] * (REPEAT_WEIGHT if term in seen else 1.0)
            seen.add(term)
            j += 1
        if score > best_score + 1e-9:
            best, best_score = (i, max(j, i + 1)), score
    return best


def _widened(text: str, start: int, end: int) -> tuple[int, int]:
    """``start`` and ``end`` moved out to the spaces around the words they fall in (at most
    ``MAX_WIDEN`` characters; in a run without spaces, where they stand), then out of any grapheme
    cluster they would split."""
    floor, ceiling = max(start - MAX_WIDEN, 0), min(end + MAX_WIDEN, len(text))
    while start > floor and not text[start - 1].isspace() and not _UNSPACED.match(text[start - 1]):
        start -= 1
    while end < ceiling and not text[end].isspace() and not _UNSPACED.match(text[end]):
        end += 1
    while start > 0 and splits_cluster(text, start):
        start -= 1
    while end < len(text) and splits_cluster(text, end):
        end += 1
    return start, end


def _cut(text: str, start: int, end: int) -> str:
    """``text[start:end]`` widened to whole words, whitespace collapsed, with ellipses where cut."""
    start, end = _widened(text, start, end)
    body = " ".join(text[start:end].split())
    if not text[:start].strip():
        body = body.lstrip("#> ")  # a heading or quote marker, not words
    return ("… " if text[:start].strip(_MARKUP) else "") + body + (" …" if text[end:].strip(_MARKUP) else "")


def lead(text: str, chars: int) -> str:
    """The opening of ``text``: about ``chars`` characters, cut at a word boundary (collapsing the
    spaces of its head only, not of a whole long document)."""
    short = " ".join(text[:chars * 4].split())
    if len(short) <= chars:  # a short text, or a head of mostly whitespace
        short = " ".join(text.split())
        if len(short) <= chars:
            return short
    cut = short.rfind(" ", 0, chars)
    if cut <= chars // 2:  # no space near the end (a run without spaces): cut between grapheme clusters
        cut = chars
        while cut > 0 and splits_cluster(short, cut):
            cut -= 1
    return short[:cut] + " …"


def make_snippet(text: str, weights: dict[str, float], stem: Callable[[str], str | None], chars: int) -> Snippet:
    """The ``chars``-wide passage of ``text`` that shows the most (rarest) query words. ``weights``:
    the query words to look for (see ``salient``) with their IDF."""
    matches = _matches(text, weights, stem) if weights and text else []
    if not matches:
        return Snippet(lead(text, chars), 0, False)
    if len(matches) > MAX_MATCHES:  # else no word can have been found MAX_MATCHES times
        counts = Counter(term for _, _, term in matches)
        placing = [m for m in matches if counts[m[2]] < MAX_MATCHES]
        if placing and len(placing) < len(matches):
            matches = placing
    matches = _prose(matches, text)
    i, j = _best_window(matches, weights, chars)
    first, last = matches[i][0], matches[j - 1][1]
    # Spend what the matches leave of the budget on context: a little before, the rest after.
    spare = max(chars - (last - first), 0)
    start = max(first - min(spare // 4, 60), 0)
    sentence = max(text.rfind(end, start, first) for end in _SENTENCE_ENDS)
    if sentence != -1:
        start = sentence + 1  # begin at the sentence the first match is in, when it starts nearby
    end = min(max(last, start + chars), len(text))
    return Snippet(_cut(text, start, end).strip(), first, True)
