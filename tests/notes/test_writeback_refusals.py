"""What the OS and the folder refuse, through the Harness's note calls: each a clear error naming the
fix, never ``internal`` — a note that became a folder (never moved into the trash), a read-only note
(never replaced), an immutable folder, a name too long, invisible or control characters in a name."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from context_harness.core.harness import Harness
from context_harness.errors import BadRequest, Forbidden
from context_harness.models import NoteDeleteRequest, NoteEditRequest, NoteMoveRequest, NoteWriteRequest
from support.workspace import writable_notes_config

pytestmark = pytest.mark.anyio


async def test_a_note_that_became_a_folder_is_never_moved_to_the_trash(tmp_path: Path) -> None:
    async with Harness.open(writable_notes_config(tmp_path)) as harness:
        note = await harness.note_write(NoteWriteRequest(source="notes", path="plans.md", content="x"))
        path = tmp_path / "notes" / "plans.md"
        path.unlink()
        path.mkdir()
        (path / "mine.txt").write_text("the user's own file\n")
        with pytest.raises(BadRequest, match="is a folder, not a note file"):
            await harness.note_delete(NoteDeleteRequest(id=note.id))
        with pytest.raises(BadRequest, match="is a folder, not a note file"):
            await harness.note_move(NoteMoveRequest(id=note.id, to="elsewhere.md"))
        assert (path / "mine.txt").read_text() == "the user's own file\n"
        assert harness.trash_entries() == [] and not (tmp_path / "notes" / "elsewhere.md").exists()


async def test_a_read_only_note_is_refused_not_replaced(tmp_path: Path) -> None:
    async with Harness.open(writable_notes_config(tmp_path)) as harness:
        note = await harness.note_write(NoteWriteRequest(source="notes", path="frozen.md", content="keep"))
        path = tmp_path / "notes" / "frozen.md"
        path.chmod(0o444)
        with pytest.raises(Forbidden, match="read-only.*444"):
            await harness.note_write(NoteWriteRequest(source="notes", path="frozen.md", content="new", overwrite=True))
        with pytest.raises(Forbidden, match="read-only"):
            await harness.note_edit(NoteEditRequest(id=note.id, op="append", text="more",
                                                    expected_version=str(note.version)))
        assert path.read_text() == "keep\n"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None,
                    reason="an immutable folder needs chattr and root")
async def test_an_immutable_folder_is_forbidden_naming_the_flag(tmp_path: Path) -> None:
    async with Harness.open(writable_notes_config(tmp_path)) as harness:
        (tmp_path / "notes" / "locked").mkdir()
        if subprocess.run(["chattr", "+i", str(tmp_path / "notes" / "locked")], check=False).returncode:
            pytest.skip("this filesystem has no immutable flag")
        try:
            with pytest.raises(Forbidden, match=r"chattr -i"):
                await harness.note_write(NoteWriteRequest(source="notes", path="locked/a.md", content="x"))
        finally:
            subprocess.run(["chattr", "-i", str(tmp_path / "notes" / "locked")], check=True)
        assert os.listdir(tmp_path / "notes" / "locked") == []


@pytest.mark.parametrize(("name", "words"), [
    ("a" * 300 + ".md", "at most 255 bytes"),
    ("two\nlines.md", r"U\+000A"),
    ("carriage\r.md", r"U\+000D"),
    ("evil\u202edm.txt.md", r"U\+202E"),
    ("zero\u200bwidth.md", r"U\+200B"),
])
async def test_names_that_cannot_be_stored_or_would_spoof_listings_are_refused(tmp_path: Path, name: str,
                                                                               words: str) -> None:
    async with Harness.open(writable_notes_config(tmp_path)) as harness:
        with pytest.raises(BadRequest, match=words):
            await harness.note_write(NoteWriteRequest(source="notes", path=f"inbox/{name}", content="x"))
    assert not (tmp_path / "notes" / "inbox").exists()


@pytest.mark.parametrize("content", ["", "  \n\t\n"])
async def test_an_empty_note_is_written_and_read_like_any_other(tmp_path: Path, content: str) -> None:
    async with Harness.open(writable_notes_config(tmp_path)) as harness:
        written = await harness.note_write(NoteWriteRequest(source="notes", path="empty.md", content=content))
        assert written.action == "written" and written.version is not None
        assert (await harness.get(written.id)).version == written.version


async def test_a_note_saved_but_not_indexed_says_why(tmp_path: Path) -> None:
    config = writable_notes_config(tmp_path)
    config.connectors.filesystem["notes"].exclude_globs = ["drafts/"]
    async with Harness.open(config) as harness:
        binary = await harness.note_write(NoteWriteRequest(source="notes", path="nul.md", content="a\x00b"))
        assert binary.version is None and binary.note is not None and "NUL byte" in binary.note
        left_out = await harness.note_write(NoteWriteRequest(source="notes", path="drafts/x.md", content="x"))
        assert left_out.note is not None and "exclude_globs" in left_out.note
