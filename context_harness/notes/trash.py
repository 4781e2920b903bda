"""The trash of deleted notes: ``<data dir>/trash/<id>/`` holds the file and ``manifest.json``
(source, path, when, version), never inside a source's root. ``restore`` puts a file back and
refuses to overwrite one that exists."""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import secrets
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from context_harness.errors import BadRequest, NotFound

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class TrashEntry:
    id: str
    source: str
    path: str
    deleted_at: str
    version: str | None = None


def move_to_trash(data_dir: Path, file: Path, source: str, rel: str, version: str | None = None) -> TrashEntry:
    """Move ``file`` (``rel`` of ``source``) into the trash; returns its entry."""
    now = dt.datetime.now(dt.UTC)
    entry = TrashEntry(f"{now:%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(3)}", source, rel, now.isoformat(), version)
    folder = data_dir / "trash" / entry.id
    folder.mkdir(parents=True)
    (folder / MANIFEST).write_text(json.dumps(asdict(entry), ensure_ascii=False), encoding="utf-8")
    _move(file, folder / Path(rel).name)
    return entry


def _move(file: Path, target: Path) -> None:
    """Rename ``file`` to ``target``; across filesystems (a source on another disk than the data
    folder), copy, fsync, then remove the original."""
    try:
        os.replace(file, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.copy2(file, target)
        with open(target, "rb") as copied:
            os.fsync(copied.fileno())
        file.unlink()


def entries(data_dir: Path) -> list[TrashEntry]:
    """Every trash entry, newest first."""
    folder = data_dir / "trash"
    out = []
    for manifest in folder.glob(f"*/{MANIFEST}") if folder.is_dir() else []:
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


def restore(data_dir: Path, entry: TrashEntry, target: Path) -> None:
    """Put ``entry``'s file back at ``target`` (the resolved ``entry.path``); never overwrites."""
    folder = data_dir / "trash" / entry.id
    target.parent.mkdir(parents=True, exist_ok=True)
    kept = folder / Path(entry.path).name
    try:
        os.link(kept, target)  # fails if a file is there
    except FileExistsError:
        raise BadRequest(f"{entry.path} exists again; move or delete it first, then restore") from None
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        with open(kept, "rb") as old, open(target, "xb") as new:  # "x": never over a file that appeared
            shutil.copyfileobj(old, new)
            new.flush()
            os.fsync(new.fileno())
    kept.unlink()
    (folder / MANIFEST).unlink()
    folder.rmdir()


__all__ = ["TrashEntry", "entries", "find", "move_to_trash", "restore"]
