"""``get {id, chunk}`` returns the chunk's section (issue 50): from its heading to the next heading of the
same or a higher level, at most ``SECTION_CHARS`` characters by default and centred on the chunk when the
section is longer; ``max_chars`` asks for more. On a real Harness over a temp folder (a 20 kB Markdown
guide, a document without headings, CJK and emoji text), the real MCP client in memory and ``ctx get``."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.common.passages import splits_cluster, window_end
from context_harness.core.harness import Harness
from context_harness.errors import BadRequest
from context_harness.models import SECTION_CHARS, DocumentOut, GetRequest, SearchRequest
from context_harness.server.mcp import build_server
from support.workspace import config_toml

pytestmark = pytest.mark.anyio
WORDS = ("file", "index", "search", "window", "chunk", "heading", "section", "offset", "reader", "answer",
         "model", "budget", "layout", "server", "client", "source", "folder", "sync", "token", "length")


def paragraphs(rng: random.Random, chars: int, marker: str | None = None) -> str:
    """Paragraphs of about ``chars`` characters; ``marker`` in a sentence of its own in the middle one."""
    out: list[str] = []
    while sum(map(len, out)) < chars:
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 70))).capitalize() + ".\n\n")
    if marker:
        middle = len(out) // 2
        out[middle] = out[middle].replace(".\n\n", f". The {marker} setting is here.\n\n")
    return "".join(out)


def guide() -> str:
    """A 20 kB Markdown guide: an H1, sections of a few kB (one with subsections) and a 9 kB one."""
    rng = random.Random(50)
    return (
        "# Guide\n\n" + paragraphs(rng, 500)
        + "## Install\n\n" + paragraphs(rng, 900, "zqinstallx")
        + "### On Linux\n\n" + paragraphs(rng, 1_200, "zqlinuxx")
        + "### On macOS\n\n" + paragraphs(rng, 1_200)
        + "## Configure\n\n" + paragraphs(rng, 2_500, "zqconfigurex")
        + "## Long reference\n\n" + paragraphs(rng, 9_000, "zqlongx")
        + "## Troubleshooting\n\n" + paragraphs(rng, 2_000, "zqtroublex")
        + "## Appendix\n\n" + paragraphs(rng, 1_500)
    )


def plain() -> str:
    """15 kB of paragraphs and no heading."""
    return paragraphs(random.Random(7), 15_000, "zqplainx")


CLUSTERS = ("日本語の文章です。", "e\u0301", "👩\u200d👩\u200d👧\u200d👦", "🇯🇵🇫🇷", "👍🏽", "한국어", "ก\u0e34",
            "\u0928\u093f", "☺\ufe0f", "中文，", "テキスト、", "\r\n")


def hostile() -> str:
    """About 12,000 characters of CJK without spaces, combining marks, emoji ZWJ sequences, flags,
    skin tones and CRLF: the text a cut at an exact budget would split."""
    rng = random.Random(3)
    return "".join(rng.choice(CLUSTERS) for _ in range(2_400)) + " zqcjkx " + "".join(
        rng.choice(CLUSTERS) for _ in range(800))


GUIDE, PLAIN = guide(), plain()


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[Harness]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {"guide.md": GUIDE, "plain.md": PLAIN, "cjk.md": hostile()}.items():
        (docs / name).write_bytes(text.encode())
    (tmp_path / "ctx.toml").write_text(config_toml(server="sync_on_start = false"), encoding="utf-8")
    async with Harness.open(config_mod.load(tmp_path / "ctx.toml")) as h:
        await h.sync()
        yield h


async def hit_of(h: Harness, word: str) -> tuple[str, int]:
    [hit] = (await h.search(SearchRequest(query=word, mode="keyword", limit=1))).results
    assert hit.chunk is not None
    return hit.id, hit.chunk


def own(doc: DocumentOut, k: int) -> tuple[int, int]:
    [chunk] = [c for c in doc.chunks if c.index == k]
    assert chunk.start is not None and chunk.end is not None
    return chunk.start, chunk.end


def section_of(body: str, heading: str, next_heading: str) -> tuple[int, int]:
    start = body.index(heading + "\n")
    return start, body.index(next_heading + "\n", start)


async def test_a_chunk_gets_its_section_with_its_heading(kb: Harness) -> None:
    doc_id, k = await hit_of(kb, "zqconfigurex")
    doc = await kb.get(GetRequest(id=doc_id, chunk=k))
    assert doc.range is not None and doc.total_chars == len(GUIDE) and 19_000 <= len(GUIDE) <= 22_000
    assert (doc.range.start, doc.range.end) == section_of(GUIDE, "## Configure", "## Long reference")
    assert doc.body.startswith("## Configure\n") and "zqconfigurex" in doc.body and len(doc.body) <= SECTION_CHARS
    start, end = own(doc, k)
    assert doc.range.start <= start < end <= doc.range.end  # the whole chunk
    assert doc.truncated and doc.next_offset == doc.range.end  # a way to read on
    following = await kb.get(GetRequest(id=doc_id, offset=doc.next_offset))
    assert following.body.startswith("## Long reference\n")


async def test_a_section_holds_its_subsections_and_a_subsection_is_its_own(kb: Harness) -> None:
    doc_id, k = await hit_of(kb, "zqinstallx")
    install = await kb.get(GetRequest(id=doc_id, chunk=k))
    assert install.range is not None
    assert (install.range.start, install.range.end) == section_of(GUIDE, "## Install", "## Configure")
    assert "### On Linux\n" in install.body and "### On macOS\n" in install.body
    doc_id, k = await hit_of(kb, "zqlinuxx")
    linux = await kb.get(GetRequest(id=doc_id, chunk=k))
    assert linux.range is not None
    assert (linux.range.start, linux.range.end) == section_of(GUIDE, "### On Linux", "### On macOS")


async def test_a_long_section_is_cut_around_the_chunk_and_max_chars_gives_more(kb: Harness) -> None:
    doc_id, k = await hit_of(kb, "zqlongx")
    first, stop = section_of(GUIDE, "## Long reference", "## Troubleshooting")
    assert stop - first > SECTION_CHARS + 2_000
    doc = await kb.get(GetRequest(id=doc_id, chunk=k))
    assert doc.range is not None and len(doc.body) <= SECTION_CHARS and "zqlongx" in doc.body
    assert first < doc.range.start and doc.range.end < stop  # within the section, the chunk in its middle
    start, end = own(doc, k)
    assert doc.range.start <= start < end <= doc.range.end
    middle, centre = (start + end) / 2, (doc.range.start + doc.range.end) / 2
    assert abs(middle - centre) <= SECTION_CHARS / 4
    assert GUIDE[doc.range.start - 1] == "\n" and GUIDE[doc.range.end - 1] in "\n "  # on a line or a word
    assert doc.next_offset == doc.range.end
    more = await kb.get(GetRequest(id=doc_id, chunk=k, max_chars=20_000))
    assert more.range is not None and (more.range.start, more.range.end) == (first, stop)
    assert len(more.body) > len(doc.body) and more.body.startswith("## Long reference\n")
    less = await kb.get(GetRequest(id=doc_id, chunk=k, max_chars=1_500))
    assert len(less.body) <= 1_500 and "zqlongx" in less.body


async def test_a_document_without_headings_gives_the_text_around_the_chunk(kb: Harness) -> None:
    doc_id, k = await hit_of(kb, "zqplainx")
    doc = await kb.get(GetRequest(id=doc_id, chunk=k))
    assert doc.range is not None and doc.total_chars == len(PLAIN)
    assert len(doc.body) <= SECTION_CHARS and "zqplainx" in doc.body
    assert 0 < doc.range.start and doc.range.end < len(PLAIN)  # around it, not from the start
    start, end = own(doc, k)
    assert doc.range.start <= start < end <= doc.range.end
    assert PLAIN[doc.range.start - 1].isspace() and PLAIN[doc.range.end - 1].isspace()
    assert all(c.heading is None for c in doc.chunks)


async def test_a_chunk_out_of_range_names_the_range(kb: Harness) -> None:
    doc_id, _ = await hit_of(kb, "zqconfigurex")
    count = len((await kb.get(GetRequest(id=doc_id, max_chars=0))).chunks)
    with pytest.raises(BadRequest) as info:
        await kb.get(GetRequest(id=doc_id, chunk=count + 3))
    assert info.value.message == (f"chunk {count + 3} is out of range: this document has {count} chunks "
                                  f"(0-{count - 1})")


async def test_cuts_never_split_a_grapheme_cluster(kb: Harness) -> None:
    doc_id, hit = await hit_of(kb, "zqcjkx")
    whole = await kb.get(GetRequest(id=doc_id, max_chars=0))
    body = whole.body
    cuts: list[int] = []
    for budget in (37, 333, 1_000, None):
        for k in [*range(0, len(whole.chunks), 3), hit]:
            doc = await kb.get(GetRequest(id=doc_id, chunk=k, max_chars=budget))
            assert doc.range is not None and len(doc.body) <= (budget or SECTION_CHARS)
            cuts += [doc.range.start, doc.range.end]
        offset: int | None = 0
        while offset is not None:
            doc = await kb.get(GetRequest(id=doc_id, offset=offset, max_chars=budget or 2_000))
            assert doc.range is not None and doc.range.end > offset
            cuts.append(doc.range.end)
            offset = doc.next_offset
    split = [(c, body[c - 2:c + 2]) for c in cuts if splits_cluster(body, c)]
    assert not split, split[:5]


def test_window_end_keeps_clusters_whole_and_pages_exactly() -> None:
    body = "".join(random.Random(9).choice(CLUSTERS) for _ in range(3_000))
    for budget in (1, 2, 5, 16, 100, 999):
        start, pieces = 0, []
        while start < len(body):
            end = window_end(body, start, budget)
            assert start < end <= start + budget
            # only a cluster longer than the budget (the family emoji is 7 characters) may be cut
            assert not splits_cluster(body, end) or budget < 8
            pieces.append(body[start:end])
            start = end
        assert "".join(pieces) == body
    assert window_end("日本語の文章です。日本語の文章です。日本語", 0, 10) == 9  # after 。


def payload_bytes(result: Any) -> int:
    """What a tools/call answer carries: the structured content and the text content, as JSON."""
    return len(json.dumps({"structured": result.structured_content,
                           "content": [c.text for c in result.content]}, ensure_ascii=False).encode())


async def test_mcp_get_of_a_chunk_is_the_section(kb: Harness) -> None:
    doc_id, k = await hit_of(kb, "zqtroublex")
    async with Client(build_server(kb)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert f"{SECTION_CHARS:,} characters" in tools["get"].description
        assert "call `get` with both" in tools["search"].description  # the size is said once, in get's
        result = await client.call_tool("get", {"id": doc_id, "chunk": k})
        whole = await client.call_tool("get", {"id": doc_id, "max_chars": 0})
    doc = result.structured_content
    assert not result.is_error and doc["body"].startswith("## Troubleshooting\n") and "zqtroublex" in doc["body"]
    assert GUIDE[doc["range"]["end"]:].startswith("## Appendix\n")
    size = payload_bytes(result)
    # the section and its text twice (structured and rendered) stay well under the old 36 kB a call
    assert size <= 2 * SECTION_CHARS + 3_000 and size < payload_bytes(whole) / 3


def test_ctx_get_of_a_chunk_prints_the_section(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(GUIDE, encoding="utf-8")
    cfg = tmp_path / "ctx.toml"
    cfg.write_text(config_toml(), encoding="utf-8")

    def ctx(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", *args,
                               "--config", str(cfg)], capture_output=True, text=True, timeout=60)

    assert ctx("sync").returncode == 0
    hit = json.loads(ctx("search", "zqconfigurex", "--limit", "1", "--json").stdout)["results"][0]
    shown = ctx("get", hit["id"], "--chunk", str(hit["chunk"]))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(shown.stdout) <= SECTION_CHARS + 500 and len(lines) <= 40
    assert "## Configure" in lines[:12] and "zqconfigurex" in shown.stdout and "## Long reference" not in shown.stdout
    assert f"next: ctx get {hit['id']} --offset " in shown.stderr


async def test_a_section_read_alone_is_the_section_of_the_whole_document(kb: Harness) -> None:
    """The embedded store reads a chunk's window alone (``windows.read_window``: the chunks and text
    within the budget of the chunk); the section found there is the one found in the whole document."""
    from context_harness.search import windows

    assert kb.store is not None
    for listed in (await kb.document_listing()).documents:
        row, chunks = kb.store.document_with_chunks(listed.id)
        for budget in (37, 1_500, None, 20_000):
            for k in range(len(chunks)):
                request = GetRequest(id=listed.id, chunk=k, max_chars=budget)
                alone = windows.read_window(kb.store, listed.id, request, kb.config.server.get_max_chars)
                assert alone == windows.document_window(row, chunks, request, kb.config.server.get_max_chars,
                                                        kb.config.chunking.overlap_tokens), (row.source_id, k)
