"""Note tools never change what the config loads (issue 55, low): a writable folder that holds the
config's ``agents/`` (or its skills, or a Lua script) is not a way for a model to add, change or remove
an agent. ``note_write``/``note_edit``/``note_move``/``note_delete``/``note_restore`` there are
``bad_request``, naming the folder and why, over a real MCP client; notes elsewhere in the folder work."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.results import error_of

pytestmark = pytest.mark.anyio

AGENT = "---\nname: {name}\ndescription: Deletes every note.\ntools: note_delete\n---\nDelete everything.\n"


def kb_beside_config(tmp_path: Path, extra: str = "") -> config_mod.Config:
    """A writable source whose root is the folder of the config, its agents, skills and Lua tool."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "helper.md").write_text(AGENT.format(name="helper"), encoding="utf-8")
    (tmp_path / "skills" / "tidy").mkdir(parents=True)
    (tmp_path / "skills" / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy.\n---\nTidy up.\n")
    (tmp_path / "team").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "hello.lua").write_text('tool = {description = "hi"}\nfunction tool.execute() '
                                                  'return "hi" end\n', encoding="utf-8")
    (tmp_path / "ctx.toml").write_text(
        '[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[server]\nsync_on_start = false\n'
        '[connectors.filesystem.kb]\nroot = "."\nwritable = true\nexclude_globs = ["data/**"]\n'
        '[tools.script.hello]\npath = "tools/hello.lua"\n' + extra, encoding="utf-8")
    return config_mod.load(tmp_path / "ctx.toml")


async def test_a_note_never_creates_changes_or_removes_an_agent(tmp_path: Path) -> None:
    config = kb_beside_config(tmp_path)
    async with Harness.open(config) as harness, Client(build_server(harness)) as client:
        await harness.sync("all")
        helper = next(hit for hit in (await client.call_tool("search", {"query": "Delete everything",
                                                                        "mode": "keyword"})).structured_content[
            "results"] if hit["title"] == "helper" or "helper" in hit["source_id"])
        note = (await client.call_tool("note_write", {"source": "kb", "path": "inbox/plan.md",
                                                      "content": "A plan."})).structured_content
        assert (tmp_path / "inbox" / "plan.md").exists()

        for tool, arguments, where in [
            ("note_write", {"source": "kb", "path": "agents/cleaner.md", "content": AGENT.format(name="cleaner")},
             "agents"),
            ("note_write", {"source": "kb", "path": "agents/team/cleaner.md", "content": "x"}, "agents"),
            ("note_write", {"source": "kb", "path": "skills/evil/SKILL.md", "content": "x"}, "skills"),
            ("note_edit", {"id": helper["id"], "op": "append", "text": "More.", "expected_version": helper["version"]},
             "agents"),
            ("note_move", {"id": note["id"], "to": "agents/plan.md"}, "agents"),
            ("note_move", {"id": helper["id"], "to": "inbox/helper.md"}, "agents"),
            ("note_delete", {"id": helper["id"]}, "agents"),
        ]:
            error = error_of(await client.call_tool(tool, arguments))
            assert error["code"] == "bad_request", (tool, arguments, error)
            assert f"({tmp_path / where})" in error["message"], error
            assert "never write, move or delete what the config loads" in error["message"], error
        assert sorted(p.name for p in (tmp_path / "agents").rglob("*")) == ["helper.md"]
        assert (tmp_path / "agents" / "helper.md").read_text() == AGENT.format(name="helper")
        assert not (tmp_path / "skills" / "evil").exists() and (tmp_path / "inbox" / "plan.md").exists()
    async with Harness.open(config_mod.load(tmp_path / "ctx.toml")) as again:
        assert sorted(a.name for a in again.agents()) == ["helper"]


async def test_configured_agent_folders_and_the_restore_of_a_note_are_kept_off_too(tmp_path: Path) -> None:
    config = kb_beside_config(tmp_path, '[agents]\npaths = ["team"]\n')
    async with Harness.open(config) as harness, Client(build_server(harness)) as client:
        error = error_of(await client.call_tool("note_write", {"source": "kb", "path": "team/cleaner.md",
                                                                "content": AGENT.format(name="cleaner")}))
        assert error["code"] == "bad_request" and "[agents] paths" in error["message"], error
        written = (await client.call_tool("note_write", {"source": "kb", "path": "agents/plan.md",
                                                         "content": "agents/ is no agent folder here"}))
        assert not written.is_error, written.content
        deleted = (await client.call_tool("note_delete", {"id": written.structured_content["id"]}))
        (tmp_path / "ctx.toml").write_text((tmp_path / "ctx.toml").read_text().replace('"team"', '"agents"'))
    async with Harness.open(config_mod.load(tmp_path / "ctx.toml")) as harness, Client(build_server(harness)) as client:
        error = error_of(await client.call_tool("note_restore", {"trash_id": deleted.structured_content["trash_id"]}))
        assert error["code"] == "bad_request" and "agents" in error["message"], error
        assert not (tmp_path / "agents" / "plan.md").exists()
        assert not (tmp_path / "team" / "cleaner.md").exists()
