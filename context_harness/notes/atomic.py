"""Atomic replacement of a note: a hidden temp file in the same folder (``.ctx-tmp-*``, which the
filesystem connector never indexes), written, fsynced, renamed over the target, the folder fsynced.
A crash leaves the old file or the new one, never a part; stale temp files are removed by the next
write into that folder. An edited file keeps its line endings, its BOM and its permission bits; a
read-only file (no owner write bit) is refused, never replaced.

Everything happens relative to an open ``Folder`` (``notes.folder``), so a folder swapped for a
symlink meanwhile cannot redirect a write; the ``Path`` forms open the folder by its path, for the
workspace's own files."""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from context_harness.errors import BadRequest, Forbidden
from context_harness.notes.folder import CLOEXEC, NOFOLLOW, Folder, open_path

TEMP_PREFIX = ".ctx-tmp-"
BOM = "\ufeff"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Text:
    """A note's text with LF line endings, and how it is stored on disk."""

    text: str
    crlf: bool = False
    bom: bool = False


def read_text(path: Path) -> Text:
    """The note at ``path`` (never through a symlink); ``BadRequest`` when it is not UTF-8."""
    with open_path(path.parent) as folder:
        return read_text_at(folder, path.name)


def read_text_at(folder: Folder, name: str) -> Text:
    fd, _ = folder.open_file(name)
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(f"{name} is not UTF-8 text; notes can only edit UTF-8 files") from None
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
    existing file."""
    with open_path(path.parent, create=True) as folder:
        write_atomic_at(folder, path.name, data, overwrite=overwrite)


def write_atomic_at(folder: Folder, name: str, data: bytes, *, overwrite: bool = True) -> None:
    remove_stale_at(folder)
    mode = _mode_to_keep(folder, name, overwrite)
    temp = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o600, dir_fd=folder.fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(temp, name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
        else:  # a link fails if the name appeared meanwhile
            os.link(temp, name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd, follow_symlinks=False)
            os.unlink(temp, dir_fd=folder.fd)
    except BaseException:
        _unlink_quietly(folder, temp)
        raise
    folder.fsync()


def _mode_to_keep(folder: Folder, name: str, overwrite: bool) -> int:
    existing = folder.lstat(name)
    if existing is None:
        return 0o644
    if not stat.S_ISREG(existing.st_mode):
        raise BadRequest(f"{folder.path_of(name)} is not a regular file; notes replace only regular files")
    if not overwrite:
        raise BadRequest(f"{folder.path_of(name)} exists already; pass overwrite = true to replace it, or "
                         "choose another path")
    if not existing.st_mode & stat.S_IWUSR:
        raise Forbidden(f"{folder.path_of(name)} is read-only (mode {stat.S_IMODE(existing.st_mode):o}); make it "
                        "writable first if it should change")
    return stat.S_IMODE(existing.st_mode)


def move_new_at(source: Folder, name: str, target: Folder, new_name: str) -> None:
    """Move the note ``name`` to ``new_name`` in ``target``, which must not exist: the opened file is
    linked there, then its old name removed while it still names that file (never a moment without
    the note, never a replaced file); both folders are fsynced."""
    fd, info = source.open_file(name)
    try:
        target.link_open_file(fd, info, new_name, source, name)
    except FileExistsError:
        raise BadRequest(f"{target.path_of(new_name)} exists already; choose another path") from None
    finally:
        os.close(fd)
    try:
        source.unlink_if(name, info, "moved")
    except BaseException:
        target.unlink_if(new_name, info, "moved")
        raise
    target.fsync()
    source.fsync()


def copy_new_at(fd: int, target: Folder, name: str) -> None:
    """Copy the open file ``fd`` to a new file ``name`` in ``target`` (never over an existing one), fsynced:
    how a note crosses filesystems."""
    os.lseek(fd, 0, os.SEEK_SET)
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o644, dir_fd=target.fd)
    try:
        while chunk := os.read(fd, CHUNK):
            os.write(out, chunk)
        os.fsync(out)
    except BaseException:
        os.close(out)
        _unlink_quietly(target, name)
        raise
    os.close(out)


def remove_stale_at(folder: Folder) -> None:
    for name in folder.names():
        if name.startswith(TEMP_PREFIX):
            _unlink_quietly(folder, name)


def _unlink_quietly(folder: Folder, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder.fd)
    except FileNotFoundError:
        pass


__all__ = ["TEMP_PREFIX", "Text", "copy_new_at", "encode", "move_new_at", "read_text", "read_text_at",
           "remove_stale_at", "write_atomic", "write_atomic_at"]
