"""The local socket of a serving knowledge base: how ``ctx search``, ``get`` and ``sources`` ask the
process already serving the same workspace (``ctx serve``, stdio or HTTP, ``ctx watch``) instead of
opening it again (and loading the embedding model again) in a process of their own.

The serving process listens on ``serving.sock`` in the workspace's data folder: a Unix socket
owned by the user, mode 0600 (``core/local_reads.py``). One exchange a connection, one JSON line each
way, after the server's greeting::

    server: {"v": 1, "pid": 1234, "workspace": {...}}            at once on accept
    client: {"op": "search", "args": {...}, "workspace": {...}}  at most MAX_REQUEST bytes
    server: {"result": {...}} or {"error": {"code", "message"}}  at most MAX_REPLY bytes

``workspace`` is this module's ``identity``: the program's version, the config file (its path and a
digest of its bytes) and the data folder. The client uses an answer only when the greeting names
exactly its own workspace; anything else (no socket, a socket of another user or with a looser
mode, a dead server's file, a server that does not greet within ``GREET_SECONDS``, another version,
another config) gives ``None`` and the command answers locally. Only reads are asked (``READS``);
the server refuses any other op. Standard library only: the client side runs before anything heavy
is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from context_harness import __version__

SOCKET_NAME = "serving.sock"
PROTOCOL = 1
READS = ("search", "get", "sources")
MAX_REQUEST = 64 * 1024  # a search's arguments are far smaller
MAX_REPLY = 64 * 1024 * 1024  # a get of the whole (1,000,000-character) document, escaped, fits
GREET_SECONDS = 1.0  # a server that does not greet by then is stopped or stuck: answer locally
ANSWER_SECONDS = 120.0  # a greeting server then has this long to answer
MAX_ADDRESS = 100  # sun_path holds 104-108 bytes; a longer path is reached through /proc/self/fd


def identity(config_path: Path | None, data_dir: Path) -> dict[str, Any]:
    """What names a workspace: the program's version, the config file and its bytes, the data folder."""
    digest = None
    if config_path is not None:
        try:
            digest = hashlib.sha256(config_path.read_bytes()).hexdigest()
        except OSError:
            digest = "unreadable"
    return {"version": __version__, "config": str(config_path.resolve()) if config_path else None,
            "config_sha256": digest, "data": str(data_dir.resolve())}


@contextlib.contextmanager
def address(path: Path) -> Iterator[str | None]:
    """A name ``bind``/``connect`` accept for ``path`` (through the folder's descriptor on Linux when
    the path is too long for a socket address); None when there is none."""
    if len(os.fsencode(str(path))) <= MAX_ADDRESS:
        yield str(path)
        return
    if not sys.platform.startswith("linux"):
        yield None
        return
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield None
        return
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)


def owned_socket(path: Path) -> bool:
    """Whether ``path`` is a socket of this user that nobody else may open (mode 0600 or tighter)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def ask(data_dir: Path, workspace: dict[str, Any], op: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """The serving process's reply to ``op`` (``{"result": ...}`` or ``{"error": ...}``, plus the
    server's ``pid``), or None when no server of this very workspace answered: then answer locally."""
    if op not in READS:
        raise ValueError(f"{op} is not a read")
    path = data_dir / SOCKET_NAME
    if not owned_socket(path):
        return None
    try:
        with address(path) as name, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            if name is None:
                return None
            sock.settimeout(GREET_SECONDS)
            sock.connect(name)
            reader = _Lines(sock)
            greeting = json.loads(reader.line(4096, time.monotonic() + GREET_SECONDS))
            if (not isinstance(greeting, dict) or greeting.get("v") != PROTOCOL
                    or greeting.get("workspace") != workspace):
                return None
            sock.settimeout(ANSWER_SECONDS)
            request = json.dumps({"op": op, "args": args, "workspace": workspace}, ensure_ascii=False)
            sock.sendall(request.encode("utf-8") + b"\n")
            reply = json.loads(reader.line(MAX_REPLY, time.monotonic() + ANSWER_SECONDS))
    except (OSError, ValueError, UnicodeDecodeError):  # refused, timed out, closed, not JSON: locally then
        return None
    if not isinstance(reply, dict) or not ("result" in reply or isinstance(reply.get("error"), dict)):
        return None
    return {**reply, "pid": greeting.get("pid")}


class _Lines:
    """Lines from a blocking socket, each bounded in size and by a deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def line(self, limit: int, deadline: float) -> str:
        start = 0
        while (end := self.buffer.find(b"\n", start)) < 0:
            start = len(self.buffer)
            left = deadline - time.monotonic()
            if left <= 0 or start > limit:
                raise ValueError("no complete line in time or within the limit")
            self.sock.settimeout(left)
            data = self.sock.recv(1 << 20)
            if not data:
                raise ValueError("closed before a complete line")
            self.buffer += data
        if end > limit:
            raise ValueError("line over the limit")
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        return line.decode("utf-8")


__all__ = ["GREET_SECONDS", "MAX_REQUEST", "PROTOCOL", "READS", "SOCKET_NAME", "address", "ask", "identity",
           "owned_socket"]
