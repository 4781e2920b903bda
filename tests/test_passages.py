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


def test_a_section_window_runs_from_the_chunks_heading_to_the_next_of_its_level() -> None:
    parts = ["# T\n\nintro\n\n", "## A\n\n" + "a " * 20 + "\n\n", "### A1\n\n" + "b " * 20 + "\n\n",
             "## B\n\n" + "c " * 200 + "\n"]
    body, starts = "".join(parts), [sum(map(len, parts[:i])) for i in range(len(parts))]
    spans = list(zip(starts, [*starts[1:], len(body)], strict=True))
    headings = ["T", "T > A", "T > A > A1", "T > B"]
    assert section_window(body, spans, headings, 1, 1000) == (starts[1], starts[3])  # with its subsection
    assert section_window(body, spans, headings, 2, 1000) == (starts[2], starts[3])
    assert section_window(body, spans, headings, 3, 1000) == (starts[3], len(body))
    assert section_window(body, spans, headings, 0, 1000) == (0, len(body))  # the title's: all of it
    assert section_window(body, spans, headings, 3, 100) == (starts[3], window_end(body, starts[3], 100))
    start, end = section_window(body, spans, headings, 1, 60)  # a section over the budget: around the chunk
    assert start == starts[1] and spans[1][1] <= end <= starts[1] + 60
    # a chunk that holds the next section's heading (a short section merged into one chunk) is kept whole
    merged = ["## A\n\nshort\n\n## B\n\nb text\n\n", "more " * 10 + "\n\n", "## C\n\nc\n"]
    body, starts = "".join(merged), [0, len(merged[0]), len(merged[0]) + len(merged[1])]
    spans = list(zip(starts, [*starts[1:], len(body)], strict=True))
    assert section_window(body, spans, ["A", "B", "C"], 0, 1000) == (0, starts[1])
    assert section_window(body, spans, ["A", "B", "C"], 1, 1000) == (body.index("## B"), starts[2])
    plain = "word " * 100  # no headings: the text around the chunk, cut at words
    spans = [(0, 100), (100, 200), (200, 300), (300, 400), (400, 500)]
    start, end = section_window(plain, spans, [""] * 5, 2, 150)
    assert start < 200 and end > 300 and end - start <= 150 and plain[start - 1] == plain[end - 1] == " "
