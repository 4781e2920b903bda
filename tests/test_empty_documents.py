"""Empty and blank notes (0 bytes, whitespace only) have no chunks: ``search`` finds them by name and
``get`` reads them like any other document (the body as it is, no chunks) over the core, MCP and
``ctx get``; asking for a chunk of one is a clear ``bad_request``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import BadRequest
from context_harness.models import GetRequest, SearchRequest
from context_harness.server.mcp import build_server
from support.results import error_of
from support.workspace import config_toml

pytestmark = pytest.mark.anyio
NOTES = {"empty.md": "", "blank.md": "  \n\n\t\n   ", "blank.txt": "\n\n"}


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    for name, text in NOTES.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    (tmp_path / "docs" / "full.md").write_text("# Full\n\nA note with words.\n", encoding="utf-8")
    path = tmp_path / "ctx.toml"
    path.write_text(config_toml(), encoding="utf-8")
    return path


@pytest.fixture
async def kb(cfg: Path) -> AsyncIterator[Any]:
    async with Harness.open(config_mod.load(cfg)) as h:
        await h.sync()
        yield h


async def ids_of(h: Harness) -> dict[str, str]:
    return {(await h.get(d.id)).source_id: d.id for d in (await h.document_listing()).documents}


async def test_empty_and_blank_notes_read_like_any_other(kb) -> None:
    ids = await ids_of(kb)
    assert set(NOTES) <= set(ids)
    hits = (await kb.search(SearchRequest(query="blank", mode="keyword"))).results
    assert {h.source_id for h in hits} >= {"blank.md", "blank.txt"}
    for name, text in NOTES.items():
        for request in (GetRequest(id=ids[name]), GetRequest(id=ids[name], max_chars=0),
                        GetRequest(id=ids[name], offset=0)):
            doc = await kb.get(request)
            assert doc.chunks == [] and doc.truncated is False and doc.next_offset is None, (name, request)
            assert doc.total_chars == len(doc.body) and text.startswith(doc.body) and doc.body.strip() == ""
        assert kb.get_sync(ids[name]).chunks == []  # scripts' context.get
        with pytest.raises(BadRequest, match="this document has no chunks"):
            await kb.get(GetRequest(id=ids[name], chunk=0))


async def test_mcp_get_of_an_empty_note_is_a_result(kb) -> None:
    ids = await ids_of(kb)
    async with Client(build_server(kb)) as client:
        got = await client.call_tool("get", {"id": ids["empty.md"]})
        chunk = await client.call_tool("get", {"id": ids["blank.md"], "chunk": 0})
        resource = await client.read_resource(f"ctx://documents/{ids['blank.md']}")
    assert not got.is_error and got.structured_content["body"] == "" and got.structured_content["chunks"] == []
    assert error_of(chunk) == {"code": "bad_request", "message": "this document has no chunks"}
    assert resource.contents[0].text.startswith("# blank")


def test_ctx_get_of_an_empty_note(cfg: Path) -> None:
    def ctx(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", *args,
                               "--config", str(cfg)], capture_output=True, text=True, timeout=60)

    assert ctx("sync").returncode == 0
    [hit] = [h for h in json.loads(ctx("search", "empty", "--json").stdout)["results"] if h["source_id"] == "empty.md"]
    got = ctx("get", hit["id"], "--json")
    assert got.returncode == 0 and "Traceback" not in got.stderr, got.stderr
    assert json.loads(got.stdout)["body"] == "" and json.loads(got.stdout)["chunks"] == []
    human = ctx("get", hit["id"])
    assert human.returncode == 0 and human.stdout.startswith("# empty") and human.stderr == "", human.stderr


async def test_the_console_shows_an_empty_note(kb) -> None:
    import httpx2

    from context_harness.server.http import build_app

    ids = await ids_of(kb)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=build_app(kb)), base_url="http://127.0.0.1") as ui:
        page = await ui.get("/ui/doc", params={"id": ids["empty.md"]})
    assert page.status_code == 200 and "Later sections" not in page.text
    assert '<article class="markdown" dir="auto"></article>' in page.text  # an empty body, rendered as nothing
