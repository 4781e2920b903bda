"""Delete to the trash and restore, on real files, relative to open folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness.errors import BadRequest, NotFound
from context_harness.notes import trash
from context_harness.notes.folder import walk


def test_delete_then_restore_round_trip(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    (root / "inbox").mkdir(parents=True)
    note = root / "inbox" / "n.md"
    note.write_text("# N\nbody\n")
    with walk(root, ["inbox"]) as folder:
        entry = trash.move_to_trash(data, folder, "n.md", "filesystem:notes", "inbox/n.md", "abc")
    assert not note.exists()
    assert [e.path for e in trash.entries(data)] == ["inbox/n.md"]
    assert not any(p.name == "trash" for p in root.rglob("*"))
    note.write_text("someone else's\n")
    with walk(root, ["inbox"]) as folder, pytest.raises(BadRequest, match="exists again"):
        trash.restore(data, trash.find(data, path="inbox/n.md"), folder, "n.md")
    note.unlink()
    with walk(root, ["inbox"]) as folder:
        trash.restore(data, trash.find(data, entry.id), folder, "n.md")
    assert note.read_text() == "# N\nbody\n"
    assert trash.entries(data) == []
    with pytest.raises(NotFound, match="manifest.json"):
        trash.find(data, path="inbox/n.md")


def test_a_note_that_became_a_folder_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    (root / "inbox" / "n.md").mkdir(parents=True)
    (root / "inbox" / "n.md" / "mine.txt").write_text("the user's file\n")
    with walk(root, ["inbox"]) as folder, pytest.raises(BadRequest, match="a folder, not a note file"):
        trash.move_to_trash(data, folder, "n.md", "filesystem:notes", "inbox/n.md")
    assert (root / "inbox" / "n.md" / "mine.txt").read_text() == "the user's file\n"
    assert trash.entries(data) == [] and not (data / "trash").exists()


def test_a_trash_entry_holding_a_folder_is_explained_on_restore(tmp_path: Path) -> None:
    """What an older version left behind when it moved a folder: restore says where the files are."""
    root, data = tmp_path / "root", tmp_path / "data"
    (root / "inbox").mkdir(parents=True)
    (root / "inbox" / "n.md").write_text("x\n")
    with walk(root, ["inbox"]) as folder:
        entry = trash.move_to_trash(data, folder, "n.md", "filesystem:notes", "inbox/n.md")
    kept = data / "trash" / entry.id / "n.md"
    kept.unlink()
    kept.mkdir()
    with walk(root, ["inbox"]) as folder, pytest.raises(BadRequest, match="holds a folder.*move them back by hand"):
        trash.restore(data, entry, folder, "n.md")
    assert not (root / "inbox" / "n.md").exists()
