"""``get`` over Chinese and Japanese documents written without spaces (issue 48, 5), on a real Harness
over a temp folder: chunks of the chunker's size ending at sentence ends, placed where they are in
the body, a hit's section from its Chinese heading, and paging that reproduces the body."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.common.text import estimate_tokens
from context_harness.core.harness import Harness
from context_harness.models import GetRequest, SearchRequest
from support.workspace import config_toml

pytestmark = pytest.mark.anyio
SENTENCES = ["我们的发布流程需要先在预发布环境中完成回归测试。", "测试通过以后，由值班工程师在变更系统中登记发布窗口！",
             "如果回归测试失败，是否还能发布？", "不能，必须先修复问题。", "「本当に必要ですか？」はい、必ず必要です｡"]


def paragraph(n: int, marker: str | None = None) -> str:
    text = "".join(SENTENCES[(n + i) % len(SENTENCES)] for i in range(30))  # ~700 characters, no space
    return text.replace("不能，", f"不能，{marker}", 1) if marker else text


BODY = ("# 发布手册\n\n" + paragraph(0) + "\n\n## 回归测试\n\n" + paragraph(1) + "\n\n" + paragraph(2, "蓝鲸计划")
        + "\n\n## 值班\n\n" + paragraph(3) + "\n")


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[Harness]:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "release.md").write_text(BODY, encoding="utf-8")
    (tmp_path / "ctx.toml").write_text(config_toml(server="sync_on_start = false"), encoding="utf-8")
    async with Harness.open(config_mod.load(tmp_path / "ctx.toml")) as h:
        await h.sync()
        yield h


async def test_chunks_of_a_cjk_document_are_its_size_and_placed(kb: Harness) -> None:
    [hit] = (await kb.search(SearchRequest(query="蓝鲸计划", mode="keyword", limit=1))).results
    whole = await kb.get(GetRequest(id=hit.id, max_chars=0))
    assert whole.body == BODY and len(whole.chunks) > 12
    size = config_mod.ChunkingConfig().max_tokens
    starts = [c.start for c in whole.chunks]
    assert starts == sorted(set(starts)), "every chunk has a span of its own"
    for chunk in whole.chunks:
        assert chunk.start is not None and chunk.end is not None
        assert estimate_tokens(chunk.text) <= size and BODY.startswith(chunk.text, chunk.start)
        assert chunk.end - chunk.start <= len(chunk.text) + 2  # the span is the chunk (and a paragraph break)
    held = next(c for c in whole.chunks if c.index == hit.chunk)
    assert held.start is not None and "蓝鲸计划" in BODY[held.start:held.end]

    section = await kb.get(GetRequest(id=hit.id, chunk=hit.chunk))
    assert section.body.startswith("## 回归测试\n") and section.body.endswith(paragraph(2, "蓝鲸计划") + "\n\n")

    pieces, offset = [], 0
    while offset is not None:
        page = await kb.get(GetRequest(id=hit.id, offset=offset, max_chars=250))
        assert page.range is not None and len(page.body) <= 250
        assert page.range.end == len(BODY) or BODY[page.range.end - 1] in "。！？｡」，、\n", "a window ends at a break"
        pieces.append(page.body)
        offset = page.next_offset
    assert "".join(pieces) == BODY
