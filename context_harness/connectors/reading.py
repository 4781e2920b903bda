"""Reading a file of a source folder so that nothing on disk can block, flood or stop a sync.

Only regular files are read: a FIFO, socket or device node (even one named ``notes.md``) is refused
by its ``fstat`` once open, and opening cannot block (``O_NONBLOCK``; ``O_NOCTTY``; ``O_NOFOLLOW``
when symlinks are not followed). A read never takes more than ``limit + 1`` bytes, whatever the
file's size was when it was listed. Paths longer than one system call takes (``PATH_MAX``, e.g. in a
10,000-deep tree) are opened a stretch of folders at a time. Every refusal is a ``Skip`` naming its
reason; an ``OSError`` is named by ``os_reason``.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod

from context_harness.errors import Conflict

MAX_OPEN_PATH = 3000  # bytes of path given to one open (PATH_MAX is 4096 on Linux, 1024 on macOS)
READ_CHUNK = 1 << 20
FILE_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
              | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
FD_WALK = os.scandir in os.supports_fd and os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
"""Folders are listed and opened through descriptors (POSIX); elsewhere by path."""

_OS_REASONS = {errno.ENOENT: "vanished", errno.ENOTDIR: "vanished", errno.ELOOP: "symlink",
               errno.ENXIO: "not_a_regular_file", errno.ENAMETOOLONG: "path_too_long"}


class Skip(Exception):
    """A file not read, and why (a skip reason of the sync summary)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def os_reason(exc: OSError) -> str:
    """The skip reason for an ``OSError``: ``vanished`` (gone since it was listed), ``symlink`` (one
    appeared where ``O_NOFOLLOW`` refuses it), ``not_a_regular_file`` (a socket), ``path_too_long``,
    else ``unreadable`` (permission denied, I/O error)."""
    return _OS_REASONS.get(exc.errno or 0, "unreadable")


def _reopen(fd: int, rel: str) -> int:
    """The folder ``rel`` under the folder open as ``fd``, which is closed once that is open."""
    new = os.open(rel, DIR_FLAGS, dir_fd=fd)
    os.close(fd)
    return new


def open_under(root: str, rel: str, flags: int, dir_fd: int | None = None, *, root_fd: int | None = None) -> int:
    """``os.open`` of ``root/rel`` (``rel`` ``/``-separated, "" for ``root``), or of ``rel`` in the
    folder open as ``dir_fd``; with ``root_fd`` (the root held open, ``connectors.held``), ``root`` is
    that folder and its path is never looked up. A path too long for one call is opened a stretch of
    folders at a time."""
    if dir_fd is not None:
        return os.open(rel, flags, dir_fd=dir_fd)
    if root_fd is not None and (not rel or len(os.fsencode(rel)) <= MAX_OPEN_PATH):
        return os.open(rel or ".", flags, dir_fd=root_fd)
    path = os.path.join(root, rel) if rel else root
    if root_fd is None and (len(os.fsencode(path)) <= MAX_OPEN_PATH or not FD_WALK):
        return os.open(path, flags)
    parts = rel.split("/")
    fd = os.open(".", DIR_FLAGS, dir_fd=root_fd) if root_fd is not None else os.open(root, DIR_FLAGS)
    try:
        stretch: list[str] = []
        for part in parts[:-1]:
            if stretch and len(os.fsencode("/".join([*stretch, part]))) > MAX_OPEN_PATH:
                fd = _reopen(fd, "/".join(stretch))
                stretch = []
            stretch.append(part)
        if stretch:
            fd = _reopen(fd, "/".join(stretch))
        return os.open(parts[-1], flags, dir_fd=fd)
    finally:
        os.close(fd)


def stat_under(root: str, rel: str, follow_symlinks: bool, *, root_fd: int | None = None) -> os.stat_result:
    """``os.stat`` (``lstat`` without ``follow_symlinks``) of ``root/rel`` (from ``root_fd`` when
    given, see ``open_under``), whatever its length."""
    if root_fd is not None and (not rel or len(os.fsencode(rel)) <= MAX_OPEN_PATH or "/" not in rel):
        return os.stat(rel, dir_fd=root_fd, follow_symlinks=follow_symlinks) if rel else os.fstat(root_fd)
    path = os.path.join(root, rel) if rel else root
    if root_fd is None and (len(os.fsencode(path)) <= MAX_OPEN_PATH or not FD_WALK or "/" not in rel):
        return os.stat(path, follow_symlinks=follow_symlinks)
    parent, _, name = rel.rpartition("/")
    fd = open_under(root, parent, DIR_FLAGS, root_fd=root_fd)
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=follow_symlinks)
    finally:
        os.close(fd)


def inside(fd: int, real_root: str) -> bool:
    """Whether the file open as ``fd`` lies under ``real_root`` (Linux's ``/proc/self/fd`` says where
    it is; where that cannot be asked, the scan's own check of the path stands)."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return True
    return where == real_root or where.startswith(real_root.rstrip(os.sep) + os.sep)


def read_regular(root: str, rel: str, limit: int, *, follow_symlinks: bool = True, real_root: str | None = None,
                 dir_fd: int | None = None, root_fd: int | None = None) -> bytes:
    """The bytes of the regular file ``root/rel`` (or ``rel`` in the folder open as ``dir_fd``, or
    under the root held as ``root_fd``), at most ``limit``. Raises ``Skip`` (``not_a_regular_file``,
    ``too_large``, ``symlink_escape`` when it resolves outside ``real_root``) or ``OSError`` (see
    ``os_reason``), or ``Conflict`` when the held root itself moved (not the file's doing); never blocks."""
    fd = open_under(root, rel, FILE_FLAGS | (0 if follow_symlinks else NOFOLLOW), dir_fd, root_fd=root_fd)
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            raise Skip("not_a_regular_file", f"{rel} (not a regular file)")
        if real_root is not None and not inside(fd, real_root):
            if root_fd is not None and not inside(root_fd, real_root):  # the held root was renamed meanwhile
                raise Conflict(f"{rel}: the source's folder was moved while it was read; it is read again next sync")
            raise Skip("symlink_escape", f"{rel} -> outside root")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(READ_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise Skip("too_large", f"{rel} (over {limit} bytes when read)")
        return b"".join(chunks)
    finally:
        os.close(fd)
