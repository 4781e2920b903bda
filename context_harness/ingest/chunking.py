"""Markdown-aware chunking.

A document is split into blocks (headings, paragraphs, fenced code), then blocks are packed into
chunks of at most ``max_tokens`` estimated tokens. A heading starts a new chunk once the current
one holds a fair amount of text; fenced code stays whole where it fits; oversized blocks split at
sentence, then line, then word boundaries, and a word (a run without spaces: Chinese or Japanese
text, a long identifier) larger than a chunk at grapheme cluster boundaries. Sentences end where
``common.text.sentences`` says: at ``. ! ?`` before a space and a capital, and at ``。！？`` and their
kin with no space after them. Each chunk carries the heading path it starts under.

Token counts are estimated without a tokenizer (fast, deterministic: ``common.text.estimate_tokens``).
The estimate is calibrated against the bundled MiniLM WordPiece tokenizer on SciFact: the real count
stays within 7 % above the estimate, so the default size keeps every chunk inside the model's
256-token window.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from context_harness.common.text import cluster_cut, estimate_tokens, sentences

# 4: chunks carry where their span begins in the body; 5: CJK sentence ends, runs without spaces cut
CHUNKER_VERSION = 5
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # what str.splitlines breaks at


def embedding_text(title: str | None, heading: str, text: str) -> str:
    """What the embedder sees for a chunk: its text, led by the document title and heading path when
    the chunk does not already start with them (a chunk from the middle of a document otherwise loses
    what it is about). Chunks are content-addressed by the hash of this text."""
    context = [part for part in [title or "", *heading.split(" > ")] if part.strip()]
    context = list(dict.fromkeys(context))
    first_line = text.lstrip().split("\n", 1)[0]
    context = [part for part in context if part not in first_line]
    return " > ".join(context) + "\n\n" + text if context else text


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Chunk:
    index: int
    text: str
    heading_path: list[str] = field(default_factory=list)



@dataclass
class _Block:
    text: str
    tokens: int
    heading_path: list[str]
    kind: str  # "heading", "text", "code"
    pieces: list[Piece] | None = None  # sentences with their estimates, when measured that way
    group: int | None = None  # pieces of one split block share a group; one is joined to the one
    joiner: str = "\n\n"  # before it with its ``joiner`` ("" where the body had no space between them)


Piece = tuple[str, int, str]  # a sentence (or line, or word), its estimate, the joiner before it


def _sentence_pieces(text: str) -> list[Piece]:
    """The sentences of ``text`` with their estimates and joiners: " " where spaces part them, ""
    between CJK sentences the body writes without."""
    return [(p, estimate_tokens(p), " " if sep else "") for p, sep in sentences(text) if p]


def _cut_run(word: str, max_tokens: int) -> Iterator[tuple[str, int]]:
    """``word`` (a run without spaces) in pieces of at most ``max_tokens`` estimated tokens (with
    their estimates), cut
    between grapheme clusters (a single cluster larger than that stays whole). A piece is looked for
    within ``4 * max_tokens + 8`` characters (a token is at most about three letters), so a run of
    any length costs time in proportion to it."""
    start, reach = 0, 4 * max_tokens + 8
    while start < len(word):
        end = min(len(word), start + reach)
        tokens = estimate_tokens(word[start:end])
        if tokens > max_tokens:
            end = start + max(1, (end - start) * max_tokens // tokens)
            while (tokens := estimate_tokens(word[start:end])) > max_tokens and end - start > 1:
                end = start + max(1, (end - start) * 9 // 10)
        cut = cluster_cut(word, end, start)
        if cut != end:
            tokens = estimate_tokens(word[start:cut])
        yield word[start:cut], tokens
        start = cut


def _lines(text: str) -> Iterator[str]:
    """``text.splitlines()``, one line at a time: a huge document's lines are never all held at once."""
    start = 0
    for found in _LINE_BREAK.finditer(text):
        yield text[start:found.start()]
        start = found.end()
    if start < len(text):
        yield text[start:]


def _blocks(body: str) -> Iterator[_Block]:
    """The body's blocks in order, handed out as they are found (a huge document's are never all held)."""
    blocks: list[_Block] = []  # found, not handed out yet
    path: list[tuple[int, str]] = []
    buf: list[str] = []
    fence: str | None = None

    def current_path() -> list[str]:
        return [title for _, title in path]

    def flush(kind: str = "text") -> None:
        if buf:
            text = "\n".join(buf).strip("\n")
            if text.strip():
                if kind == "text" and len(text) > 600:
                    # Measure long paragraphs sentence by sentence: the sum is the paragraph's estimate,
                    # and a split (likely at this size) reuses the pieces instead of measuring again.
                    pieces = _sentence_pieces(text)
                    blocks.append(_Block(text, sum(n for _, n, _ in pieces), current_path(), kind, pieces))
                else:
                    blocks.append(_Block(text, estimate_tokens(text), current_path(), kind))
            buf.clear()

    for line in _lines(body):
        if blocks:
            yield from blocks
            blocks.clear()
        if fence is not None:
            buf.append(line)
            match = _FENCE.match(line)
            marker = match.group(1) if match else ""
            if match and marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker):].strip():
                fence = None
                flush("code")
            continue
        match = _FENCE.match(line)
        if match:
            flush()
            fence = match.group(1)
            buf.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level, title = len(heading.group(1)), heading.group(2).strip()
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, title))
            blocks.append(_Block(line.strip(), estimate_tokens(line), current_path(), "heading"))
            continue
        if not line.strip():
            flush()
            continue
        buf.append(line)
    flush("code" if fence is not None else "text")
    yield from blocks


