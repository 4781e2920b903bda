"""Markdown-aware chunking, and the promise that default chunks fit the bundled model's window."""

from __future__ import annotations

import json
import random
import re

import pytest

from context_harness.common.passages import chunk_starts
from context_harness.common.text import splits_cluster
from context_harness.config import ChunkingConfig
from context_harness.ingest.chunking import chunk_markdown, estimate_tokens
from support.paths import REPO

CORPUS = REPO.parent / "shared" / "data" / "beir" / "scifact" / "corpus.jsonl"
TOKENIZER = REPO / "context_harness" / "embedding" / "model" / "all-MiniLM-L6-v2" / "tokenizer.json"

DOC = """# Guide

Intro paragraph.

## Install

```bash
pip install context-harness
ctx init
```

## Usage

### Search

Search words here.
"""


def _estimate_by_definition(text: str) -> int:
    """The estimate as the chunker's docs define it, with plain regular expressions."""
    text = re.sub("[\u0300-\u036f\u0e34-\u0e3a\u20dd]", "", text)  # combining marks count nothing
    n = len(re.findall(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]", text))
    n += sum((len(w) - 4) // 3 for w in re.findall(r"[A-Za-z]{7,}", text))
    return n + sum((len(d) - 1) // 2 for d in re.findall(r"\d{3,}", text))


def test_token_estimate_follows_its_definition_on_any_text() -> None:
    rng = random.Random(7)
    alphabet = "abcXYZ0123456789 \n\t\x0b\x1c.,;-_éü٣中\xa0\u2009𝔘\u0301\u0e34\u20dd"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(3000)]
    texts += ["internationalization 1234567 x" * 3, "a" * 5000, "9" * 5000, ""]
    assert [estimate_tokens(t) for t in texts] == [_estimate_by_definition(t) for t in texts]


def test_heading_paths_and_small_sections_pack_together() -> None:
    chunks = chunk_markdown(DOC, max_tokens=200)
    assert len(chunks) == 1 and chunks[0].heading_path == ["Guide"]
    small = chunk_markdown(DOC, max_tokens=32)
    paths = [c.heading_path for c in small]
    assert ["Guide", "Usage"] in paths
    assert all(estimate_tokens(c.text) <= 32 for c in small)
    assert [c.index for c in small] == list(range(len(small)))


def test_fenced_code_stays_whole_when_it_fits() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(12)) + "\n```"
    body = "# T\n\n" + "word " * 40 + "\n\n" + code + "\n\nafter text\n"
    chunks = chunk_markdown(body, max_tokens=90)
    holding = [c for c in chunks if "```python" in c.text]
    assert len(holding) == 1 and holding[0].text.count("```") == 2


def test_oversized_paragraph_splits_at_sentences_with_overlap() -> None:
    body = " ".join(f"Sentence number {i} says something." for i in range(60))
    chunks = chunk_markdown(body, max_tokens=64, overlap_tokens=8)
    assert len(chunks) > 3
    assert all(estimate_tokens(c.text) <= 64 for c in chunks)
    assert all(c.text.rstrip().endswith(".") for c in chunks[:-1])
    # overlap: the start of a chunk repeats the end of the previous one
    assert any(chunks[i + 1].text.split()[0] in chunks[i].text.split()[-10:] for i in range(len(chunks) - 1))


def test_a_word_longer_than_the_limit_is_still_cut() -> None:
    chunks = chunk_markdown("x " * 500, max_tokens=40)
    assert all(estimate_tokens(c.text) <= 40 for c in chunks) and len(chunks) > 10


CHINESE = ("我们的发布流程需要先在预发布环境中完成回归测试。测试通过以后，由值班工程师在变更系统中登记发布窗口！"
           "如果回归测试失败，是否还能发布？不能。")
JAPANESE = "リリースの前にステージング環境で回帰テストを行います。「本当に必要ですか？」はい、必ず必要です｡"


def _placed(body: str, chunks: list) -> list[int]:
    """Where each chunk begins in ``body`` (as ``get`` finds it), checked to be where its text is."""
    starts = chunk_starts(body, [c.text for c in chunks])
    assert starts == sorted(set(starts)), "every chunk has a span of its own"
    for chunk, start in zip(chunks, starts, strict=True):
        assert body.startswith(chunk.text, start), (start, chunk.text[:20])
    return starts


@pytest.mark.parametrize("paragraph", [CHINESE, JAPANESE])
def test_a_long_cjk_paragraph_is_cut_at_its_sentence_ends(paragraph: str) -> None:
    body = paragraph * 12  # one paragraph, no spaces at all
    chunks = chunk_markdown(body, max_tokens=64)
    assert len(chunks) > 5 and all(estimate_tokens(c.text) <= 64 for c in chunks)
    assert all(c.text[-1] in "。！？｡」" for c in chunks)  # every chunk ends a sentence
    assert "".join(c.text for c in chunks) == body  # nothing added (no space between sentences), nothing lost
    _placed(body, chunks)


def test_a_run_without_sentence_ends_is_cut_between_clusters() -> None:
    rng = random.Random(3)
    clusters = ["中", "文", "\u1100\u1161\u11a8", "\u0e19\u0e49\u0e33", "\u0915\u094d\u0937", "e\u0301",
                "\U0001F469\u200d\U0001F4BB"]
    run = "".join(rng.choice(clusters) for _ in range(4_000))
    body = "# 标题\n\nIntro words here. " + run + " and after."
    chunks = chunk_markdown(body, max_tokens=50)
    assert all(estimate_tokens(c.text) <= 50 for c in chunks) and len(chunks) > 40
    starts = _placed(body, chunks)
    assert not [s for s in starts if splits_cluster(body, s)]
    assert "".join(c.text for c in chunks if c.text[0] != "#").replace(" ", "").endswith(
        (run + "andafter.").replace(" ", ""))


def test_empty_and_heading_only_documents() -> None:
    assert chunk_markdown("", 100) == []
    assert [c.text for c in chunk_markdown("# Only a title", 100)] == ["# Only a title"]


def test_default_chunks_fit_the_bundled_model_window() -> None:
    if not CORPUS.is_file():
        pytest.skip(f"SciFact corpus not found at {CORPUS} (expected ../shared/data/beir/scifact)")
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    size = ChunkingConfig().max_tokens
    texts = []
    with CORPUS.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i % 3:
                continue
            doc = json.loads(line)
            texts += [c.text for c in chunk_markdown(f"# {doc['title']}\n\n{doc['text']}\n", size)]
    longest = max(len(e.ids) for e in tokenizer.encode_batch(texts))  # [CLS] and [SEP] included
    assert longest <= 256
