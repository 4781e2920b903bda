"""The shipped examples (examples/lua) end to end: the JSON API connector syncs through the Harness
from a local HTTP server on 127.0.0.1, and the tools run over MCP against what it indexed."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.paths import REPO
from support.results import error_of

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_examples_through_harness_and_mcp(tmp_path: Path, make_tools_workspace, api_url: str, mode: str) -> None:
    examples = REPO / "examples" / "lua"
    config_path = make_tools_workspace(tmp_path, f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.articles]
path = "{examples.as_posix()}/json_api_connector.lua"
url = "{api_url}/articles"
max_pages = 10
""")
    async with Harness.open(config_mod.load(config_path)) as harness:
        report = await harness.sync()
        by_source = {s.source: s for s in report.sources}
        assert by_source["script:articles"].added == 5 and by_source["script:articles"].skipped == 0
        again = await harness.sync("script:articles")
        assert again.sources[0].unchanged == 5 and again.sources[0].added == 0

        async with Client(build_server(harness), mode=mode) as client:
            sources = (await client.call_tool("sources", {})).structured_content["sources"]
            assert {"name": "script:articles", "document_count": 5}.items() <= next(
                s for s in sources if s["name"] == "script:articles").items()

            summary = await client.call_tool("search_summary", {"query": "quokka husbandry", "limit": 2,
                                                                "source": "script:articles"})
            assert not summary.is_error, summary.structured_content
            result = summary.structured_content["result"]
            assert result["count"] == 2
            assert all(d["source_url"].startswith("https://example.test/a/") for d in result["documents"])
            assert "explains quokka husbandry" in result["summary"]

            none = await client.call_tool("search_summary", {"query": "zebra"})
            assert none.structured_content["result"]["count"] == 0

            semantic = await client.call_tool("search_summary", {"query": "quokka", "mode": "semantic"})
            assert error_of(semantic)["code"] == "tool_error"
            message = error_of(semantic)["message"]
            assert "context.search" in message and "embeddings" in message and "disabled" in message

            echo = await client.call_tool("echo", {"text": "quokka", "case": "upper"})
            assert echo.structured_content == {"result": {"echo": "> QUOKKA", "length": 6}}
