"""The writable root held, not re-resolved (issue 55): the root folder of a writable source is opened
once, and a root that is no longer that folder (swapped for a symlink to another folder, or for another
folder) is refused with an error that says what happened and the fix, never followed. Without a race
(over a real MCP client) and under a second process that keeps swapping the root for a symlink to a
canary folder while the note calls run (the canary folder hashed before and after)."""

from __future__ import annotations

import hashlib
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from context_harness.core.harness import Harness
from context_harness.errors import HarnessError
from context_harness.models import NoteDeleteRequest, NoteEditRequest, NoteWriteRequest
from context_harness.server.mcp import build_server
from support.results import error_of
from support.root_swap import start_flipper
from support.workspace import writable_notes_config

pytestmark = pytest.mark.anyio

CANARY = "CANARY outside the source, must never change"
ROUNDS = int(os.environ.get("CTX_ROOT_SWAP_ROUNDS", "500"))


def canaries(outside: Path) -> Path:
    """A folder outside the source holding files named like the notes the tests write."""
    outside.mkdir()
    for name in [f"x{i}.md" for i in range(8)] + ["a.md", "b.md"]:
        (outside / name).write_text(f"{CANARY}: {name}\n", encoding="utf-8")
    return outside


def tree_hash(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: path -> kind, mode and content hash (symlinks by target)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            what = "link " + os.readlink(path)
        elif path.is_dir():
            what = "dir"
        else:
            what = "file " + hashlib.sha256(path.read_bytes()).hexdigest()
        out[path.relative_to(folder).as_posix()] = f"{what} {path.lstat().st_mode:o}"
    return out


def canary_in_trash(data: Path) -> list[str]:
    trash = data / "trash"
    kept = [p for p in trash.rglob("*") if p.is_file()] if trash.exists() else []
    return [p.name for p in kept if CANARY.encode() in p.read_bytes()]


async def test_a_root_swapped_for_a_symlink_is_refused_never_followed(tmp_path: Path) -> None:
    outside = canaries(tmp_path / "outside")
    before = tree_hash(outside)
    notes = tmp_path / "notes"
    async with Harness.open(writable_notes_config(tmp_path)) as harness, Client(build_server(harness)) as client:
        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
            return dict(result.structured_content or {})

        note = await call("note_write", {"source": "notes", "path": "a.md", "content": "mine"})
        gone = await call("note_write", {"source": "notes", "path": "b.md", "content": "deleted"})
        deleted = await call("note_delete", {"id": gone["id"]})

        notes.rename(tmp_path / "notes-real")  # the parent is writable: the root becomes a symlink
        notes.symlink_to(outside, target_is_directory=True)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("note_write", {"source": "notes", "path": "new.md", "content": "x"}),
            ("note_write", {"source": "notes", "path": "x2.md", "content": "x", "overwrite": True}),
            ("note_edit", {"id": note["id"], "op": "append", "text": "more", "expected_version": note["version"]}),
            ("note_move", {"id": note["id"], "to": "moved.md"}),
            ("note_delete", {"id": note["id"]}),
            ("note_restore", {"trash_id": deleted["trash_id"]}),
        ]
        for tool, arguments in calls:
            error = error_of(await client.call_tool(tool, arguments))
            assert error["code"] == "conflict", (tool, error)
            assert f"({notes})" in error["message"] and f"a symlink to {outside}" in error["message"], error
            assert "put the folder back" in error["message"] and "restart" in error["message"], error
        assert tree_hash(outside) == before
        assert canary_in_trash(tmp_path / "data") == [] and [e.path for e in harness.trash_entries()] == ["b.md"]

        notes.unlink()  # put back, the same folder: the note calls work again
        (tmp_path / "notes-real").rename(notes)
        await call("note_edit", {"id": note["id"], "op": "append", "text": "more", "expected_version": note["version"]})
        await call("note_restore", {"trash_id": deleted["trash_id"]})
        assert (notes / "a.md").read_text() == "mine\n\nmore\n" and (notes / "b.md").exists()
    assert tree_hash(outside) == before


async def test_a_root_swapped_for_another_folder_is_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    async with Harness.open(writable_notes_config(tmp_path)) as harness:
        note = await harness.note_write(NoteWriteRequest(source="notes", path="a.md", content="mine"))
        notes.rename(tmp_path / "notes-old")
        notes.mkdir()
        with pytest.raises(HarnessError, match="replaced by another folder.*put the folder back.*restart") as caught:
            await harness.note_write(NoteWriteRequest(source="notes", path="new.md", content="x"))
        assert caught.value.code == "conflict"
        with pytest.raises(HarnessError, match="replaced by another folder"):
            await harness.note_delete(NoteDeleteRequest(id=note.id))
        notes.rmdir()
        with pytest.raises(HarnessError, match="missing"):
            await harness.note_write(NoteWriteRequest(source="notes", path="new.md", content="x"))
        assert os.listdir(tmp_path / "notes-old") == ["a.md"]


