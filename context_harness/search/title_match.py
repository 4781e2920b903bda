"""A title that holds the whole query: hybrid results whose title contains every analysed word of the
query gain ``[retrieval] title_match`` on their fused score.

A note titled "Sourdough bread" is what ``sourdough`` asks for, even when a short note that mentions
sourdough once outscores it on both BM25 and cosine. Long questions never fit in a title, so on SciFact
(claims as queries) the bonus never fires: train nDCG@10 is unchanged at every weight tried.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from context_harness.common.analysis import UNDETERMINED, has_unspaced, index_terms
from context_harness.search.fusion import Fused

_WORD = re.compile(r"\w+")


def title_terms(title: str, stem: Callable[[str], str | None]) -> set[str]:
    """The indexed forms of a title's words (a run of an unspaced script: its character pairs or words,
    as the index holds them whatever the language)."""
    out: set[str] = set()
    for word in _WORD.findall(title):
        if has_unspaced(word):
            out.update(index_terms(word, UNDETERMINED))
        elif form := stem(word):
            out.add(form)
    return out


def lift_titled(fused: list[Fused], query_words: Sequence[Collection[str]], titles: dict[str, str | None],
                stem: Callable[[str], str | None], bonus: float) -> tuple[list[Fused], set[str]]:
    """``fused`` with ``bonus`` added to each result whose title holds every query word (in any of its
    forms: ``analysis.query_words``), re-sorted (best first; ties keep their fused order), and the ids
    lifted. No query words or no bonus: ``fused`` as it was."""
    wanted = [set(forms) for forms in query_words if forms]
    if not wanted or bonus <= 0:
        return fused, set()

    def holds_query(title: str | None) -> bool:
        terms = title_terms(title or "", stem)
        return all(forms & terms for forms in wanted)

    lifted = {item.doc_id for item in fused if holds_query(titles.get(item.doc_id))}
    if not lifted:
        return fused, lifted
    scored = [item._replace(score=item.score + bonus) if item.doc_id in lifted else item for item in fused]
    return sorted(scored, key=lambda item: -item.score), lifted
