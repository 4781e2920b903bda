"""The file work of each note operation, given a source's root and a note's checked relative path
(``notes.paths.resolve``): each walks from the root with open folders (``notes.folder``), acts only on
regular files, and turns what the OS refuses into an error that names the fix. The write-back service
calls these under the writer lock with the root held open (``notes.roots``: checked, then walked from
its descriptor); the race battery calls them directly, with a root path."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from context_harness.notes import trash
from context_harness.notes.atomic import Text, encode, move_new_at, read_text_at, write_atomic_at
from context_harness.notes.folder import Folder, Held, refusals, walk


def write(root: Path | Held, rel: str, text: str, *, overwrite: bool) -> None:
    with refusals(rel, "written"), _folder(root, rel, create=True) as folder:
        write_atomic_at(folder, _name(rel), encode(Text(text)), overwrite=overwrite)


def edit(root: Path | Held, rel: str, change: Callable[[str], str]) -> None:
    """Replace the note's text by ``change(text)``, keeping its line endings and BOM."""
    with refusals(rel, "edited"), _folder(root, rel) as folder:
        note = read_text_at(folder, _name(rel))
        write_atomic_at(folder, _name(rel), encode(Text(change(note.text), note.crlf, note.bom)))


def move(root: Path | Held, rel: str, new_rel: str) -> None:
    with refusals(rel, "moved"), _folder(root, rel) as source, _folder(root, new_rel, create=True) as target:
        move_new_at(source, _name(rel), target, _name(new_rel))


def delete(root: Path | Held, rel: str, data_dir: Path, source: str, version: str | None) -> trash.TrashEntry:
    with refusals(rel, "deleted"), _folder(root, rel) as folder:
        return trash.move_to_trash(data_dir, folder, _name(rel), source, rel, version)


def restore(root: Path | Held, data_dir: Path, entry: trash.TrashEntry, rel: str) -> None:
    with refusals(rel, "restored"), _folder(root, rel, create=True) as folder:
        trash.restore(data_dir, entry, folder, _name(rel))


def _folder(root: Path | Held, rel: str, *, create: bool = False) -> AbstractContextManager[Folder]:
    return walk(root, rel.split("/")[:-1], create=create)


def _name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


__all__ = ["delete", "edit", "move", "restore", "write"]
