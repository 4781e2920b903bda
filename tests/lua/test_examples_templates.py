"""The shipped examples (examples/lua) and the `ctx tool init` / `ctx connector init` templates run."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from context_harness.config import LuaConfig, ScriptConfig
from context_harness.connectors.base import ScanReport
from context_harness.errors import BadRequest, ToolError
from context_harness.lua.connector import LuaConnector
from context_harness.lua.templates import config_snippet, render_connector, render_tool
from context_harness.lua.tools import LuaTool
from support.paths import REPO

EXAMPLES = REPO / "examples" / "lua"


def test_echo_example() -> None:
    tool = LuaTool("echo", ScriptConfig(path=EXAMPLES / "echo.lua", prefix="> "), LuaConfig())
    assert tool.annotations["readOnlyHint"] is True
    assert tool.call({"text": "hi", "repeat": 2, "case": "upper"}) == {"echo": "> HI HI", "length": 5}
    assert tool.call({"text": "x"}) == {"echo": "> x", "length": 1}
    with pytest.raises(ToolError, match="repeat must be between 1 and 100"):
        tool.call({"text": "x", "repeat": 0})
    with pytest.raises(BadRequest, match="case"):
        tool.call({"text": "x", "case": "title"})
    assert tool.parse_cli_params(["text=hello", "repeat=3"]) == {"text": "hello", "repeat": 3}


def test_search_summary_example(fake_context: Any) -> None:
    tool = LuaTool("search_summary", ScriptConfig(path=EXAMPLES / "search_summary.lua", max_chars=40), LuaConfig())
    result = tool.call({"query": "lua", "limit": 2}, fake_context)
    assert result["count"] == 2
    assert [d["id"] for d in result["documents"]] == ["d1", "d2"]
    assert "1. **Lua sandbox** (filesystem:docs, score 0.91)" in result["summary"]
    assert "The Lua sandbox removes io and os." in result["summary"]
    assert fake_context.requests[0] == {"query": "lua", "mode": "keyword", "limit": 2}
    only = tool.call({"query": "lua", "source": "script:api"}, fake_context)
    assert only["count"] == 1 and fake_context.requests[-1]["filters"] == {"source": "script:api"}
    fake_context.docs.clear()
    assert tool.call({"query": "zzz"}, fake_context)["count"] == 0


def test_json_api_connector_example(http_server: Any) -> None:
    http_server.server.require_token = True
    config = ScriptConfig(path=EXAMPLES / "json_api_connector.lua", url=f"{http_server.url}/articles",
                          token="s3cret", max_pages=10)
    conn = LuaConnector("articles", config, LuaConfig(http_allow=["127.0.0.1"]))
    report = ScanReport()
    items = [c.load() for c in conn.scan(report)]
    assert [i.source_id for i in items] == ["0", "1", "2", "3", "4"]
    first = items[0]
    assert first.title == "Article 0" and first.author == "ann" and first.source_url == "https://example.test/a/0"
    assert first.tags == ["news", "t0"] and first.metadata == {"api_page": 1}
    assert first.updated_at == dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
    assert first.created_at == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert len([r for r in http_server.requests if r["path"] == "/articles"]) == 3
    assert report.skipped == {}

    bad = LuaConnector("articles", ScriptConfig(path=config.path, url=f"{http_server.url}/articles"),
                       LuaConfig(http_allow=["127.0.0.1"]))
    with pytest.raises(ToolError, match="returned HTTP 401"):
        list(bad.scan(ScanReport()))


def test_tool_template_runs_as_generated(tmp_path: Path, fake_context: Any) -> None:
    path = tmp_path / "tools" / "my-tool.lua"
    path.parent.mkdir()
    path.write_text(render_tool("my-tool"))
    tool = LuaTool("my-tool", ScriptConfig(path=path, greeting="Hi"), LuaConfig())
    assert tool.annotations == {"readOnlyHint": True}
    result = tool.call({"text": "lua"}, fake_context)
    assert result["message"] == "Hi, lua" and [r["id"] for r in result["related"]] == ["d1", "d2"]
    assert tool.call({"text": "no context"}) == {"message": "Hi, no context", "related": {}}


def test_connector_template_runs_as_generated(tmp_path: Path, http_server: Any) -> None:
    path = tmp_path / "connectors" / "notes.lua"
    path.parent.mkdir()
    path.write_text(render_connector("notes"))
    items = LuaConnector("notes", ScriptConfig(path=path), LuaConfig()).fetch()
    assert [i.source_id for i in items] == ["welcome"] and items[0].updated_at is not None
    with pytest.raises(ToolError, match="returned HTTP 404"):
        LuaConnector("notes", ScriptConfig(path=path, url=f"{http_server.url}/missing"),
                     LuaConfig(http_allow=["127.0.0.1"])).fetch()


def test_template_names_and_snippets() -> None:
    assert config_snippet("tools", "echo", "tools/echo.lua") == '[tools.script.echo]\npath = "tools/echo.lua"\n'
    assert "${MY_API_API_TOKEN}" in render_connector("my-api")
    with pytest.raises(BadRequest):
        render_tool("bad name")
