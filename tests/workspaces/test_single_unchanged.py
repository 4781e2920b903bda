"""Single-workspace serving stays what it was beside ``--workspaces`` (issue 52): ``context-harness
--config FILE`` over stdio lists the same tools and gives the same search and get answers as the MCP
adapter over that workspace's own ``Harness`` in memory (the path that knows nothing of workspaces).
Both are computed now, so a tool changed on purpose changes both and the test still holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.paths import BIN
from support.workspace import KB_DOCS, config_toml, write_files

pytestmark = pytest.mark.anyio


async def answers(client: Client) -> dict[str, Any]:
    """What a client sees: the tool list, a search and a get, as JSON (byte-comparable)."""
    tools = (await client.list_tools()).tools
    search = await client.call_tool("search", {"query": "rust search engine", "mode": "keyword"})
    first = search.structured_content["results"][0]["id"]
    got = await client.call_tool("get", {"id": first})
    dump = [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in (search, got)]
    return {"tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools],
            "search": dump[0], "get": dump[1], "instructions": client.instructions}


async def test_single_workspace_tools_and_answers_are_unchanged(tmp_path: Path, child_env) -> None:
    write_files(tmp_path / "docs", KB_DOCS)
    path = tmp_path / "ctx.toml"
    path.write_text(config_toml(docs_root=str(tmp_path / "docs"), server="sync_on_start = false"), encoding="utf-8")
    async with Harness.open(config_mod.load_file(path)) as harness:
        await harness.sync()
        async with Client(build_server(harness)) as client:
            expected = await answers(client)
    params = StdioServerParameters(command=str(BIN / "context-harness"), args=["--config", str(path)], env=child_env)
    async with Client(params) as client:
        served = await answers(client)
    assert json.dumps(served, sort_keys=True) == json.dumps(expected, sort_keys=True)
    names = [tool["name"] for tool in served["tools"]]
    assert "workspaces" not in names
    search = next(tool for tool in served["tools"] if tool["name"] == "search")
    assert "workspace" not in search["inputSchema"]["properties"]
    assert all("workspace" not in hit for hit in served["search"]["structuredContent"]["results"])
