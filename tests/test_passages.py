"""Where chunks lie in a body, and where windows of it end (``search/passages.py``)."""

from __future__ import annotations

import pytest

from context_harness.common.passages import chunk_at, chunk_spans, section_window, window_end
from context_harness.ingest.chunking import chunk_markdown
from support.workspace import long_markdown

TRICKY = (
    "# Title\r\n\r\nFirst paragraph, with CRLF line ends.\r\nSecond line.\r\n\r\n"
    "## A heading alone\n## Another heading\n\n"
    + "A very long sentence that goes on and on " * 60 + ".\n\n"
    "```python\ndef f():\n    return 'x'\n```\n\n"
    "Short one. Then café, 日本語, 🙂 and the end.\n"
)


@pytest.mark.parametrize("body, max_tokens, overlap", [
    (TRICKY, 64, 0), (TRICKY, 64, 16), (long_markdown(40_000), 256, 0), (long_markdown(40_000), 96, 40),
])
def test_spans_cover_the_body_and_hold_their_chunks(body, max_tokens, overlap) -> None:
    chunks = chunk_markdown(body, max_tokens, overlap)
    spans = chunk_spans(body, [c.text for c in chunks], overlap)
    assert spans[0][0] == 0 and spans[-1][1] == len(body)
    assert all(a[1] == b[0] and a[0] <= a[1] for a, b in zip(spans, spans[1:], strict=False))
    for chunk, (start, end) in zip(chunks, spans, strict=True):
        own = chunk.text.split()
        # the chunk's last word, and its first one when there is no overlap, lie in its span
        assert own[-1] in body[start:end].split() or own[-1] in body[start:end]
        if not overlap:
            assert " ".join(own) in " ".join(body[start:end].split())


def test_chunk_at_names_the_chunk_holding_an_offset() -> None:
    body = long_markdown(30_000)
    texts = [c.text for c in chunk_markdown(body, 128)]
    spans = chunk_spans(body, texts)
    for k in (0, 5, len(spans) - 1):
        start, end = spans[k]
        assert chunk_at(body, texts, start) == k and chunk_at(body, texts, end - 1) == k
    assert chunk_at(body, [], 10) is None


def test_windows_end_on_a_paragraph_then_a_line_then_a_space() -> None:
    para = "aaaa bbbb\n" * 8 + "\n" + "cccc dddd\n" * 20
    assert window_end(para, 0, 100) == para.index("\n\n") + 2  # 80: the blank line within the last quarter
    lines = "aaaa bbbb\n" * 30
    assert window_end(lines, 0, 95) == 90  # after a line break
    spaces = "word " * 100
    assert window_end(spaces, 0, 52) == 50  # after a space
    solid = "x" * 500
    assert window_end(solid, 0, 52) == 52  # no break near: exactly the budget
    assert window_end(solid, 480, 52) == 500  # the rest fits


def test_paging_with_any_budget_reproduces_the_body() -> None:
    body = TRICKY * 3
    for budget in (1, 2, 7, 64, 1000):
        start, pieces = 0, []
        while start < len(body):
            end = window_end(body, start, budget)
            assert start < end <= start + budget
            pieces.append(body[start:end])
            start = end
        assert "".join(pieces) == body


def test_a_section_window_grows_by_whole_neighbours() -> None:
    body = "x" * 100
    spans = [(0, 10), (10, 40), (40, 50), (50, 90), (90, 100)]
    assert section_window(body, spans, 2, 10) == (40, 50)
    assert section_window(body, spans, 2, 45) == (10, 50)  # the next (40 wide) does not fit, the previous does
    assert section_window(body, spans, 2, 85) == (10, 90)
    assert section_window(body, spans, 2, 100) == (0, 100)
    assert section_window(body, spans, 3, 15) == (50, 65)  # a chunk over the budget: its first part
