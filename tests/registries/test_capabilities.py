"""A registry script runs with only what its manifest declares: host tables, hosts, variables.
Real git registries, the real Harness and Lua workers, and a page server on 127.0.0.1."""

from __future__ import annotations

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import ToolError, UnknownTool
from context_harness.registries import service
from support.registries import commit

pytestmark = pytest.mark.anyio


async def test_a_network_tool_is_absent_until_enabled_and_then_reaches_only_its_hosts(project, pages) -> None:
    config = config_mod.load_file(project.config)
    service.ensure(config)
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        names = {t.name for t in harness.tools()}
        assert "shout" in names and "fetch" not in names and "peek" not in names
        with pytest.raises(UnknownTool):
            await harness.call_tool("fetch", {"url": pages.url("hello.txt")})
    service.set_enabled(config_mod.load_file(project.config), "tools/fetch", True)
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        assert "fetch" in {t.name for t in harness.tools()}
        done = await harness.call_tool("fetch", {"url": pages.url("hello.txt")})
        assert done.payload["result"] == {"status": 200, "body": "hello from the declared host\n"}
        other = f"http://127.0.0.1:{pages.port + 1}/hello.txt"  # loopback is in http_allow; this port is not declared
        with pytest.raises(ToolError) as refused:
            await harness.call_tool("fetch", {"url": other})
        assert (f"http.get: host '127.0.0.1:{pages.port + 1}' is not declared in the manifest of tools/fetch "
                f"(registry community); hosts: 127.0.0.1:{pages.port}") in refused.value.message
    service.set_enabled(config_mod.load_file(project.config), "tools/fetch", False)
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        assert "fetch" not in {t.name for t in harness.tools()}


async def test_http_allow_still_applies_on_top_of_the_manifest(project, pages) -> None:
    text = project.config.read_text(encoding="utf-8").replace('http_allow = ["127.0.0.1"]', "http_allow = []")
    project.config.write_text(text, encoding="utf-8")
    service.set_enabled(config_mod.load_file(project.config), "tools/fetch", True)
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        with pytest.raises(ToolError, match="not in \\[lua\\] http_allow"):
            await harness.call_tool("fetch", {"url": pages.url("hello.txt")})


async def test_an_undeclared_table_is_a_clear_script_error(project) -> None:
    service.set_enabled(config_mod.load_file(project.config), "tools/peek", True)
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        with pytest.raises(ToolError) as env_error:
            await harness.call_tool("peek", {})
        assert ("env.get: not declared in the manifest of tools/peek (registry community); capabilities: http"
                in env_error.value.message)
        shouted = await harness.call_tool("shout", {"text": "hi"})  # the pure tables work
        assert shouted.payload["result"]["text"] == "HI" and len(shouted.payload["result"]["digest"]) == 64
        with pytest.raises(ToolError, match="context.search: not declared in the manifest of tools/shout "
                                            "\\(registry community\\); capabilities: none"):
            await harness.call_tool("shout", {"text": "search"})


async def test_the_users_own_script_keeps_every_table(project, tmp_path) -> None:
    script = tmp_path / "mine.lua"
    script.write_text('tool = {name = "mine", description = "reads HOME"}\n'
                      'function tool.execute(params, context) return {home = env.get("HOME") ~= nil, '
                      'ctx = type(context.search)} end\nreturn tool\n', encoding="utf-8")
    text = project.config.read_text(encoding="utf-8") + (
        f'\n[tools.script.mine]\npath = "{script.as_posix()}"\nenv = ["HOME"]\n')
    project.config.write_text(text, encoding="utf-8")
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        done = await harness.call_tool("mine", {})
        assert done.payload["result"] == {"home": True, "ctx": "function"}


async def test_an_explicit_table_pointing_into_a_registry_copy_keeps_the_grant(project) -> None:
    config = config_mod.load_file(project.config)
    known = service.ensure(config)
    script = known.store.checkout("community") / "tools" / "peek" / "tool.lua"
    project.config.write_text(project.config.read_text(encoding="utf-8") + (
        f'\n[tools.script.peek]\npath = "{script.as_posix()}"\nenv = ["HOME"]\n'), encoding="utf-8")
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        with pytest.raises(ToolError, match="env.get: not declared in the manifest of tools/peek"):
            await harness.call_tool("peek", {})


async def test_a_project_ctx_tool_gets_the_pure_tables_only_without_a_manifest(project) -> None:
    tools = project.folder / ".ctx" / "tools"
    tools.mkdir(parents=True)
    (tools / "local.lua").write_text('tool = {name = "local", description = "x"}\n'
                                     'function tool.execute() return http.get("http://127.0.0.1/") end\n'
                                     'return tool\n', encoding="utf-8")
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        with pytest.raises(ToolError, match="http.get: not declared in the manifest of tools/local "
                                            "\\(project .ctx/\\); capabilities: none"):
            await harness.call_tool("local", {})


async def test_update_of_a_script_does_not_run_until_accepted(project) -> None:
    config = config_mod.load_file(project.config)
    service.ensure(config)
    commit(project.registry, {"tools/shout/tool.lua": 'tool = {name = "shout", description = "changed"}\n'
                              'function tool.execute() return "v2" end\nreturn tool\n'})
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        assert (await harness.call_tool("shout", {"text": "x"})).payload["result"]["text"] == "X"
    service.update(config_mod.load_file(project.config), None, accept=True)
    async with Harness.open(config_mod.load_file(project.config)) as harness:
        assert (await harness.call_tool("shout", {})).payload["result"] == "v2"
