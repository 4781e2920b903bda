"""``max_tokens`` on ``search`` and ``get`` through the official MCP client (in memory, both protocol
eras) and REST (the real Starlette app): the whole answer, structured content and text block, within
the budget as the server estimates it; what was left out said; SciFact queries within 300 tokens."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.common.text import estimate_tokens, payload_tokens
from context_harness.core.harness import Harness
from context_harness.server.http import build_app
from context_harness.server.mcp import build_server
from support.paths import REPO
from support.results import error_of
from support.workspace import config_toml, long_markdown, write_files, write_long_document

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
SCIFACT_QUERIES = 40


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def notes(count: int = 20) -> dict[str, str]:
    """``count`` notes of a few paragraphs on the manual's words."""
    rng = random.Random(4)
    words = "file system manual handle options buffer stream path mode flag descriptor offset".split()

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(6, 12))).capitalize() + "."

    return {f"notes/note{i:02}.md": f"# Note {i}\n\n" + "\n\n".join(" ".join(sentence() for _ in range(5))
                                                                 for _ in range(3)) + "\n" for i in range(count)}


@pytest.fixture
async def long_harness(tmp_path: Path):
    """The server-test documents, a 262,000-character manual and 20 notes, synced."""
    config = write_long_document(tmp_path)
    write_files(tmp_path / "docs", notes())
    async with Harness.open(config_mod.load(config)) as harness:
        await harness.sync()
        yield harness


def within(result: Any, budget: int) -> dict[str, Any]:
    """The structured content of ``result``, checked: it and the text block within ``budget``."""
    assert not result.is_error, result.content[0].text
    payload: dict[str, Any] = result.structured_content
    assert payload_tokens(payload) <= budget
    assert estimate_tokens(result.content[0].text) <= budget
    return payload


async def test_search_within_300_tokens_says_what_it_left_out(long_harness: Harness, mode: str) -> None:
    async with Client(build_server(long_harness), mode=mode) as client:
        full = await client.call_tool("search", {"query": "file system manual handle options"})
        fitted = await client.call_tool("search", {"query": "file system manual handle options", "max_tokens": 300})
    assert payload_tokens(full.structured_content) > 1000
    payload = within(fitted, 300)
    kept = [r["id"] for r in payload["results"]]
    assert kept and kept == [r["id"] for r in full.structured_content["results"][:len(kept)]]
    left_out = len(full.structured_content["results"]) - len(kept)
    assert payload["omitted"]["results"] == left_out > 0
    assert f"{left_out} more left out to fit max_tokens" in fitted.content[0].text
    assert "omitted" not in full.structured_content


async def test_get_within_max_tokens_cut_at_a_sentence_reads_on(long_harness: Harness, mode: str) -> None:
    manual = long_markdown()
    async with Client(build_server(long_harness), mode=mode) as client:
        hit = (await client.call_tool("search", {"query": "file system manual", "limit": 1})).structured_content
        doc_id = hit["results"][0]["id"]
        pieces, offset = [], 0
        for _ in range(4):
            part = within(await client.call_tool("get", {"id": doc_id, "offset": offset, "max_tokens": 600}), 600)
            assert part["truncated"] and part["next_offset"] == part["range"]["end"]
            assert part["omitted"]["body_chars"] > 0
            assert manual[part["next_offset"] - 1] in ".\n" or manual[part["next_offset"]] == "\n"
            pieces.append(part["body"])
            offset = part["next_offset"]
        chunk = within(await client.call_tool("get", {"id": doc_id, "chunk": 40, "max_tokens": 600}), 600)
    assert "".join(pieces) == manual[:offset]  # read on from next_offset: nothing lost, nothing twice
    assert chunk["range"]["start"] <= next(c["start"] for c in chunk["chunks"] if c["index"] == 40)


async def test_a_budget_out_of_bounds_is_a_clear_error(long_harness: Harness, mode: str) -> None:
    async with Client(build_server(long_harness), mode=mode) as client:
        small = await client.call_tool("search", {"query": "manual", "max_tokens": 10})
        large = await client.call_tool("get", {"id": "x", "max_tokens": 10_000_000})
    assert error_of(small)["code"] == "bad_request" and "max_tokens" in error_of(small)["message"]
    assert "300" in error_of(small)["message"]
    assert error_of(large)["code"] == "bad_request" and "1000000" in error_of(large)["message"]


async def test_rest_gives_the_same_budgeted_answers(long_harness: Harness) -> None:
    arguments = {"query": "file system manual handle options", "max_tokens": 300}
    async with Client(build_server(long_harness)) as client:
        over_mcp = (await client.call_tool("search", arguments)).structured_content
    app = build_app(long_harness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as rest:
        found = await rest.post("/tools/search", json=arguments)
        doc_id = found.json()["results"][0]["id"]
        got = await rest.post("/tools/get", json={"id": doc_id, "max_tokens": 400})
        refused = await rest.post("/tools/search", json={"query": "manual", "max_tokens": 299})
    assert found.status_code == 200 and found.json() == over_mcp
    assert payload_tokens(found.json()) <= 300
    assert got.status_code == 200 and payload_tokens(got.json()) <= 400 and got.json()["next_offset"]
    assert refused.status_code == 400 and "max_tokens" in refused.json()["error"]["message"]


# -- SciFact: the check -------------------------------------------------------------------

def scifact_sample(folder: Path) -> list[str]:
    """The documents judged for the first ``SCIFACT_QUERIES`` test queries and every 10th other one,
    written as Markdown in ``folder``; returns the queries."""
    import csv

    lines = (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    texts = {q["_id"]: q["text"] for q in map(json.loads, lines)}
    with (SCIFACT / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    asked = list(dict.fromkeys(r["query-id"] for r in rows))[:SCIFACT_QUERIES]
    judged = {r["corpus-id"] for r in rows if r["query-id"] in asked}
    folder.mkdir(parents=True)
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as fh:
        for i, doc in enumerate(map(json.loads, fh)):
            if doc["_id"] in judged or i % 10 == 0:
                (folder / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
    return [texts[q] for q in asked]


async def test_scifact_queries_answer_within_300_tokens(tmp_path: Path) -> None:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact data not found at {SCIFACT} (expected ../shared/data/beir/scifact)")
    queries = scifact_sample(tmp_path / "docs")
    (tmp_path / "ctx.toml").write_text(config_toml(), encoding="utf-8")
    async with Harness.open(config_mod.load(tmp_path / "ctx.toml")) as harness:
        await harness.sync()
        async with Client(build_server(harness)) as client:
            kept = []
            for query in queries:
                payload = within(await client.call_tool("search", {"query": query, "max_tokens": 300}), 300)
                kept.append(len(payload["results"]))
                assert payload["results"] or payload["omitted"]["results"]
    assert sum(kept) >= len(queries)  # at least a result an answer, on average