async def test_a_trash_swapped_for_a_symlink_is_neither_written_nor_restored_from(tmp_path: Path) -> None:
    outside = canaries(tmp_path / "outside")
    before = tree_hash(outside)
    trash = tmp_path / "data" / "trash"
    async with Harness.open(writable_notes_config(tmp_path)) as harness:
        kept = await harness.note_write(NoteWriteRequest(source="notes", path="a.md", content="kept"))
        entry = (await harness.note_delete(NoteDeleteRequest(id=kept.id))).trash_id
        other = await harness.note_write(NoteWriteRequest(source="notes", path="b.md", content="other"))
        trash.rename(tmp_path / "trash-real")
        trash.symlink_to(outside, target_is_directory=True)
        with pytest.raises(HarnessError, match="symlink or a file, not a folder") as caught:
            await harness.note_delete(NoteDeleteRequest(id=other.id))
        assert caught.value.code == "bad_request" and (tmp_path / "notes" / "b.md").read_text() == "other\n"
        trash.unlink()
        trash.mkdir()  # an entry swapped for a link to an outside folder holding a note and a manifest
        (tmp_path / "trash-real" / str(entry)).rename(outside / "entry")
        (trash / str(entry)).symlink_to(outside / "entry", target_is_directory=True)
        with pytest.raises(HarnessError, match="no trash entry"):  # not listed: a link is no trash entry
            await harness.note_restore(entry)
        assert harness.trash_entries() == []
        assert not (tmp_path / "notes" / "a.md").exists()
    assert {k: v for k, v in tree_hash(outside).items() if not k.startswith("entry")} == before


# -- the root-swap race battery ---------------------------------------------------------------------

async def _round(harness: Harness, index: int, outcomes: dict[str, Counter[str]]) -> None:
    """write -> edit -> delete -> restore of ``xN.md``; each outcome counted by error code."""

    async def call(operation: str, coro: Awaitable[Any]) -> Any:
        try:
            result = await coro
        except Exception as exc:  # a HarnessError's code; anything else is counted as other
            outcomes[operation][exc.code if isinstance(exc, HarnessError) else f"other:{exc!r}"[:120]] += 1
            return None
        outcomes[operation]["ok"] += 1
        return result

    name = f"x{index % 8}.md"
    written = await call("write", harness.note_write(NoteWriteRequest(source="notes", path=name,
                                                                      content=f"round {index}", overwrite=True)))
    if written is None:  # refused at once: wait a moment, so rounds sample the swaps, not one window
        await anyio.sleep(random.uniform(0, 0.003))
        return
    if written.version is not None:  # None: saved, but the index read the path while it was elsewhere
        await call("edit", harness.note_edit(NoteEditRequest(id=written.id, op="append", text=f"edit {index}",
                                                             expected_version=written.version)))
    deleted = await call("delete", harness.note_delete(NoteDeleteRequest(id=written.id)))
    if deleted is not None:
        await call("restore", harness.note_restore(deleted.trash_id))


@pytest.mark.slow
async def test_the_note_calls_never_act_outside_while_the_root_is_swapped(tmp_path: Path) -> None:
    outside = canaries(tmp_path / "outside")
    before = tree_hash(outside)
    root = tmp_path / "notes"
    config = writable_notes_config(tmp_path)
    outcomes: dict[str, Counter[str]] = {op: Counter() for op in ("write", "edit", "delete", "restore")}
    started = time.monotonic()
    async with Harness.open(config) as harness:
        flipper = start_flipper(root, outside, seed=11, pause=0.008, hold=0.001)
        try:
            for index in range(ROUNDS):
                await _round(harness, index, outcomes)
        finally:
            Path(f"{root}-stop").touch()
            flips = int(flipper.communicate(timeout=60)[0].strip() or 0)
    seconds = time.monotonic() - started
    figures = {"rounds": ROUNDS, "flips": flips, "seconds": round(seconds, 1),
               "outcomes": {op: dict(c) for op, c in outcomes.items()}}
    after = tree_hash(outside)
    figures["outside_changed"] = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert figures["outside_changed"] == [], figures
    assert canary_in_trash(tmp_path / "data") == [], figures
    assert not root.is_symlink() and flips > 50, figures
    for operation, counted in outcomes.items():  # acted, and every refusal a clear one
        assert counted.get("ok", 0) > 0 or operation == "restore", (operation, figures)
        assert set(counted) <= {"ok", "conflict", "bad_request", "not_found"}, (operation, figures)
    assert sum(c.get("conflict", 0) for c in outcomes.values()) > 0, figures  # the swaps reached the calls
