"""The Harness's note calls on a real workspace: write then search, conflict on a changed file,
delete to the trash and restore, read-only sources refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import BadRequest, Conflict, NotConfigured
from context_harness.models import (
    NoteDeleteRequest,
    NoteEditRequest,
    NoteMoveRequest,
    NoteWriteRequest,
    SearchRequest,
)

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path, writable: bool = True) -> config_mod.Config:
    (tmp_path / "notes").mkdir()
    (tmp_path / "ctx.toml").write_text(
        '[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[server]\nsync_on_start = false\n'
        f'[connectors.filesystem.notes]\nroot = "notes"\nwritable = {str(writable).lower()}\n', encoding="utf-8")
    return config_mod.load(tmp_path / "ctx.toml")


async def test_write_search_edit_conflict_delete_restore(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path)) as harness:
        written = await harness.note_write(NoteWriteRequest(source="notes", path="inbox/release.md",
                                                            content="The release moved to Friday.", title="Release"))
        hits = (await harness.search(SearchRequest(query="release friday", mode="keyword"))).results
        assert [h.id for h in hits] == [written.id] and hits[0].version == written.version
        doc = await harness.get(written.id)
        assert doc.version == written.version
        with pytest.raises(BadRequest, match="overwrite"):
            await harness.note_write(NoteWriteRequest(source="notes", path="inbox/release.md", content="again"))
        path = tmp_path / "notes" / "inbox" / "release.md"
        path.write_text(path.read_text() + "User's own line.\n")  # the user edits meanwhile
        edit = NoteEditRequest(id=written.id, op="append", expected_version=str(doc.version), text="Assistant line.")
        with pytest.raises(Conflict, match=str(doc.version)):
            await harness.note_edit(edit)
        await harness.sync_paths("filesystem:notes", ["inbox/release.md"])  # what the watcher would do
        now = (await harness.get(written.id)).version
        fresh = await harness.note_edit(edit.model_copy(update={"expected_version": now, "text": "more"}))
        assert path.read_text().endswith("User's own line.\n\nmore\n") and fresh.action == "edited"
        deleted = await harness.note_delete(NoteDeleteRequest(id=written.id, expected_version=fresh.version))
        assert not path.exists() and deleted.trash_id is not None and deleted.version is None
        assert (await harness.search(SearchRequest(query="release friday", mode="keyword"))).results == []
        assert [e.path for e in harness.trash_entries()] == ["inbox/release.md"]
        restored = await harness.note_restore(deleted.trash_id)
        assert path.read_text().endswith("more\n") and restored.version == fresh.version
        assert harness.trash_entries() == []


async def test_a_moved_note_keeps_its_text_under_a_new_id_and_never_replaces_a_file(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path)) as harness:
        first = await harness.note_write(NoteWriteRequest(source="notes", path="a.md", content="Pelicans fly."))
        await harness.note_write(NoteWriteRequest(source="filesystem:notes", path="taken.md", content="Mine."))
        with pytest.raises(BadRequest, match="^taken.md exists already"):  # the target is named, not the note
            await harness.note_move(NoteMoveRequest(id=first.id, to="taken.md"))
        with pytest.raises(Conflict):
            await harness.note_move(NoteMoveRequest(id=first.id, to="b.md", expected_version="0" * 16))
        with pytest.raises(BadRequest, match=r"'\.\.'"):
            await harness.note_move(NoteMoveRequest(id=first.id, to="../outside.md"))
        moved = await harness.note_move(NoteMoveRequest(id=first.id, to="birds/pelicans.md",
                                                        expected_version=first.version))
        assert moved.id != first.id and moved.path == "birds/pelicans.md" and moved.version  # hashes the path too
        assert not (tmp_path / "notes" / "a.md").exists()
        assert (tmp_path / "notes" / "birds" / "pelicans.md").read_text() == "Pelicans fly.\n"
        hits = (await harness.search(SearchRequest(query="pelicans", mode="keyword"))).results
        assert [h.id for h in hits] == [moved.id]
        assert (tmp_path / "notes" / "taken.md").read_text() == "Mine.\n"


async def test_a_note_the_globs_leave_out_is_saved_and_says_so(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.connectors.filesystem["notes"].exclude_globs = ["drafts/"]
    async with Harness.open(config) as harness:
        out = await harness.note_write(NoteWriteRequest(source="notes", path="drafts/x.md", content="Hidden."))
        assert out.version is None and out.note is not None and "not indexed" in out.note
        assert (tmp_path / "notes" / "drafts" / "x.md").exists()


async def test_a_missing_folder_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    config = _config(tmp_path)
    (tmp_path / "notes").rmdir()
    async with Harness.open(config) as harness:
        with pytest.raises(NotConfigured, match="is missing"):
            await harness.note_write(NoteWriteRequest(source="notes", path="a.md", content="x"))
    assert not (tmp_path / "notes").exists()


async def test_a_read_only_source_is_refused_naming_the_key(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path, writable=False)) as harness:
        assert harness.writable_sources() == []
        with pytest.raises(NotConfigured, match="writable = true"):
            await harness.note_write(NoteWriteRequest(source="notes", path="a.md", content="x"))


async def test_note_tools_exist_only_for_writable_sources_with_honest_hints(tmp_path: Path) -> None:
    from context_harness.tools.base import hints

    (tmp_path / "ro").mkdir()
    async with Harness.open(_config(tmp_path / "ro", writable=False)) as harness:
        assert not {t.name for t in harness.tools()} & {"note_write", "note_edit", "note_move", "note_delete"}
    (tmp_path / "rw").mkdir()
    async with Harness.open(_config(tmp_path / "rw")) as harness:
        tools = {t.name: t for t in harness.tools()}
        assert hints(tools["note_write"])["readOnlyHint"] is False
        assert hints(tools["note_write"])["destructiveHint"] is False
        assert hints(tools["note_edit"])["destructiveHint"] is True
        assert hints(tools["note_move"])["destructiveHint"] is True and tools["note_move"].output_schema
        result = await harness.call_tool("note_write", {"source": "notes", "path": "a.md", "content": "hello"})
        assert result.payload["action"] == "written"
        assert (tmp_path / "rw" / "notes" / "a.md").read_text() == "hello\n"
        with pytest.raises(BadRequest, match="path"):
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
