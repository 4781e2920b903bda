"""The trash of deleted notes: ``<data dir>/trash/<id>/`` holds the file and ``manifest.json``
(source, path, when, version), never inside a source's root. ``restore`` puts a file back and
refuses to overwrite one that exists.

Both directions act on the regular file that was opened and checked, relative to open folders
(``notes.folder``): the file is linked into place by its descriptor (copied across filesystems),
then the old name is removed only while it still names that file. A folder is never moved. The
``trash`` folder and each entry's folder are opened from the data folder without following a symlink:
a trash, or an entry, swapped for a link elsewhere is refused, never written into or restored from."""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from context_harness.errors import BadRequest, NotFound
from context_harness.notes.atomic import copy_new_at, write_atomic_at
from context_harness.notes.folder import Folder, walk

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class TrashEntry:
    id: str
    source: str
    path: str
    deleted_at: str
    version: str | None = None


def move_to_trash(data_dir: Path, folder: Folder, name: str, source: str, rel: str,
                  version: str | None = None) -> TrashEntry:
    """Move the note ``name`` of ``folder`` (``rel`` of ``source``) into the trash; returns its entry."""
    now = dt.datetime.now(dt.UTC)
    entry = TrashEntry(f"{now:%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(3)}", source, rel, now.isoformat(), version)
    fd, info = folder.open_file(name)
    kept = data_dir / "trash" / entry.id
    try:
        with _entry(data_dir, entry.id, create=True) as held:
            _place(fd, info, held, name, folder, name)
            write_atomic_at(held, MANIFEST, json.dumps(asdict(entry), ensure_ascii=False).encode("utf-8"))
        folder.unlink_if(name, info, "deleted")
    except BaseException:
        shutil.rmtree(kept, ignore_errors=True)  # never follows a symlink
        raise
    finally:
        os.close(fd)
    folder.fsync()
    return entry


def _place(fd: int, info: os.stat_result, target: Folder, name: str, source: Folder | None = None,
           source_name: str = "") -> None:
    """Give the open file ``fd`` the name ``name`` in ``target``: a link, or a copy across filesystems
    (a source on another disk than the data folder). ``FileExistsError`` when the name is taken."""
    try:
        target.link_open_file(fd, info, name, source, source_name)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        copy_new_at(fd, target, name)
    target.fsync()


@contextmanager
def _entry(data_dir: Path, entry_id: str, *, create: bool = False) -> Iterator[Folder]:
    """The folder of trash entry ``entry_id``, opened from the data folder without following a symlink."""
    if create:
        data_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        try:
            held = stack.enter_context(walk(data_dir, ["trash", entry_id], create=create))
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            raise BadRequest(f"{data_dir / 'trash'} or its entry {entry_id} is a symlink or a file, not a folder; "
                             "the trash is used only as real folders: move that entry aside") from None
        yield held


def entries(data_dir: Path) -> list[TrashEntry]:
    """Every trash entry, newest first (a symlink in place of the trash or of an entry is passed by)."""
    folder = data_dir / "trash"
    out = []
    for manifest in folder.glob(f"*/{MANIFEST}") if folder.is_dir() and not folder.is_symlink() else []:
        if manifest.parent.is_symlink():
            continue
        try:
            out.append(TrashEntry(**json.loads(manifest.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(out, key=lambda e: e.id, reverse=True)


def find(data_dir: Path, entry_id: str | None = None, path: str | None = None) -> TrashEntry:
    """The entry ``entry_id``, or the latest one for ``path``."""
    for entry in entries(data_dir):
        if entry.id == entry_id or (entry_id is None and entry.path == path):
            return entry
    wanted = f"id {entry_id!r}" if entry_id else f"path {path!r}"
    raise NotFound(f"no trash entry with {wanted}; see <data dir>/trash/*/manifest.json")


def restore(data_dir: Path, entry: TrashEntry, target: Folder, name: str) -> None:
    """Put ``entry``'s file back as ``name`` in ``target`` (the folder of ``entry.path``); never overwrites."""
    folder = data_dir / "trash" / entry.id
    with _entry(data_dir, entry.id) as held:
        kept = Path(entry.path).name
        try:
            fd, info = held.open_file(kept)
        except BadRequest:
            raise BadRequest(f"trash entry {entry.id} holds a folder, not a note (an older version could delete "
                             f"folders); its files are in {folder / kept}: move them back by hand") from None
        try:
            _place(fd, info, target, name)
        except FileExistsError:
            raise BadRequest(f"{entry.path} exists again; move or delete it first, then restore") from None
        finally:
            os.close(fd)
        os.unlink(kept, dir_fd=held.fd)
        os.unlink(MANIFEST, dir_fd=held.fd)
    with walk(data_dir, ["trash"]) as trash:
        os.rmdir(entry.id, dir_fd=trash.fd)


__all__ = ["TrashEntry", "entries", "find", "move_to_trash", "restore"]
