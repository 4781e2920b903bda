"""Agents through the real MCP client in memory, both protocol eras: prompts (list, get, required
arguments, completion), the agent tools, resources with paging, list_changed on file change, the Lua
resolve timeout, tool scoping and extensions registered in code."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
import pytest
from mcp import Client, MCPError
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.paths import REPO
from support.results import payload_of

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


# -- prompts ------------------------------------------------------------------------------------

async def test_agents_mcp_prompts_list_and_get(served, mode) -> None:
    async with Client(build_server(served), mode=mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert list(prompts) == ["debugger", "responder", "reviewer"]
        [language] = prompts["reviewer"].arguments
        assert (language.name, language.description, language.required) == ("language", "Language", True)
        assert [(a.name, a.required) for a in prompts["responder"].arguments] == [("service", True), ("mode", False)]
        assert prompts["debugger"].description.startswith("Debugging specialist")

        got = await client.get_prompt("reviewer", {"language": "lua"})
        assert got.description == "Reviews code against the conventions."
        [first] = got.messages
        assert first.role == "user"
        text = first.content.text
        assert text.startswith('<instructions agent="reviewer">\nYou review lua code.')
        assert "## Active Skills\n\n### checklist\n\nCheck the tests." in text
        assert text.endswith("</instructions>\n\nFollow these instructions for the rest of this conversation.")

        lua = await client.get_prompt("responder", {"service": "search"})
        assert [m.role for m in lua.messages] == ["user", "user"]
        assert "Incident on search. Runbook: Runbook: search down" in lua.messages[0].content.text
        assert lua.messages[1].content.text == "Found 2 documents."

        claude = await client.get_prompt("debugger", {})
        assert "You are an expert debugger" in claude.messages[0].content.text


@pytest.mark.parametrize(("name", "arguments", "fragment"), [
    ("reviewer", {}, "missing required argument(s): language"),
    ("responder", {"mode": "ok"}, "missing required argument(s): service"),
    ("reviewer", {"language": "cobol"}, "must be one of python, lua, go"),
    ("reviewer", {"language": "lua", "extra": "x"}, "unknown argument 'extra'"),
    ("nobody", {}, "Unknown prompt: nobody"),
])
async def test_agents_mcp_prompt_errors_are_protocol_errors(served, mode, name, arguments, fragment) -> None:
    async with Client(build_server(served), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt(name, arguments)
    assert fragment in caught.value.error.message
    assert caught.value.error.code == t.INVALID_PARAMS


async def test_agents_mcp_prompt_lua_timeout_and_failure(served, mode) -> None:
    async with Client(build_server(served), mode=mode) as client:
        started = time.monotonic()
        with pytest.raises(MCPError) as timeout:
            await client.get_prompt("responder", {"service": "x", "mode": "spin"})
        assert time.monotonic() - started < 3
        assert "timed out" in timeout.value.error.message
        assert timeout.value.error.data["code"] == "timeout"
        with pytest.raises(MCPError) as failed:
            await client.get_prompt("responder", {"service": "x", "mode": "error"})
        assert failed.value.error.data["code"] == "agent_error"
        assert "Traceback" not in failed.value.error.message
        ok = await client.get_prompt("responder", {"service": "search"})  # still serving
        assert ok.messages


async def test_agents_mcp_completion(served, mode) -> None:
    async with Client(build_server(served), mode=mode) as client:
        assert client.server_capabilities.completions is not None
        ref = t.PromptReference(name="reviewer")
        assert (await client.complete(ref, {"name": "language", "value": "l"})).completion.values == ["lua"]
        assert (await client.complete(ref, {"name": "language", "value": ""})).completion.values == [
            "python", "lua", "go"]
        mode_ref = t.PromptReference(name="responder")
        assert (await client.complete(mode_ref, {"name": "service", "value": "s"})).completion.values == []
        with pytest.raises(MCPError):
            await client.complete(t.PromptReference(name="nobody"), {"name": "x", "value": ""})


# -- tools --------------------------------------------------------------------------------------

async def call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
    result = await client.call_tool(name, arguments)
    return bool(result.is_error), payload_of(result), result.content[0].text


async def test_agents_mcp_tools_success(served, mode) -> None:
    async with Client(build_server(served), mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"agent_list", "agent_get", "agent_inject"} <= set(tools)
        for name in ("agent_list", "agent_get"):
            hints = tools[name].annotations
            assert hints.read_only_hint is True and hints.open_world_hint is False
        inject = tools["agent_inject"].annotations  # a Lua agent may call http.*: stated, not hidden
        assert inject.read_only_hint is False and inject.open_world_hint is True
        assert inject.destructive_hint is False
        assert tools["agent_inject"].input_schema["properties"]["format"]["enum"] == ["compiled", "structured"]

        error, listed, _ = await call(client, "agent_list", {})
        assert not error and listed == {"agents": [
            {"name": "debugger", "description": listed["agents"][0]["description"]},
            {"name": "responder", "description": "Pre-searches runbooks"},
            {"name": "reviewer", "description": "Reviews code against the conventions."}]}

        error, definition, _ = await call(client, "agent_get", {"name": "debugger"})
        assert not error
        assert definition["source"] == "markdown" and definition["tools"] == ["Read", "Edit", "Bash", "Grep", "Glob"]
        assert definition["metadata"] == {"model": "sonnet", "color": "red"}
        assert definition == json.loads((await client.read_resource("agent://debugger")).contents[0].text)

        error, compiled, text = await call(client, "agent_inject", {"name": "reviewer", "arguments": {"language": "go"}})
        assert not error and compiled["name"] == "reviewer"
        assert text == compiled["compiled"]
        assert text.startswith('You are now acting as the agent "reviewer".')
        assert "You review go code.\n\n## Active Skills\n\n### checklist" in text

        error, structured, _ = await call(client, "agent_inject", {"name": "responder", "format": "structured",
                                                                   "arguments": {"service": "search"}})
        assert not error
        assert set(structured) == {"name", "system", "skills", "tools", "messages"}
        assert structured["tools"] == ["search", "get"]
        assert structured["messages"] == [{"role": "user", "content": "Found 2 documents."}]


@pytest.mark.parametrize(("tool", "arguments", "code", "fragment"), [
    ("agent_get", {"name": "nobody"}, "not_found", "unknown agent 'nobody'"),
    ("agent_get", {}, "bad_request", "name: required"),
    ("agent_inject", {"name": "nobody"}, "not_found", "unknown agent"),
    ("agent_inject", {"name": "reviewr", "arguments": {"language": "go"}}, "not_found", "did you mean 'reviewer'"),
    ("agent_inject", {"name": "reviewer", "format": "yaml", "arguments": {"language": "go"}}, "bad_request",
     "format must be one of compiled, structured"),
    ("agent_inject", {"name": "reviewer"}, "bad_request", "missing required argument 'language'"),
    ("agent_inject", {"name": "reviewer", "arguments": "go"}, "bad_request", "arguments: expected an object"),
    ("agent_inject", {"name": "reviewer", "bogus": 1}, "bad_request", "bogus: unknown argument"),
    ("agent_list", {"x": 1}, "bad_request", "x: unknown argument"),
    ("agent_inject", {"name": "responder", "arguments": {"service": "x", "mode": "spin"}}, "timeout", "timed out"),
    ("agent_inject", {"name": "responder", "arguments": {"service": "x", "mode": "error"}}, "agent_error", ""),
    ("agent_inject", {"name": "responder", "arguments": {"service": "x", "mode": "bad"}}, "agent_error",
     "invalid prompt"),
])
async def test_agents_mcp_tool_errors_are_tool_results(served, mode, tool, arguments, code, fragment) -> None:
    async with Client(build_server(served), mode=mode) as client:
        error, payload, text = await call(client, tool, arguments)
    assert error is True
    assert payload["error"]["code"] == code
    assert fragment in payload["error"]["message"]
    assert json.loads(text) == payload and "Traceback" not in text


async def test_agents_mcp_tools_hidden_and_static_annotations(tmp_path, make_served) -> None:
    hidden = config_mod.load_file(make_served(tmp_path / "a", "agent_tools = false"))
    async with Harness.open(hidden) as harness, Client(build_server(harness)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"search", "get", "sources", "recent", "related"}
        assert [p.name for p in (await client.list_prompts()).prompts] == ["debugger", "responder", "reviewer"]

    static_root = tmp_path / "b"
    path = make_served(static_root)
    path.write_text(path.read_text().split("[agents.script.responder]")[0], encoding="utf-8")
    async with Harness.open(config_mod.load_file(path)) as harness, Client(build_server(harness)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        hints = tools["agent_inject"].annotations  # only static agents: resolving reads nothing, writes nothing
        assert hints.read_only_hint is True and hints.open_world_hint is False

    empty = tmp_path / "c"
    empty.mkdir()
    (empty / "ctx.toml").write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n')
    async with Harness.open(config_mod.load_file(empty / "ctx.toml")) as harness, Client(build_server(harness)) as c:
        assert {tool.name for tool in (await c.list_tools()).tools} == {"search", "get", "sources", "recent", "related"}
        assert (await c.list_prompts()).prompts == []


# -- resources ----------------------------------------------------------------------------------

def many_agents(root: Path, count: int, page_size: int | None = None) -> config_mod.Config:
    lines = ['[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[agents]']
    if page_size is not None:
        lines.append(f"page_size = {page_size}")
    for i in range(count):
        lines.append(f'[agents.a{i:02d}]\ndescription = "Agent {i}"\nsystem_prompt = "You are agent {i}."')
    root.mkdir(parents=True, exist_ok=True)
    (root / "ctx.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config_mod.load_file(root / "ctx.toml")


async def test_agents_mcp_resources_paging_over_45_agents(tmp_path, mode) -> None:
    async with Harness.open(many_agents(tmp_path, 45)) as harness:
        async with Client(build_server(harness), mode=mode) as client:
            pages, cursor = [], None
            while True:
                result = await client.list_resources(cursor=cursor, cache_mode="refresh")
                pages.append(result.resources)
                cursor = result.next_cursor
                if cursor is None:
                    break
                assert not cursor.isdigit()  # opaque
            assert [len(p) for p in pages] == [20, 20, 5]
            uris = [r.uri for page in pages for r in page]
            assert uris == [f"agent://a{i:02d}" for i in range(45)]  # sorted, no duplicates, no gaps
            assert {r.mime_type for page in pages for r in page} == {"application/json"}
            assert pages[0][3].description == "Agent 3"

            read = await client.read_resource("agent://a07")
            [content] = read.contents
            assert content.mime_type == "application/json"
            assert json.loads(content.text) == {
                "name": "a07", "description": "Agent 7", "source": "toml", "tools": [], "arguments": [],
                "skills": [], "system_prompt": "You are agent 7."}
            with pytest.raises(MCPError):
                await client.read_resource("agent://nobody")
            with pytest.raises(MCPError):
                await client.list_resources(cursor="not-a-cursor", cache_mode="refresh")
            for cursor in ("²", "١٢"):  # digits to str.isdigit, not to int(): a client's error, not internal
                with pytest.raises(MCPError) as refused:
                    await client.list_resources(cursor=cursor, cache_mode="refresh")
                assert refused.value.code == -32602, refused.value.error
                with pytest.raises(MCPError) as refused:
                    await client.list_resource_templates(cursor=cursor)
                assert refused.value.code == -32602, refused.value.error
            # documents keep their template next to the agent catalog
            templates = (await client.list_resource_templates()).resource_templates
            assert [x.uri_template for x in templates] == ["ctx://documents/{id}"]


async def test_agents_mcp_resources_page_size_and_skills(served, tmp_path) -> None:
    async with Client(build_server(served)) as client:
        listed = await client.list_resources()
        catalog = [r.uri for r in listed.resources if not r.uri.startswith("ctx://documents/")]
        assert catalog == ["skill://checklist", "agent://debugger", "agent://responder", "agent://reviewer"]
        assert [r.uri for r in listed.resources[:4]] == catalog  # the documents follow the catalog
        skill = json.loads((await client.read_resource("skill://checklist")).contents[0].text)
        assert skill == {"name": "checklist", "description": "A review checklist.", "instructions": "Check the tests."}
    async with Harness.open(many_agents(tmp_path / "p", 12, page_size=5)) as harness:
        async with Client(build_server(harness)) as client:
            first = await client.list_resources()
            assert len(first.resources) == 5 and first.next_cursor


# -- list_changed when agent files change --------------------------------------------------------

def touch(path: Path, text: str) -> None:
    """Rewrite ``path`` and move its mtime forward (coarse file-system clocks)."""
    path.write_text(text, encoding="utf-8")
    stamp = time.time() + 2
    os.utime(path, (stamp, stamp))


async def test_agents_mcp_list_changed_legacy(served, served_config) -> None:
    server = build_server(served)
    kinds: set[str] = set()
    arrived = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, t.PromptListChangedNotification):
            kinds.add("prompts")
        elif isinstance(message, t.ResourceListChangedNotification):
            kinds.add("resources")
        if kinds == {"prompts", "resources"}:
            arrived.set()

    debugger = served_config.parent / "agents" / "debugger.md"
    async with served.serving(reload_interval=0.05), Client(server, mode="legacy", message_handler=on_message) as client:
        before = {p.name: p for p in (await client.list_prompts()).prompts}
        assert before["debugger"].description.startswith("Debugging specialist")
        touch(debugger, debugger.read_text().replace("Debugging specialist", "Bug hunter"))
        with anyio.fail_after(5):
            await arrived.wait()
        after = {p.name: p for p in (await client.list_prompts(cache_mode="refresh")).prompts}
        assert after["debugger"].description.startswith("Bug hunter")
        definition = json.loads((await client.read_resource("agent://debugger")).contents[0].text)
        assert definition["description"].startswith("Bug hunter")


async def test_agents_mcp_list_changed_modern_new_agent(served, served_config) -> None:
    server = build_server(served)
    async with served.serving(reload_interval=0.05), Client(server) as client:
        async with client.listen(prompts_list_changed=True, resources_list_changed=True) as subscription:
            touch(served_config.parent / "agents" / "planner.md",
                  "---\nname: planner\ndescription: Plans work.\n---\nYou plan.\n")
            seen: set[type] = set()
            with anyio.fail_after(5):
                while seen != {PromptsListChanged, ResourcesListChanged}:
                    seen.add(type(await subscription.__anext__()))
        assert "planner" in [p.name for p in (await client.list_prompts(cache_mode="refresh")).prompts]
        listed = await call(client, "agent_list", {})
        assert "planner" in [a["name"] for a in listed[1]["agents"]]


# -- tool scoping -------------------------------------------------------------------------------

async def test_agents_mcp_serve_one_agent_scopes_tools(served, mode) -> None:
    async with Client(build_server(served, agent="responder"), mode=mode) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["search", "get"]
        assert "Serving agent 'responder'" in client.instructions
        with pytest.raises(MCPError):
            await client.call_tool("sources", {})
    async with Client(build_server(served, agent="reviewer"), mode=mode) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["search"]
    from context_harness.errors import NotFound

    with pytest.raises(NotFound, match="unknown agent 'nobody'"):
        build_server(served, agent="nobody")


# -- extensions registered in code ---------------------------------------------------------------

@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(REPO / "examples" / "python-extension"))
    for name in [m for m in sys.modules if m == "ctxh_example" or m.startswith("ctxh_example.")]:
        monkeypatch.delitem(sys.modules, name)
    import ctxh_example

    return ctxh_example


async def test_agents_mcp_extension_registered_in_code(served_config, example, mode) -> None:
    from context_harness.extensions import prepare_server

    config = config_mod.load_file(served_config)
    changelog = served_config.parent / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## 1.2.0\n\nAdded the release-notes agent.\n", encoding="utf-8")
    setup = prepare_server(config, agents=[example.ReleaseNotesAgent()], tools=[example.WordCount()],
                           connectors=[example.ChangelogConnector("changes", {"path": str(changelog)}, config)],
                           discover=False)
    async with Harness.open(config, setup.extensions) as harness:
        await harness.sync()
        async with Client(build_server(harness), mode=mode) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"word_count", "agent_inject", "search"} <= tools
            counted = await client.call_tool("word_count", {"text": "three small words"})
            assert counted.structured_content == {"words": 3, "characters": 17}
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert [(a.name, a.required) for a in prompts["release-notes"].arguments] == [
                ("version", True), ("audience", False)]
            got = await client.get_prompt("release-notes", {"version": "1.2.0"})
            text = got.messages[0].content.text
            assert text.startswith('<instructions agent="release-notes">\nYou write release notes for version 1.2.0')
            assert "Changes in 1.2.0" in text  # its search found the connector's document
            completion = await client.complete(t.PromptReference(name="release-notes"),
                                               {"name": "audience", "value": "d"})
            assert completion.completion.values == ["developers"]
        async with Client(build_server(harness, agent="release-notes")) as client:
            assert sorted(tool.name for tool in (await client.list_tools()).tools) == ["get", "search", "word_count"]
