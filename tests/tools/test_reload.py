"""The tool set: built-ins and Lua tools side by side, name clashes, and reloads while serving
(changed script, changed config) announced to clients as tools/list_changed in both eras."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import anyio
import mcp.types as t
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError
from context_harness.server.mcp import build_server
from context_harness.tools.base import ToolChanges
from context_harness.tools.toolset import ToolSet

V1 = 'tool = {description = "v1"} function tool.execute() return "v1" end'
V2 = 'tool = {description = "v2", annotations = {readOnlyHint = true}} function tool.execute() return "v2" end'
BROKEN = 'tool = {description = "broken" function'


def touch(path: Path, text: str) -> None:
    """Rewrite ``path`` so that its content (what reloads compare) changes."""
    path.write_text(text, encoding="utf-8")
    stamp = time.time() + 1
    os.utime(path, (stamp, stamp))


@pytest.mark.anyio
async def test_builtins_and_lua_tools_register_the_same_way(tools_config_path: Path) -> None:
    async with Harness.open(config_mod.load(tools_config_path)) as harness:
        toolset = harness.catalog.toolset
        assert toolset.names() == ["search", "get", "sources", "recent", "related", "echo", "modes", "search_summary"]
        assert [t.builtin for t in toolset] == [True] * 5 + [False] * 3
        assert toolset.get("echo").annotations == {"readOnlyHint": True, "idempotentHint": True,
                                                    "openWorldHint": False}
        assert toolset.get("search").annotations == {"readOnlyHint": True, "openWorldHint": False,
                                                      "idempotentHint": True}
        with pytest.raises(ConfigError, match="already registered"):
            toolset.add(toolset.get("modes"))
    # no Harness attached: context.search is a clear script error, the rest works
    bare = ToolSet(config_mod.load(tools_config_path))
    bare.load_scripts()
    assert bare.get("echo").call_sync({"text": "a"}) == {"result": {"echo": "> a", "length": 1}}


@pytest.mark.anyio
async def test_a_lua_tool_may_not_shadow_a_builtin(tmp_path: Path, make_tools_workspace) -> None:
    config_path = make_tools_workspace(tmp_path, '\n[tools.script.search]\npath = "tools/modes.lua"\n')
    async with Harness.open(config_mod.load(config_path)) as harness:  # set aside; the built-in serves
        assert harness.catalog.tool("search").builtin
        missing = harness.catalog.tool_listing()["unavailable"]
        assert [u["name"] for u in missing] == ["search"] and "is a built-in tool" in missing[0]["message"]


@pytest.mark.anyio
async def test_reload_picks_up_scripts_and_config(tmp_path: Path, make_tools_workspace, caplog) -> None:
    script = tmp_path / "tools" / "live.lua"
    config_path = make_tools_workspace(tmp_path, '\n[tools.script.live]\npath = "tools/live.lua"\n')
    script.write_text(V1)
    async with Harness.open(config_mod.load(config_path)) as harness:
        toolset = harness.catalog.toolset
        check_reloads(toolset, script, config_path, caplog)


def check_reloads(toolset: ToolSet, script: Path, config_path: Path, caplog) -> None:
    assert not toolset.reload()
    assert toolset.get("live").call_sync({}) == {"result": "v1"}

    touch(script, V2)
    changes = toolset.reload()
    assert [t.name for t in changes.replaced] == ["live"] and not changes.added and not changes.removed
    assert toolset.get("live").call_sync({}) == {"result": "v2"}
    assert toolset.get("live").annotations == {"readOnlyHint": True}

    with caplog.at_level(logging.WARNING, logger="context_harness.tools.toolset"):
        touch(script, BROKEN)
        assert not toolset.reload()
        assert not toolset.reload()  # logged once, not every poll
    assert len([r for r in caplog.records if "live not reloaded" in r.getMessage()]) == 1
    assert toolset.get("live").call_sync({}) == {"result": "v2"}  # the previous version keeps serving
    touch(script, V1)
    assert [t.name for t in toolset.reload().replaced] == ["live"]

    text = config_path.read_text()
    touch(config_path, text + '\n[tools.script.live2]\npath = "tools/live.lua"\n')
    assert [t.name for t in toolset.reload().added] == ["live2"]
    touch(config_path, text.replace("[tools.script.live]", "[tools.script.renamed]"))
    changes = toolset.reload()
    assert sorted(changes.removed) == ["live", "live2"] and [t.name for t in changes.added] == ["renamed"]
    assert "live" not in toolset and "search" in toolset

    touch(config_path, "this is [not toml")
    assert not toolset.reload()
    assert "renamed" in toolset




@pytest.mark.anyio
async def test_changed_script_notifies_legacy_clients(tools_harness) -> None:
    server = build_server(tools_harness)
    script = tools_harness.config.tools.script["modes"].path
    seen: list[object] = []
    arrived = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, t.ToolListChangedNotification):
            seen.append(message)
            arrived.set()

    async with tools_harness.serving(reload_interval=0.05), Client(server, mode="legacy",
                                                                   message_handler=on_message) as client:
        before = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert before["modes"].description == "Modes for tests"
        touch(script, V2.replace("v2", "modes v2"))
        with anyio.fail_after(5):
            await arrived.wait()
        after = {tool.name: tool for tool in (await client.list_tools(cache_mode="refresh")).tools}
        assert after["modes"].description == "modes v2"
        assert after["modes"].annotations.read_only_hint is True
        result = await client.call_tool("modes", {})
        assert result.structured_content == {"result": "modes v2"}


@pytest.mark.anyio
async def test_changed_config_notifies_modern_clients(tools_harness) -> None:
    server = build_server(tools_harness)
    config_path = tools_harness.config.source_path
    async with tools_harness.serving(reload_interval=0.05), Client(server) as client:
        assert "added" not in {tool.name for tool in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as subscription:
            touch(config_path, config_path.read_text() + '\n[tools.script.added]\npath = "tools/modes.lua"\n')
            with anyio.fail_after(5):
                event = await subscription.__anext__()
            assert isinstance(event, ToolsListChanged)
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "added" in names
        result = await client.call_tool("added", {"mode": "ok"})
        assert result.structured_content["result"]["mode"] == "ok"


def test_overlapping_reloads_announce_a_change_once(tmp_path: Path, make_tools_workspace) -> None:
    """The watcher and the console may reload at the same moment: the change is applied and announced
    once, and the toolset ends up with the new version."""
    script = tmp_path / "tools" / "live.lua"
    config_path = make_tools_workspace(tmp_path, '\n[tools.script.live]\npath = "tools/live.lua"\n')
    script.write_text(V1)
    toolset = ToolSet(config_mod.load(config_path))
    toolset.load_scripts()
    for round_ in range(5):
        touch(script, V1 if round_ % 2 else V2)
        start: threading.Barrier = threading.Barrier(4)
        results: list[ToolChanges] = []

        def reload(start: threading.Barrier = start, results: list[ToolChanges] = results) -> None:
            start.wait()
            results.append(toolset.reload())

        threads = [threading.Thread(target=reload) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert sorted(len(changes.replaced) for changes in results) == [0, 0, 0, 1]
        assert toolset.get("live").call_sync({}) == {"result": "v1" if round_ % 2 else "v2"}
