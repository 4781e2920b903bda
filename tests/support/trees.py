"""Hostile trees on disk: deep nesting past ``PATH_MAX``, FIFOs, sockets and device nodes, names that
are not UTF-8. Made and removed without recursion and without long paths (``shutil.rmtree`` and
``os.makedirs`` recurse, and fail past ~1,000 levels)."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

LATIN1_NAME = b"caf\xe9.md"  # "café.md" as an old disk or a zip holds it: not UTF-8


def make_deep(top: Path, depth: int, leaf: str = "bottom.md", text: str = "# Bottom\n\nat the very bottom\n",
              name: str = "d") -> None:
    """``top/d/d/.../d/leaf`` with ``depth`` folders, made one folder descriptor at a time."""
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        out = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, text.encode())
        os.close(out)
    finally:
        os.close(fd)


def remove_deep(top: Path, name: str = "d") -> None:
    """Remove ``top/name`` however deep, one level at a time: its sub-folder ``name`` moves up."""
    current, spare = top / name, top / f".{name}.next"
    while current.is_dir():
        for entry in os.scandir(current):
            if entry.name != name or not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
        if (current / name).is_dir():
            os.rename(current / name, spare)
            os.rmdir(current)
            os.rename(spare, current)
        else:
            os.rmdir(current)


def make_socket(path: Path) -> None:
    """A unix socket bound at ``path`` (it stays on disk once the socket is closed)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))


def make_device(path: Path, major: int = 1, minor: int = 3) -> bool:
    """A character device node (default: a twin of ``/dev/null``; 1, 5 is ``/dev/zero``); False
    where the machine does not allow ``mknod``."""
    try:
        os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(major, minor))
    except (PermissionError, OSError):
        return False
    return True


def unblock_fifos(root: Path) -> None:
    """Open every FIFO under ``root`` for writing and close it, so a reader blocked on one returns."""
    folders = [str(root)]
    while folders:  # not os.walk: it recurses, and fails in a deep tree
        with contextlib.suppress(OSError), os.scandir(folders.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif stat.S_ISFIFO(entry.stat(follow_symlinks=False).st_mode):
                    with contextlib.suppress(OSError):
                        os.close(os.open(entry.path, os.O_WRONLY | os.O_NONBLOCK))


def within(seconds: float, fn: Callable[[], Any], on_timeout: Callable[[], None] = lambda: None) -> Any:
    """``fn()`` in a thread; AssertionError if it has not returned within ``seconds`` (then
    ``on_timeout`` runs, e.g. ``unblock_fifos``, so the thread can end)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        on_timeout()
        thread.join(5)
        raise AssertionError(f"still running after {seconds} s (blocked?)")
    if "error" in box:
        raise box["error"]
    return box["value"]

