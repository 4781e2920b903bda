"""Delete to the trash and restore, on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness.errors import BadRequest, NotFound
from context_harness.notes import trash


def test_delete_then_restore_round_trip(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    (root / "inbox").mkdir(parents=True)
    note = root / "inbox" / "n.md"
    note.write_text("# N\nbody\n")
    entry = trash.move_to_trash(data, note, "filesystem:notes", "inbox/n.md", "abc")
    assert not note.exists()
    assert [e.path for e in trash.entries(data)] == ["inbox/n.md"]
    assert not any(p.name == "trash" for p in root.rglob("*"))
    note.write_text("someone else's\n")
    with pytest.raises(BadRequest, match="exists again"):
        trash.restore(data, trash.find(data, path="inbox/n.md"), note)
    note.unlink()
    trash.restore(data, trash.find(data, entry.id), note)
    assert note.read_text() == "# N\nbody\n"
    assert trash.entries(data) == []
    with pytest.raises(NotFound, match="manifest.json"):
        trash.find(data, path="inbox/n.md")
