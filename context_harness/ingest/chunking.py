"""Markdown-aware chunking.

A document is split into blocks (headings, paragraphs, fenced code), then blocks are packed into
chunks of at most ``max_tokens`` estimated tokens. A heading starts a new chunk once the current
one holds a fair amount of text; fenced code stays whole where it fits; oversized blocks split at
sentence, then line, then word boundaries. Each chunk carries the heading path it starts under.

Token counts are estimated without a tokenizer (fast, deterministic). The estimate is calibrated
against the bundled MiniLM WordPiece tokenizer on SciFact: the real count stays within 7 % above
the estimate, so the default size keeps every chunk inside the model's 256-token window.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

CHUNKER_VERSION = 1
_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
_LONG_WORD = re.compile(r"[A-Za-z]{7,}")
_LONG_NUMBER = re.compile(r"\d{4,}")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def estimate_tokens(text: str) -> int:
    """Estimated WordPiece tokens: long words split into several pieces, numbers every 3 digits."""
    n = len(_WORD.findall(text))
    for word in _LONG_WORD.findall(text):
        n += (len(word) - 4) // 3
    for number in _LONG_NUMBER.findall(text):
        n += (len(number) - 1) // 3
    return n


@dataclass
class Chunk:
    index: int
    text: str
    heading_path: list[str] = field(default_factory=list)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass
class _Block:
    text: str
    tokens: int
    heading_path: list[str]
    kind: str  # "heading", "text", "code"


def _blocks(body: str) -> list[_Block]:
    blocks: list[_Block] = []
    path: list[tuple[int, str]] = []
    buf: list[str] = []
    fence: str | None = None

    def current_path() -> list[str]:
        return [title for _, title in path]

    def flush(kind: str = "text") -> None:
        if buf:
            text = "\n".join(buf).strip("\n")
            if text.strip():
                blocks.append(_Block(text, estimate_tokens(text), current_path(), kind))
            buf.clear()

    for line in body.splitlines():
        if fence is not None:
            buf.append(line)
            match = _FENCE.match(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not line.strip()[len(match.group(1)):].strip():
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
    return blocks


def _split_oversized(block: _Block, max_tokens: int) -> list[_Block]:
    """Split a block larger than ``max_tokens`` at sentence, line, then word boundaries."""
    if block.kind == "code":
        pieces = block.text.split("\n")
        joiner = "\n"
    else:
        pieces = [p for p in _SENTENCE_END.split(block.text) if p]
        joiner = " "
    out: list[_Block] = []
    current: list[str] = []
    current_tokens = 0
    for piece in pieces:
        tokens = estimate_tokens(piece)
        if tokens > max_tokens:
            if current:
                out.append(_Block(joiner.join(current), current_tokens, block.heading_path, block.kind))
                current, current_tokens = [], 0
            part: list[str] = []
            part_tokens = 0
            for word in piece.split(" "):
                wt = estimate_tokens(word)
                if part and part_tokens + wt > max_tokens:
                    out.append(_Block(" ".join(part), part_tokens, block.heading_path, block.kind))
                    part, part_tokens = [], 0
                part.append(word)
                part_tokens += wt
            if part:
                out.append(_Block(" ".join(part), part_tokens, block.heading_path, block.kind))
            continue
        if current and current_tokens + tokens > max_tokens:
            out.append(_Block(joiner.join(current), current_tokens, block.heading_path, block.kind))
            current, current_tokens = [], 0
        current.append(piece)
        current_tokens += tokens
    if current:
        out.append(_Block(joiner.join(current), current_tokens, block.heading_path, block.kind))
    return out


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
    blocks: list[_Block] = []
    for block in _blocks(body):
        if block.tokens > max_tokens:
            # Leave room for the heading lines that may be carried into the piece's chunk.
            blocks.extend(_split_oversized(block, max(max_tokens - 32, max_tokens // 2)))
        else:
            blocks.append(block)

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
            chunks.append(Chunk(len(chunks), "\n\n".join(b.text for b in parts), parts[0].heading_path))
        parts, tokens = [], 0
        return carry

    for block in blocks:
        has_text = any(b.kind != "heading" for b in parts)
        section_break = block.kind == "heading" and has_text and tokens >= max_tokens // 4
        if has_text and (section_break or tokens + block.tokens > max_tokens):
            previous = "\n\n".join(b.text for b in parts)
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
