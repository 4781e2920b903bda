"""Read requests on the local socket: a serving knowledge base answers ``ctx search``, ``get`` and
``sources`` run beside it through the same ``Harness`` calls MCP and REST use, so a shell search
takes a blink instead of opening the workspace and loading the model again (issue 50).

The socket is ``serving.sock`` in the data folder (the protocol: ``common/localsocket.py``), bound
under a temporary name, made 0600 and renamed into place, so it is never reachable by another user;
a peer of another user id is refused anyway where the kernel says who it is (``SO_PEERCRED``). A
socket another live server of the workspace holds is left alone (that one answers); a dead server's
file is replaced. Each connection: the greeting at once, one request line of at most
``MAX_REQUEST`` bytes within ``REQUEST_SECONDS``, one answer, closed. Only reads are answered; at
most ``CONNECTIONS`` at a time. The socket never stops serving: a failure here is logged and the
rest serves on without it.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc

from context_harness.common import jsonlimits
from context_harness.common.localsocket import MAX_REQUEST, PROTOCOL, READS, SOCKET_NAME, address, identity
from context_harness.common.validation import parse_get, parse_search
from context_harness.config import Config
from context_harness.errors import BadRequest, HarnessError, InternalError
from context_harness.models import DocumentOut, GetRequest, SearchRequest, SearchResponse, SourcesResponse

log = logging.getLogger(__name__)

REQUEST_SECONDS = 10.0
CONNECTIONS = 8


class Reads(Protocol):
    """What the socket asks of ``Harness``."""

    config: Config

    async def search(self, request: SearchRequest) -> SearchResponse: ...

    async def get(self, request: GetRequest | str) -> DocumentOut: ...

    async def sources(self) -> SourcesResponse: ...


async def serve_reads(harness: Reads) -> None:
    """Answer read requests on the data folder's socket until cancelled (serving ends)."""
    data = harness.config.data_dir
    path = data / SOCKET_NAME
    workspace = identity(harness.config.source_path, data)
    try:
        listener = await _listen(path)
    except OSError as exc:
        log.info("local socket not served (%s): ctx search beside this server opens the workspace itself",
                 exc.strerror or exc.__class__.__name__)
        return
    if listener is None:
        log.info("local socket: another serving process of this workspace answers on %s", path)
        return
    bound = os.stat(path).st_ino
    limit = anyio.CapacityLimiter(CONNECTIONS)
    greeting = (json.dumps({"v": PROTOCOL, "pid": os.getpid(), "workspace": workspace}) + "\n").encode()

    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream, limit:
            try:
                await _exchange(harness, stream, greeting, workspace)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
                pass  # the client went away
            except Exception:
                log.exception("local socket: a request failed")

    try:
        async with listener:
            await listener.serve(handle)
    finally:
        try:
            if os.stat(path).st_ino == bound:  # still ours: a later server may have replaced it
                path.unlink()
        except OSError:
            pass


async def _listen(path: Path) -> anyio.abc.SocketListener | None:
    """A listener on ``path``, or None when a live server of the workspace answers there. Bound under
    a temporary name, made 0600, then renamed into place (over a dead server's file)."""
    if await anyio.to_thread.run_sync(_answering, path):
        return None
    temporary = path.with_name(f".serving-{secrets.token_hex(6)}.sock")
    with address(temporary) as name:
        if name is None:
            raise OSError(0, "the data folder's path is too long for a socket")
        listener = await anyio.create_unix_listener(name, mode=0o600)
    try:
        os.replace(temporary, path)
    except BaseException:
        await listener.aclose()
        temporary.unlink(missing_ok=True)
        raise
    return listener


def _answering(path: Path) -> bool:
    """Whether something accepts connections on ``path`` (a dead server's file refuses at once)."""
    if not path.exists():
        return False
    with address(path) as name, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        if name is None:
            return False
        probe.settimeout(1.0)
        try:
            probe.connect(name)
        except OSError:
            return False
    return True


async def _exchange(harness: Reads, stream: anyio.abc.SocketStream, greeting: bytes,
                    workspace: dict[str, Any]) -> None:
    if not _same_user(stream):
        return
    await stream.send(greeting)
    line = b""
    with anyio.move_on_after(REQUEST_SECONDS):
        while b"\n" not in line and len(line) <= MAX_REQUEST:
            line += await stream.receive(MAX_REQUEST + 1)
    if b"\n" not in line or line.index(b"\n") > MAX_REQUEST:
        return  # too slow or too long: no answer
    started = time.perf_counter()
    reply, op = await _answer(harness, line[:line.index(b"\n")], workspace)
    await stream.send((json.dumps(reply, ensure_ascii=False) + "\n").encode("utf-8"))
    log.info("local socket: answered %s in %.0f ms", op, 1000 * (time.perf_counter() - started))


async def _answer(harness: Reads, line: bytes, workspace: dict[str, Any]) -> tuple[dict[str, Any], str]:
    op = "?"
    try:
        try:
            request = jsonlimits.loads(line.decode("utf-8"), max_depth=16)
        except (ValueError, UnicodeDecodeError):
            raise BadRequest("the local socket takes one JSON object a line") from None
        if not isinstance(request, dict) or not isinstance(request.get("args"), dict):
            raise BadRequest("the local socket takes {op, args, workspace}")
        op = str(request.get("op"))[:40]
        if op not in READS:
            raise BadRequest(f"the local socket answers only {', '.join(READS)}; it changes nothing")
        if request.get("workspace") != workspace:
            raise BadRequest("this server serves another workspace (config or version)")
        args = request["args"]
        if op == "search":
            result: Any = await harness.search(parse_search(args))
        elif op == "get":
            result = await harness.get(parse_get(args))
        else:
            result = await harness.sources()
        return {"result": result.model_dump(mode="json")}, op
    except HarnessError as error:
        return error.to_dict(), op
    except Exception:
        log.exception("local socket: %s failed", op)
        return InternalError("internal error").to_dict(), op


def _same_user(stream: anyio.abc.SocketStream) -> bool:
    """False when the kernel says the peer runs as another user (Linux); the 0600 file keeps others out."""
    if not sys.platform.startswith("linux"):
        return True
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    try:
        _pid, uid, _gid = struct.unpack("3i", raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                             struct.calcsize("3i")))
    except OSError:
        return True
    if uid != os.getuid():
        log.warning("local socket: refused a connection from user id %d", uid)
        return False
    return True


__all__ = ["CONNECTIONS", "REQUEST_SECONDS", "Reads", "serve_reads"]
