"""Atomic replacement of a note: a hidden temp file in the same folder (``.ctx-tmp-*``, which the
filesystem connector never indexes), written, fsynced, renamed over the target, the folder fsynced.
A crash leaves the old file or the new one, never a part; stale temp files are removed by the next
write into that folder. An edited file keeps its line endings, its BOM and its permission bits."""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from context_harness.errors import BadRequest

TEMP_PREFIX = ".ctx-tmp-"
BOM = "\ufeff"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class Text:
    """A note's text with LF line endings, and how it is stored on disk."""

    text: str
    crlf: bool = False
    bom: bool = False


def read_text(path: Path) -> Text:
    """The note at ``path`` (never through a symlink); ``BadRequest`` when it is not UTF-8."""
    fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(f"{path.name} is not UTF-8 text; notes can only edit UTF-8 files") from None
    bom = text.startswith(BOM)
    text = text.removeprefix(BOM)
    crlf = "\r\n" in text
    return Text(text.replace("\r\n", "\n"), crlf, bom)


def encode(note: Text) -> bytes:
    text = note.text.replace("\r\n", "\n")
    if note.crlf:
        text = text.replace("\n", "\r\n")
    return ((BOM if note.bom else "") + text).encode("utf-8")


def write_atomic(path: Path, data: bytes, *, overwrite: bool = True) -> None:
    """Put ``data`` at ``path`` atomically (see the module docstring); ``overwrite=False`` refuses an
    existing file. A replaced file's permission bits are kept."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale(folder)
    mode = 0o644
    try:
        existing = os.lstat(path)
        if stat.S_ISLNK(existing.st_mode) or not stat.S_ISREG(existing.st_mode):
            raise BadRequest(f"{path.name} is not a regular file; notes replace only regular files")
        if not overwrite:
            raise BadRequest(f"{path.name} exists already; pass overwrite = true to replace it, or choose "
                             "another path")
        mode = stat.S_IMODE(existing.st_mode)
    except FileNotFoundError:
        pass
    temp = folder / f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(temp, path)
        else:
            _link_new(temp, path)  # fails if the file appeared meanwhile
            os.unlink(temp)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_folder(folder)


def move_new(source: Path, target: Path) -> None:
    """Move ``source`` to ``target``, which must not exist (a hard link, then the old name removed:
    never a moment without the note, never a replaced file); both folders are fsynced."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _link_new(source, target)
    os.unlink(source)
    _fsync_folder(target.parent)
    if source.parent != target.parent:
        _fsync_folder(source.parent)


def _link_new(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except FileExistsError:
        raise BadRequest(f"{target.name} exists already; choose another path") from None


def remove_stale(folder: Path) -> None:
    """Remove temp files a killed writer left in ``folder``."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(TEMP_PREFIX):
            (folder / name).unlink(missing_ok=True)


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["TEMP_PREFIX", "Text", "encode", "move_new", "read_text", "remove_stale", "write_atomic"]
