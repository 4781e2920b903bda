"""orchestr8 compatibility (``[server] compat = ["orchestr8"]``): its documented ``resources/list`` and
``resources/read`` requests replayed through the real MCP client (both protocol eras), with numeric
offset cursors, ``total``/``count`` in ``_meta``, its mimeTypes and definition fields; and the bounded
LRU of agent definitions (10,000 agents do not all stay in memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from context_harness import config as config_mod
from context_harness.agents.library import DEFINITION_CACHE, AgentLibrary
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.workspace import write_served

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
LIST_MIME = "application/vnd.orchestr8.agent"
READ_MIME = "application/vnd.orchestr8.agent+json"

ARCHITECT = """---
name: architect
description: Designs system architecture
model: haiku
capabilities: [system-design, scalability]
---
# Software Architect Agent

You design systems.
"""


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def catalog(root: Path, count: int, compat: str = '["orchestr8"]') -> config_mod.Config:
    """``count`` TOML agents a00..; ``architect`` as a Markdown agent with orchestr8's front matter."""
    lines = ['[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"',
             f"[server]\nsync_on_start = false\ncompat = {compat}", "[agents]"]
    lines += [f'[agents.a{i:05d}]\ndescription = "Agent {i}"\nsystem_prompt = "You are agent {i}."'
              for i in range(count)]
    root.mkdir(parents=True, exist_ok=True)
    (root / "agents").mkdir(exist_ok=True)
    (root / "agents" / "architect.md").write_text(ARCHITECT, encoding="utf-8")
    (root / "ctx.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config_mod.load_file(root / "ctx.toml")


async def test_orchestr8_resources_list_numeric_cursors_total_and_count(tmp_path, mode) -> None:
    async with Harness.open(catalog(tmp_path, 44)) as harness:
        async with Client(build_server(harness), mode=mode) as client:
            pages: list[Any] = []
            cursor = None
            while True:
                result = await client.list_resources(cursor=cursor, cache_mode="refresh")
                pages.append(result)
                cursor = result.next_cursor
                if cursor is None:
                    break
                assert cursor == str(20 * len(pages))  # orchestr8's offsets: "20", "40"
            assert [len(p.resources) for p in pages] == [20, 20, 5]
            assert [(p.meta["total"], p.meta["count"]) for p in pages] == [(45, 20), (45, 20), (45, 5)]
            uris = [r.uri for p in pages for r in p.resources]
            assert uris == sorted(uris, key=lambda u: u.removeprefix("agent://")) and len(set(uris)) == 45
            assert uris[0] == "agent://a00000" and "agent://architect" in uris
            assert {r.mime_type for p in pages for r in p.resources} == {LIST_MIME}
            first = pages[0].resources[3]
            assert (first.uri, first.name, first.description) == ("agent://a00003", "a00003", "Agent 3")

            # a client that computes its own offsets (orchestr8's cursor is an offset)
            jumped = await client.list_resources(cursor="40", cache_mode="refresh")
            assert [r.uri for r in jumped.resources] == uris[40:]
            beyond = await client.list_resources(cursor="4000", cache_mode="refresh")
            assert beyond.resources == [] and beyond.next_cursor is None
            with pytest.raises(MCPError):
                await client.list_resources(cursor="not-a-cursor", cache_mode="refresh")


async def test_orchestr8_resources_read_shape(tmp_path, mode) -> None:
    async with Harness.open(catalog(tmp_path, 3)) as harness:
        async with Client(build_server(harness), mode=mode) as client:
            read = await client.read_resource("agent://architect")
            [content] = read.contents
            assert str(content.uri) == "agent://architect"
            assert content.mime_type == READ_MIME
            definition = json.loads(content.text)
            assert list(definition)[:5] == ["name", "description", "model", "capabilities", "content"]
            assert definition["name"] == "architect"
            assert definition["description"] == "Designs system architecture"
            assert definition["model"] == "haiku"
            assert definition["capabilities"] == ["system-design", "scalability"]
            assert definition["content"] == "# Software Architect Agent\n\nYou design systems."
            toml_agent = json.loads((await client.read_resource("agent://a00001")).contents[0].text)
            assert {k: toml_agent[k] for k in ("name", "model", "capabilities", "content")} == {
                "name": "a00001", "model": None, "capabilities": [], "content": "You are agent 1."}
            with pytest.raises(MCPError):
                await client.read_resource("agent://nobody")


async def test_orchestr8_off_keeps_the_own_shapes(served, mode) -> None:
    async with Client(build_server(served), mode=mode) as client:
        listed = await client.list_resources()
        agents = [r for r in listed.resources if r.uri.startswith("agent://")]
        assert {r.mime_type for r in agents} == {"application/json"}
        assert "total" not in (listed.meta or {})
        read = (await client.read_resource("agent://debugger")).contents[0]
        assert read.mime_type == "application/json" and "system_prompt" in json.loads(read.text)


async def test_orchestr8_and_agentzoo_together(tmp_path) -> None:
    config = write_served(tmp_path, server='compat = ["agentzoo", "orchestr8"]')
    async with Harness.open(config_mod.load_file(config)) as harness, Client(build_server(harness)) as client:
        read = (await client.read_resource("agent://debugger")).contents[0]
        assert read.mime_type == READ_MIME and json.loads(read.text)["model"] == "sonnet"
        assert "agent_zoo_inject" in {tool.name for tool in (await client.list_tools()).tools}


def test_orchestr8_definition_cache_is_bounded(tmp_path) -> None:
    """10,000 agents: every definition can be read, and at most DEFINITION_CACHE stay cached."""
    config = catalog(tmp_path, 10_000)
    library = AgentLibrary(config)
    assert len(library.names()) == 10_001
    state = library._state
    assert len(state.definitions) <= DEFINITION_CACHE
    for i in range(0, 10_000, 7):
        assert json.loads(library.read_resource(f"agent://a{i:05d}"))["system_prompt"] == f"You are agent {i}."
    assert len(state.definitions) == DEFINITION_CACHE
    recent = "agent://a09996"
    library.read_resource(recent)
    assert list(state.definitions)[-1] == recent  # least recently read go first
    library.read_resource("agent://a00000")
    assert recent in state.definitions and len(state.definitions) == DEFINITION_CACHE


def test_orchestr8_capabilities_forms() -> None:
    from context_harness.server.compat import capabilities

    assert capabilities({"capabilities": "a, b ,"}) == ["a", "b"]
    assert capabilities({"capabilities": ["x", 2]}) == ["x", "2"]
    assert capabilities({"capabilities": {"x": 1}}) == [] and capabilities({}) == []


async def test_orchestr8_meta_on_document_pages_too(tmp_path) -> None:
    """Documents follow the agent catalog (``ctx://documents/``); their pages report ``_meta`` as well."""
    catalog(tmp_path, 3)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(120):
        (docs / f"d{i:03d}.md").write_text(f"# Doc {i}\n\nbody {i}\n", encoding="utf-8")
    with (tmp_path / "ctx.toml").open("a", encoding="utf-8") as out:
        out.write('[connectors.filesystem.docs]\nroot = "docs"\n')
    async with Harness.open(config_mod.load_file(tmp_path / "ctx.toml")) as harness:
        await harness.sync()
        async with Client(build_server(harness)) as client:
            first = await client.list_resources()
            assert (first.meta["total"], first.meta["count"]) == (4, 100)  # 4 agents, then 96 documents
            assert first.next_cursor and not first.next_cursor.isdigit()
            rest = await client.list_resources(cursor=first.next_cursor)
            assert (rest.meta["total"], rest.meta["count"]) == (4, 24) and rest.next_cursor is None
            assert {r.mime_type for r in rest.resources} == {"text/markdown"}
