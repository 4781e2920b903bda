"""The Harness's note calls on a real workspace: write then search, conflict on a changed file,
delete to the trash and restore, read-only sources refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.errors import BadRequest, Conflict, NotConfigured
from context_harness.harness import Harness
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path, writable: bool = True) -> config_mod.Config:
    (tmp_path / "notes").mkdir()
    (tmp_path / "ctx.toml").write_text(
        '[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[server]\nsync_on_start = false\n'
        f'[connectors.filesystem.notes]\nroot = "notes"\nwritable = {str(writable).lower()}\n', encoding="utf-8")
    return config_mod.load(tmp_path / "ctx.toml")


async def test_write_search_edit_conflict_delete_restore(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path)) as harness:
        written = await harness.note_write("notes", "inbox/release.md", "The release moved to Friday.",
                                           title="Release")
        hits = (await harness.search(SearchRequest(query="release friday", mode="keyword"))).results
        assert [h.id for h in hits] == [written["id"]]
        doc = await harness.get(written["id"])
        assert doc.version == written["version"]
        with pytest.raises(BadRequest, match="overwrite"):
            await harness.note_write("notes", "inbox/release.md", "again")
        path = tmp_path / "notes" / "inbox" / "release.md"
        path.write_text(path.read_text() + "User's own line.\n")  # the user edits meanwhile
        with pytest.raises(Conflict, match=str(doc.version)):
            await harness.note_edit(written["id"], "append", str(doc.version), text="Assistant line.")
        fresh = await harness.note_edit(written["id"], "append", harness_version(path, harness), text="more")
        assert path.read_text().endswith("User's own line.\nmore\n") and fresh["action"] == "edited"
        await harness.note_delete(written["id"], fresh["version"])
        assert not path.exists()
        assert (await harness.search(SearchRequest(query="release friday", mode="keyword"))).results == []
        await harness.note_restore(path="inbox/release.md")
        assert path.read_text().endswith("more\n")


def harness_version(path: Path, harness: Harness) -> str:
    connector = harness.connectors[0]
    return harness._check_version(connector, "inbox/release.md", None) or ""


async def test_a_read_only_source_is_refused_naming_the_key(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path, writable=False)) as harness:
        assert harness.writable_sources() == []
        with pytest.raises(NotConfigured, match="writable = true"):
            await harness.note_write("notes", "a.md", "x")


async def test_note_tools_exist_only_for_writable_sources_with_honest_hints(tmp_path: Path) -> None:
    from context_harness.tools.base import hints

    (tmp_path / "ro").mkdir()
    async with Harness.open(_config(tmp_path / "ro", writable=False)) as harness:
        assert not {t.name for t in harness.tools()} & {"note_write", "note_edit", "note_delete"}
    (tmp_path / "rw").mkdir()
    async with Harness.open(_config(tmp_path / "rw")) as harness:
        tools = {t.name: t for t in harness.tools()}
        assert hints(tools["note_write"])["readOnlyHint"] is False
        assert hints(tools["note_write"])["destructiveHint"] is False
        assert hints(tools["note_edit"])["destructiveHint"] is True
        result = await harness.call_tool("note_write", {"source": "notes", "path": "a.md", "content": "hello"})
        assert result.payload["action"] == "written"
        assert (tmp_path / "rw" / "notes" / "a.md").read_text() == "hello\n"
        with pytest.raises(BadRequest, match="missing argument 'path'"):
            await harness.call_tool("note_write", {"source": "notes", "content": "x"})


async def test_agent_scoping_applies_to_the_note_tools(tmp_path: Path) -> None:
    from context_harness.errors import UnknownTool

    config_path = _config(tmp_path) and tmp_path / "ctx.toml"
    config_path.write_text(config_path.read_text() + '\n[agents.reader]\ndescription = "Reads"\n'
                           'tools = ["search", "get"]\nsystem_prompt = "Read."\n', encoding="utf-8")
    async with Harness.open(config_mod.load(config_path)) as harness:
        assert "note_write" in {t.name for t in harness.tools()}
        assert "note_write" not in {t.name for t in harness.tools("reader")}
        with pytest.raises(UnknownTool):
            await harness.call_tool("note_write", {"source": "notes", "path": "a.md", "content": "x"}, "reader")
        assert not (tmp_path / "notes" / "a.md").exists()
