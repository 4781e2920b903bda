"""``context-harness --workspaces FILE`` over stdio with the official MCP client (issue 52): two
workspaces (one writable) searched across and within, each one's id read by ``get``, a write refused
in the read-only one, an unknown workspace refused by name, a broken third set aside while the two
serve, and a workspace whose config changes reloading alone while a client polls every 100 ms."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.paths import BIN
from support.results import error_of
from support.workspace import config_toml, write_files

pytestmark = pytest.mark.anyio

NOTES = {"garden.md": "# Garden notes\n\nTomatoes need six hours of sun and deep watering.\n",
         "bread.md": "# Sourdough\n\nFeed the starter flour and water; the dough rises overnight.\n"}
WORK = {"deploy.md": "# Deploy runbook\n\nRoll the release to staging, then watch the error rate.\n",
        "garden.md": "# Garden office plants\n\nWater the office plants on Fridays; they like sun.\n"}


def workspace(root: Path, docs: dict[str, str], writable: bool = False, extra: str = "") -> Path:
    write_files(root / "docs", docs)
    text = config_toml(docs_root=str(root / "docs"), server="sync_on_start = true")
    if writable:
        text += "writable = true\n"
    path = root / "ctx.toml"
    path.write_text(text + extra, encoding="utf-8")
    return path


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    notes = workspace(tmp_path / "notes", NOTES, writable=True)
    work = workspace(tmp_path / "work", WORK)
    broken = tmp_path / "broken" / "ctx.toml"
    broken.parent.mkdir()
    broken.write_text("[db]\npath = 3\n", encoding="utf-8")
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.notes]\nconfig = "{notes}"\n\n[workspaces.work]\nconfig = "{work}"\n\n'
                    f'[workspaces.broken]\nconfig = "{broken}"\n', encoding="utf-8")
    return file


def server(file: Path, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=str(BIN / "context-harness"), args=["--workspaces", str(file)], env=env)


async def until_indexed(client: Client, documents: int) -> None:
    """Until every workspace counts its documents and keyword search finds them (the count can lead
    the keyword index by a moment)."""
    with anyio.fail_after(60):
        while True:
            listed = (await client.call_tool("workspaces", {})).structured_content
            found = await client.call_tool("search", {"query": "garden", "mode": "keyword"})
            if (sum(w["documents"] for w in listed["workspaces"]) >= documents
                    and len(found.structured_content["results"]) >= 2):
                return
            await anyio.sleep(0.1)


async def test_two_workspaces_searched_across_and_within_a_broken_third_set_aside(registry: Path, child_env) -> None:
    async with Client(server(registry, child_env)) as client:
        assert "2 workspaces" in client.instructions and "broken" in client.instructions
        await until_indexed(client, 4)
        listed = (await client.call_tool("workspaces", {})).structured_content
        assert [(w["name"], w["writable"], w["documents"]) for w in listed["workspaces"]] == [
            ("notes", True, 2), ("work", False, 2)]
        assert listed["set_aside"][0]["name"] == "broken" and "db.path" in listed["set_aside"][0]["problem"]

        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"workspaces", "search", "get", "sources", "recent", "related", "note_write"} <= set(tools)
        assert "workspace" in tools["search"].input_schema["properties"]

        across = (await client.call_tool("search", {"query": "garden sun", "mode": "keyword"})).structured_content
        assert {r["workspace"] for r in across["results"]} == {"notes", "work"}
        within = (await client.call_tool("search", {"query": "garden sun", "workspace": "work"})).structured_content
        assert [r["workspace"] for r in within["results"]] == ["work"]
        assert within["results"][0]["title"] == "Garden office plants"

        by_title = {r["title"]: r for r in across["results"]}
        shared = by_title["Garden office plants"]["id"]  # garden.md in both: the same source and path, one id
        assert shared.startswith("work:") and by_title["Garden notes"]["id"].startswith("notes:")
        for hit in across["results"]:  # each workspace's id as search gave it, and qualified
            got = (await client.call_tool("get", {"id": hit["id"]})).structured_content
            assert got["workspace"] == hit["workspace"] and got["title"] == hit["title"]
        bare = shared.partition(":")[2]
        refused = error_of(await client.call_tool("get", {"id": bare}))
        assert f"'notes:{bare}' or 'work:{bare}'" in refused["message"]
        deploy = (await client.call_tool("search", {"query": "staging release"})).structured_content["results"][0]
        assert deploy["workspace"] == "work" and ":" not in deploy["id"]  # in one workspace only: as it is
        assert (await client.call_tool("get", {"id": deploy["id"]})).structured_content["title"] == "Deploy runbook"
        qualified = (await client.call_tool("get", {"id": f"work:{deploy['id']}"})).structured_content
        assert qualified["title"] == "Deploy runbook"
        related = (await client.call_tool("related", {"id": deploy["id"]})).structured_content
        assert related["workspace"] == "work"
        changes = (await client.call_tool("recent", {})).structured_content["changes"]
        assert {c["workspace"] for c in changes} == {"notes", "work"}
        changes = (await client.call_tool("recent", {"workspace": "notes"})).structured_content["changes"]
        assert {c["workspace"] for c in changes} == {"notes"} and len(changes) == 2

        work_id = within["results"][0]["id"]
        refused = await client.call_tool("note_edit", {"id": work_id, "op": "append", "text": "more",
                                                       "expected_version": "x" * 16})
        assert error_of(refused)["code"] == "not_configured" and "'work' is read-only" in error_of(refused)["message"]
        refused = await client.call_tool("note_write", {"workspace": "work", "source": "docs", "path": "a.md",
                                                        "content": "x"})
        assert "'work' is read-only" in error_of(refused)["message"]
        written = await client.call_tool("note_write", {"source": "docs", "path": "inbox/idea.md",
                                                        "content": "# Idea\n\nCompost the bread crusts.\n"})
        assert written.structured_content["workspace"] == "notes"
        assert (registry.parent / "notes" / "docs" / "inbox" / "idea.md").is_file()

        unknown = await client.call_tool("search", {"query": "garden", "workspace": "nope"})
        message = error_of(unknown)["message"]
        assert error_of(unknown)["code"] == "not_found" and "'nope'" in message and "notes, work" in message
        aside = await client.call_tool("search", {"query": "garden", "workspace": "broken"})
        assert "set aside" in error_of(aside)["message"]


LUA_TOOL = 'tool = {{ description = "{text}", parameters = {{}} }}\nfunction tool.execute(p, c) return "{text}" end\n'


async def test_a_changed_config_reloads_its_workspace_alone_while_a_client_polls(tmp_path: Path, child_env) -> None:
    notes = workspace(tmp_path / "notes", NOTES)
    work = workspace(tmp_path / "work", WORK)
    (tmp_path / "hello.lua").write_text(LUA_TOOL.format(text="hello"), encoding="utf-8")
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.notes]\nconfig = "{notes}"\n[workspaces.work]\nconfig = "{work}"\n', encoding="utf-8")
    errors: list[str] = []
    polls = 0
    async with Client(server(file, child_env)) as client:
        await until_indexed(client, 4)
        assert "hello" not in {t.name for t in (await client.list_tools()).tools}

        async def poll() -> None:
            nonlocal polls
            while True:
                result = await client.call_tool("search", {"query": "garden", "mode": "keyword"})
                polls += 1
                if result.is_error or len(result.structured_content["results"]) < 2:
                    errors.append(result.content[0].text)
                await anyio.sleep(0.1)

        async with anyio.create_task_group() as tg:
            tg.start_soon(poll)
            work.write_text(work.read_text() + f'\n[tools.script.hello]\npath = "{tmp_path / "hello.lua"}"\n',
                            encoding="utf-8")
            with anyio.fail_after(60):
                while "hello" not in {t.name for t in (await client.list_tools()).tools}:
                    await anyio.sleep(0.2)
            called = await client.call_tool("hello", {})
            assert called.structured_content["result"] == "hello"
            await anyio.sleep(1)
            tg.cancel_scope.cancel()
    assert errors == [] and polls >= 5


async def test_none_can_serve_is_said_to_the_client(tmp_path: Path, child_env) -> None:
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.gone]\nconfig = "{tmp_path / "gone.toml"}"\n', encoding="utf-8")
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--workspaces", str(file)],
                                   env=child_env)
    async with Client(params) as client:
        assert "no workspace of" in client.instructions and "gone" in client.instructions
