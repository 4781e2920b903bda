"""The core offers tools, agents and the serving services itself: every rim is a view over these."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import (
    BadRequest,
    Forbidden,
    HarnessError,
    InternalError,
    MisdirectedHost,
    NotFound,
    Unauthorized,
    as_harness_error,
    outcome,
)
from context_harness.extensions import collect_extensions
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio

AGENT = "---\nname: helper\ndescription: Helps.\ntools: search\n---\nYou help.\n"
TOOL_V1 = 'tool = {name = "live", description = "v1"}\nfunction tool.execute() return "v1" end\nreturn tool\n'


def workspace(root: Path, server: str = "sync_on_start = false") -> config_mod.Config:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# Alpha\n\nThe alpha document talks about lanterns.\n", encoding="utf-8")
    (root / "agents").mkdir()
    (root / "agents" / "helper.md").write_text(AGENT, encoding="utf-8")
    (root / "ctx.toml").write_text(
        f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[server]\n{server}\n'
        '[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
    return config_mod.load(root / "ctx.toml")


async def test_tools_are_one_registry_offered_by_the_core(tmp_path: Path) -> None:
    async with Harness.open(workspace(tmp_path)) as harness:
        await harness.sync()
        names = [tool.name for tool in harness.tools()]
        assert names == ["search", "get", "sources", "recent", "related", "agent_list", "agent_get", "agent_inject",
                         "agent_run"]
        result = await harness.call_tool("search", {"query": "lanterns"})
        direct = await harness.search(SearchRequest(query="lanterns"))
        assert result.payload == direct.model_dump(mode="json")
        assert result.text.startswith("1 result:")
        with pytest.raises(BadRequest, match="bogus: unknown argument"):
            await harness.call_tool("search", {"query": "x", "bogus": 1})
        with pytest.raises(NotFound):
            await harness.call_tool("nope", {})
        assert [tool.name for tool in harness.tools("helper")] == ["search"]
        with pytest.raises(NotFound):
            await harness.call_tool("get", {"id": "x"}, agent="helper")
        with pytest.raises(NotFound):
            harness.tools("nobody")


async def test_agents_resolve_through_the_core(tmp_path: Path) -> None:
    class Searcher:
        name = "searcher"
        description = "Searches first."

        def resolve(self, arguments, context):
            hits = context.search({"query": "lanterns"})
            return f"Found {hits[0]['title']}"

    async with Harness.open(workspace(tmp_path), collect_extensions(agents=[Searcher()], discover=False)) as harness:
        await harness.sync()
        assert [(info.name, info.source) for info in harness.agents()] == [("helper", "markdown"),
                                                                          ("searcher", "python")]
        resolution = await harness.resolve_agent("searcher")
        assert resolution.prompt.system == "Found Alpha"
        assert (resolution.searches, resolution.fetches) == (1, 0) and resolution.ms > 0
        with pytest.raises(NotFound):
            await harness.resolve_agent("nobody")


async def test_serving_runs_sync_on_start_and_reloads_in_the_core(tmp_path: Path) -> None:
    config = workspace(tmp_path, server="sync_on_start = true")
    changes: list[str] = []
    async with Harness.open(config) as harness:
        harness.subscribe(changes.append)
        async with harness.serving(reload_interval=0.05):
            with anyio.fail_after(10):
                while "instructions" not in changes:
                    await anyio.sleep(0.02)
            assert "1 documents" in harness.describe()
            (tmp_path / "live.lua").write_text(TOOL_V1, encoding="utf-8")
            with (tmp_path / "ctx.toml").open("a", encoding="utf-8") as out:
                out.write('[tools.script.live]\npath = "live.lua"\n')
            with anyio.fail_after(10):
                while "tools" not in changes:
                    await anyio.sleep(0.02)
            assert (await harness.call_tool("live", {})).payload == {"result": "v1"}
        before = len(changes)
        await anyio.sleep(0.2)
        assert len(changes) == before  # the services stopped with the block


def test_the_error_table_covers_every_error_and_every_rim() -> None:
    def subclasses(cls: type) -> list[type]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    for cls in subclasses(HarnessError):
        row = outcome(cls("x") if cls is not InternalError else cls())
        assert row.http_status >= 400 and row.jsonrpc_code in (-32700, -32600, -32602, -32603)
    assert outcome(Unauthorized("x")).http_status == 401 and not outcome(Unauthorized("x")).mcp_tool_error
    assert (outcome(Forbidden("x")).http_status, outcome(MisdirectedHost("x")).http_status) == (403, 421)


def test_unknown_exceptions_become_internal_without_their_text(caplog: pytest.LogCaptureFixture) -> None:
    error = as_harness_error(RuntimeError("password=hunter2"), "a test")
    assert error.code == "internal" and "hunter2" not in error.message
    assert any("hunter2" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)
