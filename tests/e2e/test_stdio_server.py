"""The real ``context-harness`` over stdio, spawned by the SDK client; stdout must be pure JSON-RPC."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.paths import BIN
from support.results import error_of

pytestmark = pytest.mark.anyio
TEE = Path(__file__).resolve().parent / "stdout_tee.py"


def assert_pure_jsonrpc(capture: Path) -> int:
    """Every byte on stdout is a newline-terminated JSON-RPC 2.0 message; returns how many."""
    raw = capture.read_bytes()
    assert raw, "the server wrote nothing to stdout"
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    for line in lines:
        message = json.loads(line)
        assert message.get("jsonrpc") == "2.0", line
        assert {"id", "method", "result", "error"} & set(message), line
    return len(lines)


async def wait_for_documents(client: Client, count: int) -> None:
    """sync_on_start indexes in the background while the server already answers: wait until the
    documents are both counted and searchable (the count can lead the keyword index by a moment)."""
    with anyio.fail_after(60):
        while True:
            sources = (await client.call_tool("sources", {})).structured_content["sources"]
            found = await client.call_tool("search", {"query": "tantivy lua claude", "limit": 10})
            if sum(s["document_count"] for s in sources) >= count and len(found.structured_content["results"]) >= count:
                return
            await anyio.sleep(0.1)


async def test_python_m_with_root_syncs_on_start_and_searches(tmp_path, docs, child_env):
    capture = tmp_path / "stdout.bin"
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(TEE), str(capture), sys.executable, "-m", "context_harness",
                                         "--root", str(docs)], env=child_env)
    async with Client(params) as client:
        assert "Use `search`" in client.instructions
        assert {t.name for t in (await client.list_tools()).tools} == {"search", "get", "sources", "recent", "related"}
        await wait_for_documents(client, 3)
        result = await client.call_tool("search", {"query": "rust search engine"})
        hit = result.structured_content["results"][0]
        assert hit["title"] == "Tantivy notes"
        doc = await client.call_tool("get", {"id": hit["id"]})
        assert "full-text search" in doc.structured_content["body"]
        error = await client.call_tool("search", {"query": ""})
        assert error_of(error)["code"] == "bad_request"
    assert assert_pure_jsonrpc(capture) >= 6
    # --root keeps the workspace in the user data dir, keyed by the folder
    assert list((Path(child_env["XDG_DATA_HOME"]) / "context-harness" / "roots").glob("docs-*/ctx.sqlite"))


async def test_console_script_with_config_legacy_handshake(tmp_path, config_file, child_env):
    capture = tmp_path / "stdout.bin"
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(TEE), str(capture), str(BIN / "context-harness"),
                                         "--config", str(config_file)], env=child_env)
    async with Client(params, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_capabilities.tools.list_changed
        await wait_for_documents(client, 3)
        result = await client.call_tool("search", {"query": "claude desktop config"})
        assert result.structured_content["results"][0]["source_id"] == "claude.md"
        templates = (await client.list_resource_templates()).resource_templates
        assert templates[0].uri_template == "ctx://documents/{id}"
    assert assert_pure_jsonrpc(capture) >= 5


async def test_bad_config_fails_fast_on_stderr(tmp_path, child_env):
    bad = tmp_path / "bad.toml"
    bad.write_text("[server]\nsync_on_strat = true\n", encoding="utf-8")
    with anyio.fail_after(60):
        proc = await anyio.run_process([str(BIN / "context-harness"), "--config", str(bad)], env=child_env,
                                       check=False, input=b"")
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert b"sync_on_strat" in proc.stderr and b"Traceback" not in proc.stderr


async def test_related_and_recent_over_stdio(tmp_path, docs, child_env):
    """A page's backlinks and the change log, asked for by a real client of the real server."""
    (docs / "index.md").write_text("# Index\n\nStart at [Tantivy](tantivy.md) and [[Lua sandbox]]; "
                                   "see also [[nowhere]].\n", encoding="utf-8")
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--root", str(docs)],
                                   env=child_env)
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["related"].annotations.read_only_hint and tools["recent"].annotations.read_only_hint
        await wait_for_documents(client, 4)
        found = await client.call_tool("search", {"query": "tantivy notes full-text"})
        tantivy = next(r for r in found.structured_content["results"] if r["source_id"] == "tantivy.md")
        related = (await client.call_tool("related", {"id": tantivy["id"]})).structured_content
        assert [(i["source_id"], i["why"]) for i in related["linked_from"]] == [("index.md", "linked_from")]
        index_id = related["linked_from"][0]["id"]
        out = await client.call_tool("related", {"id": index_id})
        assert {i["source_id"] for i in out.structured_content["links_to"]} == {"tantivy.md", "lua/sandbox.md"}
        assert out.structured_content["unresolved"] == [{"kind": "wiki", "target": "nowhere"}]
        assert "Linked from" in out.content[0].text and "nowhere" in out.content[0].text
        recent = (await client.call_tool("recent", {"since": "1h", "limit": 10})).structured_content["changes"]
        assert {(c["source_id"], c["change"]) for c in recent} >= {("index.md", "added"), ("tantivy.md", "added")}
        bad = await client.call_tool("recent", {"since": "someday"})
        assert error_of(bad)["code"] == "bad_request" and "since" in error_of(bad)["message"]
        missing = await client.call_tool("related", {"id": "0" * 24})
        assert error_of(missing)["code"] == "not_found"
