"""Code chunked by symbol: a chunk per definition, headed by its symbol path.

The file's syntax tree (``common/symbols.py``) is walked from the top: each definition (with the
comments and attributes right above it) becomes a chunk headed by its symbol path
(``harness.Harness.open``). A container (a class, an impl block, a namespace) is walked into: its
header and fields make a chunk headed by its own path, each method one of its own. The code between
definitions (imports, constants, a module docstring) is kept in chunks headed by the path of what
holds it (the module, or the class). A definition larger than ``max_tokens`` is cut at line breaks
into parts that all keep its path, so ``get`` of any part returns the whole symbol (a run of chunks
with one heading is a section: ``common/passages.py``). Closing braces (or ``end``) and other text without a
word join the chunk before them.

Chunks are slices of the body (whitespace at their ends trimmed), in order, never overlapping: where
each lies is found as for any chunk (``common.passages``). A file that ``symbols.parse`` refuses
(syntax errors, too large, minified, no grammar installed) raises ``symbols.Unparsed``; the chunk
worker then chunks it as text and logs why.
"""

from __future__ import annotations

import re

from context_harness.common.symbols import MAX_DEPTH, Definition, definitions, module_name, parse
from context_harness.common.text import estimate_tokens
from context_harness.ingest.chunking import Chunk

_END = re.compile(r"\bend\b")  # the word that closes a block in Ruby and Lua

CODE_CHUNKER_VERSION = 2  # in the chunking signature (a change re-chunks every document); 2: C#, Ruby, PHP, Lua


class _Spans:
    """The chunks found so far, as byte spans of the source with their symbol paths."""

    def __init__(self, source: bytes, max_tokens: int) -> None:
        self.source = source
        self.max_tokens = max_tokens
        self.spans: list[list] = []  # [start, end, heading]

    def tokens(self, start: int, end: int) -> int:
        return estimate_tokens(self.source[start:end].decode("utf-8", "replace"))

    def add(self, start: int, end: int, heading: str) -> None:
        if self.source[start:end].strip():
            self.spans.append([start, end, heading])

    def gap(self, start: int, end: int, heading: str) -> None:
        """Code between definitions: its own chunk(s), or, without a word in it (closing braces, Ruby's and
        Lua's ``end``), the previous chunk's end."""
        text = self.source[start:end]
        if not text.strip():
            return
        if self.spans and not any(ch.isalnum() for ch in _END.sub("", text.decode("utf-8", "replace"))):
            self.spans[-1][1] = end
            return
        self.split(start, end, heading)

    def split(self, start: int, end: int, heading: str) -> None:
        """``[start, end)`` in parts of at most ``max_tokens``, cut at line breaks (a longer line alone
        is cut inside, between characters), all headed ``heading``."""
        if self.tokens(start, end) <= self.max_tokens:
            self.add(start, end, heading)
            return
        part, part_tokens, pos = start, 0, start
        while pos < end:
            newline = self.source.find(b"\n", pos, end)
            line_end = end if newline < 0 else newline + 1
            line_tokens = self.tokens(pos, line_end)
            if part_tokens + line_tokens > self.max_tokens and pos > part:
                self.add(part, pos, heading)
                part, part_tokens = pos, 0
            if line_tokens > self.max_tokens:
                self._cut_line(pos, line_end, line_tokens, heading)
                part, part_tokens = line_end, 0
            else:
                part_tokens += line_tokens
            pos = line_end
        self.add(part, end, heading)

    def _cut_line(self, start: int, end: int, tokens: int, heading: str) -> None:
        step = max(1, (end - start) * self.max_tokens // max(tokens, 1))
        pos = start
        while pos < end:
            cut = min(end, pos + step)
            while start < cut < end and (self.source[cut] & 0xC0) == 0x80:  # inside a UTF-8 character
                cut -= 1
            cut = cut if cut > pos else min(end, pos + step)
            self.add(pos, cut, heading)
            pos = cut

    def chunks(self) -> list[Chunk]:
        out: list[Chunk] = []
        for start, end, heading in self.spans:
            text = self.source[start:end].decode("utf-8", "replace").strip("\r\n").rstrip()
            if text.strip():
                out.append(Chunk(len(out), text, [heading]))
        return out


def _walk(container: object, language: str, path: str, start: int, end: int, spans: _Spans, depth: int,
          found: list[Definition] | None = None) -> None:
    """Chunk ``[start, end)`` of the source, which holds ``container``'s definitions."""
    gap = start
    for d in found if found is not None else definitions(container, language):
        begin = max(d.start, gap)
        spans.gap(gap, begin, path)
        _definition(d, begin, language, path, spans, depth)
        gap = max(gap, d.node.end_byte)
    spans.gap(gap, end, path)


def _definition(d: Definition, start: int, language: str, path: str, spans: _Spans, depth: int) -> None:
    own, end = f"{path}.{d.name}", d.node.end_byte
    members = list(definitions(d.body, language)) if d.body is not None and depth < MAX_DEPTH else []
    if members:
        _walk(d.body, language, own, start, end, spans, depth + 1, members)
    else:
        spans.split(start, end, own)


def chunk_code(body: str, language: str, path: str, max_tokens: int) -> list[Chunk]:
    """The chunks of a code file by symbol; ``symbols.Unparsed`` when it must be read as text."""
    source = body.encode("utf-8")
    tree = parse(source, language)
    module = module_name(path)
    spans = _Spans(source, max_tokens)
    _walk(tree.root_node, language, module, 0, len(source), spans, 0)
    chunks = spans.chunks()
    if not chunks and body.strip():
        chunks = [Chunk(0, body.strip(), [module])]
    return chunks


__all__ = ["CODE_CHUNKER_VERSION", "chunk_code"]
