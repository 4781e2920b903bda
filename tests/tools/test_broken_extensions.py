"""One broken extension never takes the server down: a Lua tool, Lua connector or agent file (Lua,
Markdown, TOML) that does not load at start is set aside as unavailable with its error, like an
unset ``${VAR}``; everything else serves, and fixing the file brings it back by reload."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.cli import run_ctx

GOOD_TOOL = 'tool = {description = "fixed"} function tool.execute() return "fixed" end'
GOOD_CONNECTOR = 'connector = {} function connector.scan() return {{source_id = "n1", body = "zebra notes"}} end'
GOOD_LUA_AGENT = ('agent = {description = "fixed agent"} '
                  'function agent.resolve() return {system = "fixed", messages = {}} end')
BROKEN_FILES = {
    "tools/broken.lua": 'tool = {description = "broken" function',  # syntax error
    "tools/throws.lua": 'error("top level fails")',  # error at load
    "tools/nometa.lua": "tool = 42",  # bad metadata
    "connectors/feed.lua": "connector = {",  # syntax error
    "agents/lua_agent.lua": "agent = {description = 7}",  # bad metadata
    "agents/md/bad.md": "---\nname: bad\ndescription: [1, 2]\n---\nbody\n",  # description not a string
    "agents/md/good.md": "---\nname: good\ndescription: a good agent\n---\nBe good.\n",
}
EXTRA = """
[tools.script.broken]
path = "tools/broken.lua"
[tools.script.throws]
path = "tools/throws.lua"
[tools.script.nometa]
path = "tools/nometa.lua"
[tools.script.search]
path = "tools/modes.lua"
[connectors.script.feed]
path = "connectors/feed.lua"
[agents]
paths = ["agents/md"]
[agents.script.lua_agent]
path = "agents/lua_agent.lua"
[agents.inline_bad]
description = "skills it does not have"
system_prompt = "x"
skills = ["nowhere"]
"""


def touch(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    stamp = time.time() + 1
    os.utime(path, (stamp, stamp))


@pytest.fixture
def broken_config(tmp_path: Path, make_tools_workspace) -> Path:
    config_path = make_tools_workspace(tmp_path, EXTRA)
    for rel, text in BROKEN_FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return config_path


def unavailable_names(listing: dict) -> dict[str, str]:
    return {u["name"]: u["message"] for u in listing.get("unavailable", [])}


@pytest.mark.anyio
async def test_broken_files_are_set_aside_and_the_rest_serves(broken_config: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        harness_cm = Harness.open(config_mod.load(broken_config))
        async with harness_cm as harness:
            await harness.sync()
            catalog = harness.catalog
            missing = unavailable_names(catalog.tool_listing())
            assert set(missing) == {"broken", "throws", "nometa", "search"}
            assert "broken.lua" in missing["broken"] and "fix the file" in missing["broken"]
            assert "top level fails" in missing["throws"]
            assert "is a built-in tool" in missing["search"]
            assert {"echo", "modes", "search", "get", "sources"} <= set(catalog.toolset.names())
            assert catalog.tool("search").builtin  # the built-in keeps its name

            agents = {u.name: u.message for u in catalog.agent_library.unavailable()}
            assert set(agents) == {"lua_agent", "bad", "inline_bad"}
            assert "description must be a string" in agents["bad"]
            assert "unknown skill 'nowhere'" in agents["inline_bad"]
            assert [a.name for a in catalog.agents()] == ["good"]

            sources = {s.name: s for s in (await harness.sources()).sources}
            assert sources["script:feed"].healthy is False
            assert "feed.lua" in (sources["script:feed"].notes or "")
            assert sources["filesystem:docs"].document_count == 2
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for name in ("Lua tool broken is unavailable", "connector script:feed is unavailable",
                 "agent bad is unavailable", "agent lua_agent is unavailable"):
        assert name in logged


@pytest.mark.anyio
async def test_fixing_the_files_brings_them_back_without_a_restart(broken_config: Path) -> None:
    root = broken_config.parent
    async with Harness.open(config_mod.load(broken_config)) as harness:
        server = build_server(harness)
        async with harness.serving(reload_interval=0.05), Client(server) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "broken" not in names and "echo" in names
            result = await client.call_tool("broken", {})
            assert result.is_error and "broken.lua" in str(result.content[0].text)
            assert [p.name for p in (await client.list_prompts()).prompts] == ["good"]

            touch(root / "tools/broken.lua", GOOD_TOOL)
            touch(root / "agents/lua_agent.lua", GOOD_LUA_AGENT)
            touch(root / "agents/md/bad.md", "---\nname: bad\ndescription: now fine\n---\nFine.\n")
            touch(root / "connectors/feed.lua", GOOD_CONNECTOR)
            with anyio.fail_after(10):
                while "broken" not in {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}:
                    await anyio.sleep(0.05)
            assert (await client.call_tool("broken", {})).structured_content == {"result": "fixed"}
            with anyio.fail_after(10):
                while len((await client.list_prompts()).prompts) < 3:
                    await anyio.sleep(0.05)
            assert [p.name for p in (await client.list_prompts()).prompts] == ["bad", "good", "lua_agent"]
            assert {u.name for u in harness.catalog.agent_library.unavailable()} == {"inline_bad"}
            assert set(unavailable_names(harness.catalog.tool_listing())) == {"throws", "nometa", "search"}

            sources = {s.name: s for s in (await harness.sources()).sources}
            assert sources["script:feed"].healthy is True
            await harness.sync("script:feed")
            found = await client.call_tool("search", {"query": "zebra"})
            assert found.structured_content["results"][0]["source_id"] == "n1"


def test_ctx_tool_and_agent_list_name_broken_files(broken_config: Path) -> None:
    done = run_ctx("tool", "list", "--config", str(broken_config), cwd=broken_config.parent)
    assert done.returncode == 0, done.stderr
    assert "broken  [lua; UNAVAILABLE]" in done.stdout
    assert "echo  [lua" in done.stdout
    agents = run_ctx("agent", "list", "--config", str(broken_config), cwd=broken_config.parent)
    assert agents.returncode == 0, agents.stderr
    assert "bad  [UNAVAILABLE]  agent file" in agents.stdout and "good  [markdown]" in agents.stdout


@pytest.mark.slow
@pytest.mark.anyio
async def test_stdio_server_starts_with_a_broken_tool(broken_config: Path, child_env) -> None:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "context_harness", "--config", str(broken_config)], env=child_env)
    with anyio.fail_after(60):
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"search", "get", "sources", "echo"} <= names and "broken" not in names
            result = await client.call_tool("broken", {})
            assert result.is_error and "fix the file" in result.content[0].text
            touch(broken_config.parent / "tools/broken.lua", GOOD_TOOL)
            while "broken" not in {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}:
                await anyio.sleep(0.2)
            assert (await client.call_tool("broken", {})).structured_content == {"result": "fixed"}