def _split_oversized(block: _Block, max_tokens: int, group: int) -> list[_Block]:
    """Cut a block larger than ``max_tokens`` into sentence (or line) pieces, pieces of words where
    one sentence alone is too large, and pieces of a word where one word alone is (``_cut_run``).
    Packing re-joins neighbouring pieces up to the limit."""
    if block.kind == "code":
        pieces = [(p, estimate_tokens(p), "\n") for p in block.text.split("\n")]
    else:
        pieces = block.pieces or _sentence_pieces(block.text)
    out: list[_Block] = []

    def piece(text: str, tokens: int, joiner: str) -> None:
        out.append(_Block(text, tokens, block.heading_path, block.kind, None, group, joiner))

    for text, tokens, joiner in pieces:
        if tokens <= max_tokens:
            piece(text, tokens, joiner)
            continue
        part: list[str] = []
        part_tokens = 0
        for word in text.split(" "):
            word_tokens = estimate_tokens(word)
            if part and part_tokens + word_tokens > max_tokens:
                piece(" ".join(part), part_tokens, joiner)
                part, part_tokens, joiner = [], 0, " "
            if word_tokens > max_tokens:
                for i, (run, run_tokens) in enumerate(_cut_run(word, max_tokens)):
                    piece(run, run_tokens, joiner if i == 0 else "")
                joiner = " "
                continue
            part.append(word)
            part_tokens += word_tokens
        if part:
            piece(" ".join(part), part_tokens, joiner)
    return out


def _join(parts: list[_Block]) -> str:
    text = parts[0].text
    for previous, block in zip(parts, parts[1:], strict=False):
        same = block.group is not None and block.group == previous.group
        text += (block.joiner if same else "\n\n") + block.text
    return text


def _tail(text: str, tokens: int) -> str:
    """The last ``tokens`` estimated tokens of ``text``, cut at a word boundary."""
    if tokens <= 0:
        return ""
    words = text.split()
    kept: list[str] = []
    total = 0
    for word in reversed(words):
        total += estimate_tokens(word)
        if total > tokens:
            break
        kept.append(word)
    return " ".join(reversed(kept))


def chunk_markdown(body: str, max_tokens: int, overlap_tokens: int = 0) -> list[Chunk]:
    """Split ``body`` into chunks of at most ``max_tokens`` estimated tokens."""
    blocks = (piece for number, block in enumerate(_blocks(body))
              for piece in (_split_oversized(block, max_tokens, number) if block.tokens > max_tokens else [block]))

    chunks: list[Chunk] = []
    parts: list[_Block] = []
    tokens = 0

    def emit() -> list[_Block]:
        """Close the current chunk; return trailing headings, which belong to the next one."""
        nonlocal parts, tokens
        carry: list[_Block] = []
        while parts and parts[-1].kind == "heading":
            carry.insert(0, parts.pop())
        if parts:
            chunks.append(Chunk(len(chunks), _join(parts), parts[0].heading_path))
        parts, tokens = [], 0
        return carry

    for block in blocks:
        has_text = any(b.kind != "heading" for b in parts)
        section_break = block.kind == "heading" and has_text and tokens >= max_tokens // 4
        if parts and not has_text and tokens + block.tokens > max_tokens:
            parts, tokens = [], 0  # headings that do not fit beside the text: the heading path keeps them
        if has_text and (section_break or tokens + block.tokens > max_tokens):
            previous = _join(parts)
            carry = emit()
            if not section_break and not carry and overlap_tokens:
                tail = _tail(previous, min(overlap_tokens, max_tokens - block.tokens))
                if tail:
                    carry = [_Block(tail, estimate_tokens(tail), block.heading_path, "overlap")]
            if sum(b.tokens for b in carry) + block.tokens > max_tokens:
                carry = []  # the heading path still records them
            parts = carry
            tokens = sum(b.tokens for b in carry)
        parts.append(block)
        tokens += block.tokens
    emit()
    if not chunks and body.strip():
        # A document of nothing but headings still deserves one chunk.
        chunks.append(Chunk(0, body.strip(), []))
    return chunks
