"""Folders held open: every note operation walks from the source's root with directory file
descriptors (each component opened ``O_DIRECTORY | O_NOFOLLOW`` relative to the one before) and then
creates, links, renames and unlinks relative to the last one. A symlink swapped into the path at any
moment makes the walk fail (``ELOOP``/``ENOTDIR``) instead of sending the operation through it, and
a note is acted on only as the regular file that was opened and checked: it is moved by linking that
open file's inode, and its old name is unlinked only while it still names that inode. ``unlink``
never removes a folder, so a note that became a folder is refused, never moved.

OS refusals become errors that name the fix (``refusals``): permissions or an immutable flag are
``forbidden``, a name too long or a folder where a note was expected ``bad_request``, a note that
vanished or changed mid-operation ``conflict``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from context_harness.errors import BadRequest, Conflict, Forbidden, StorageFault

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
PROC_FD = Path("/proc/self/fd")
LINK_BY_FD = PROC_FD.is_dir()  # Linux: an open file can be linked by its descriptor


class Held(Protocol):
    """A root folder held open (``notes.roots.Root``)."""

    path: Path

    def check(self) -> None: ...

    def open(self) -> int: ...


class Folder:
    """An open folder (``fd``) at ``rel`` under a root; entries are named relative to it."""

    def __init__(self, fd: int, rel: str) -> None:
        self.fd = fd
        self.rel = rel

    def path_of(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name

    def lstat(self, name: str) -> os.stat_result | None:
        """The entry ``name`` itself (a symlink is not followed); ``None`` when there is none."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def open_file(self, name: str, flags: int = os.O_RDONLY) -> tuple[int, os.stat_result]:
        """Open the regular file ``name`` (never through a symlink, never blocking on a FIFO); the
        descriptor and its ``fstat``. ``BadRequest`` when it is anything else."""
        fd = os.open(name, flags | NOFOLLOW | NONBLOCK | CLOEXEC, dir_fd=self.fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise BadRequest(f"{self.path_of(name)} is {_kind(info.st_mode)}, not a note file; note tools act "
                             "only on regular files")
        return fd, info

    def link_open_file(self, fd: int, info: os.stat_result, name: str, source: Folder | None = None,
                       source_name: str = "") -> None:
        """Give the open file ``fd`` the new name ``name`` here (``FileExistsError`` if taken): by its
        descriptor where ``/proc`` allows, else by ``source``/``source_name`` checked against ``info``."""
        if LINK_BY_FD:
            os.link(PROC_FD / str(fd), name, dst_dir_fd=self.fd, follow_symlinks=True)
            return
        if source is None:
            raise OSError(errno.ENOTSUP, "linking an open file needs /proc")
        os.link(source_name, name, src_dir_fd=source.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        if not same_file(self.lstat(name), info):
            os.unlink(name, dir_fd=self.fd)
            raise Conflict(f"{source.path_of(source_name)} changed while it was being moved; nothing was moved, "
                           "try again")

    def unlink_if(self, name: str, info: os.stat_result, doing: str) -> None:
        """Remove the name ``name`` only while it still names the file ``info`` describes."""
        if not same_file(self.lstat(name), info):
            raise Conflict(f"{self.path_of(name)} changed while it was being {doing}; nothing was {doing}, "
                           "read it again and retry")
        os.unlink(name, dir_fd=self.fd)

    def fsync(self) -> None:
        os.fsync(self.fd)


def same_file(a: os.stat_result | None, b: os.stat_result) -> bool:
    return a is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@contextmanager
def walk(root: Path | Held, parts: Sequence[str], *, create: bool = False) -> Iterator[Folder]:
    """The folder ``parts`` under ``root``, opened one component at a time without following a
    symlink; missing folders are made when ``create``. A held root (``notes.roots``) is checked, then
    walked from its descriptor; a root given as a path is opened as it is now (the workspace's own
    folders, and the file-level race battery)."""
    if isinstance(root, Path):
        fd = os.open(root, os.O_RDONLY | DIRECTORY | CLOEXEC)
    else:
        root.check()
        fd = root.open()
    try:
        for index, name in enumerate(parts):
            nxt = _open_child(fd, name, create, "/".join(parts[:index + 1]))
            os.close(fd)
            fd = nxt
        yield Folder(fd, "/".join(parts))
    finally:
        os.close(fd)


@contextmanager
def open_path(folder: Path, *, create: bool = False) -> Iterator[Folder]:
    """A folder outside any source (the workspace's own: the trash, the agent files), opened by its path."""
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | DIRECTORY | CLOEXEC)
    try:
        yield Folder(fd, folder.name)
    finally:
        os.close(fd)


def _open_child(fd: int, name: str, create: bool, rel: str) -> int:
    flags = os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC
    try:
        return os.open(name, flags, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, 0o755, dir_fd=fd)
    except FileExistsError:
        pass  # made meanwhile: opened below, and refused if it is not a real folder
    return os.open(name, flags, dir_fd=fd)


@contextmanager
def refusals(rel: str, doing: str) -> Iterator[None]:
    """Turn what the OS refuses while ``doing`` the note ``rel`` into an error that names the fix."""
    try:
        yield
    except FileExistsError:
        raise BadRequest(f"{rel} exists already; choose another path") from None
    except FileNotFoundError:
        raise Conflict(f"{rel} is not on disk as it was (moved or deleted meanwhile); nothing was {doing}, "
                       "search again and retry") from None
    except OSError as exc:
        raise _refusal(exc, rel, doing) from None


def _refusal(exc: OSError, rel: str, doing: str) -> Exception:
    code = exc.errno
    if code in (errno.EACCES, errno.EPERM):
        return Forbidden(f"the operating system refused to let {rel} be {doing} ({os.strerror(code)}): check the "
                         "permissions of the file and its folder, or an immutable flag (chattr -i)")
    if code == errno.EROFS:
        return Forbidden(f"{rel} is on a read-only filesystem; it cannot be {doing}")
    if code == errno.ENAMETOOLONG:
        return BadRequest(f"path {rel!r} has a name too long for the filesystem (at most 255 bytes a name); "
                          "choose a shorter one")
    if code in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return BadRequest(f"path {rel!r} goes through a symlink or a file where a folder should be (it may have "
                          f"changed just now); nothing was {doing}: notes are written only through real folders")
    if code in (errno.EISDIR, errno.ENOTEMPTY):
        return BadRequest(f"{rel} is a folder, not a note; nothing was {doing}")
    if code in (errno.ENOSPC, errno.EDQUOT):
        return StorageFault(f"no space left to write {rel}: free some disk space and retry", "disk_full")
    if code == errno.EXDEV:
        return Conflict(f"{rel} moved to another filesystem meanwhile; nothing was {doing}, retry")
    return exc


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "a special file (a FIFO, socket or device)"


__all__ = ["Folder", "Held", "open_path", "refusals", "same_file", "walk"]
