"""Each workspace's own tools and agents behind one server (issue 52): offered once per workspace,
under their own names, and as ``WORKSPACE__NAME`` only where two workspaces have one of that name;
the real MCP client in memory over a ``WorkspaceSet``."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from mcp import Client

from context_harness.core.harness import Harness
from context_harness.core.workspaces import WorkspaceSet
from context_harness.server.mcp import build_server
from support.workspace import config_toml, write_files

pytestmark = pytest.mark.anyio

TOOL = 'tool = {{ description = "{text}", parameters = {{}} }}\nfunction tool.execute(p, c) return "{text}" end\n'


def workspace(root: Path, tools: dict[str, str], agents: list[str]) -> Path:
    write_files(root / "docs", {"a.md": f"# {root.name}\n\nnotes of {root.name}\n"})
    extra = ""
    for name, text in tools.items():
        (root / f"{name}.lua").write_text(TOOL.format(text=text), encoding="utf-8")
        extra += f'\n[tools.script.{name}]\npath = "{root / name}.lua"\n'
    for name in agents:
        extra += f'\n[agents.{name}]\ndescription = "{name} of {root.name}"\nsystem_prompt = "You are {root.name}."\n'
    path = root / "ctx.toml"
    path.write_text(config_toml(docs_root=str(root / "docs"), extra=extra), encoding="utf-8")
    return path


async def test_tools_and_agents_keep_their_names_unless_two_workspaces_share_one(tmp_path: Path) -> None:
    one = workspace(tmp_path / "one", {"hello": "hello from one", "only_one": "mine"}, ["helper", "writer"])
    two = workspace(tmp_path / "two", {"hello": "hello from two"}, ["helper"])
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.one]\nconfig = "{one}"\n[workspaces.two]\nconfig = "{two}"\n', encoding="utf-8")
    async with WorkspaceSet.open(file) as served, served.serving():
        async with Client(build_server(cast(Harness, served))) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"one__hello", "two__hello", "only_one"} <= names and "hello" not in names
            assert (await client.call_tool("two__hello", {})).structured_content["result"] == "hello from two"
            assert (await client.call_tool("only_one", {})).structured_content["result"] == "mine"
            assert {"one__agent_inject", "two__agent_inject"} <= names  # each workspace's agent tools
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert set(prompts) == {"one__helper", "two__helper", "writer"}
            got = await client.get_prompt("two__helper")
            assert "You are two." in got.messages[0].content.text
