"""Checks on ``POST /mcp`` bodies before the SDK's Streamable HTTP transport sees them.

Each refusal is an error of the table (``errors``: ``ParseError``, ``InvalidRequest``,
``TooManySessions``), which gives its HTTP status and JSON-RPC code:

- the body may nest arrays and objects at most ``jsonlimits.MAX_DEPTH`` (64) levels deep: else **400**,
  ``-32600``, naming the limit (checked before anything parses it);
- the body must be strict JSON (no ``NaN``/``Infinity``): else **400**, JSON-RPC ``-32700``;
- every message's ``id`` must be a string or an integer: an object, a float, ``NaN`` or a boolean id
  is **400**, ``-32600`` (the SDK accepted such a message with 202 and never answered it);
- a request may not reuse the id of a request still in flight in the same session (the first one's
  stream would never end): **400**, ``-32600``, naming the id;
- a new session beyond ``[server] max_sessions`` is **503**, ``-32603``, naming the key (the SDK
  enforces the same limit; this says how to fix it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from context_harness.common import jsonlimits
from context_harness.common.validation import decode_json
from context_harness.errors import HarnessError, InvalidRequest, ParseError, TooManySessions, outcome

log = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"


def rpc_error(error: HarnessError, request_id: Any = None) -> Response:
    """A JSON-RPC error body for ``error``, with the HTTP status and JSON-RPC code of its row (``id``
    null unless the request's is known)."""
    row = outcome(error)
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": row.jsonrpc_code, "message": error.message}}
    return Response(json.dumps(body), status_code=row.http_status, media_type="application/json")


class JsonRpcGuard:
    """Wraps the SDK's ``/mcp`` app (see the module docstring). ``open_sessions`` counts the 2025-era
    sessions the SDK holds open; ``handshake_versions`` are the protocol versions that open one."""

    def __init__(self, app: ASGIApp, *, max_sessions: int, open_sessions: Any,
                 handshake_versions: frozenset[str]) -> None:
        self.app = app
        self.max_sessions = max_sessions
        self.open_sessions = open_sessions
        self.handshake_versions = handshake_versions
        self.in_flight: set[tuple[str, str]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        if jsonlimits.deeper_than(body, jsonlimits.MAX_DEPTH) is not None:  # json.loads would recurse past it
            await rpc_error(InvalidRequest(jsonlimits.explain("the JSON-RPC message")))(scope, receive, send)
            return
        try:
            messages = _messages(body)
        except HarnessError as exc:
            await rpc_error(ParseError(exc.message))(scope, receive, send)
            return
        invalid = [m["id"] for m in messages if "id" in m and not _valid_id(m["id"])]
        if invalid:
            await rpc_error(InvalidRequest(f"invalid JSON-RPC id {json.dumps(invalid[0])[:80]}: an id must be a "
                                           "string or an integer"))(scope, receive, send)
            return
        headers = dict(scope["headers"])
        session = headers.get(SESSION_HEADER, b"").decode("latin-1")
        if not session and self._opens_session(headers, messages) and self._sessions() >= self.max_sessions:
            log.warning("refused a new MCP session: %d open ([server] max_sessions)", self.max_sessions)
            await rpc_error(TooManySessions(
                f"too many open MCP sessions ({self.max_sessions}, [server] max_sessions): close idle clients, or "
                "raise the limit; idle sessions close after [server] session_idle_timeout"))(scope, receive, send)
            return
        keys = {(session, json.dumps(m["id"])) for m in messages if session and "method" in m and "id" in m}
        clash = keys & self.in_flight
        if clash:
            request_id = json.loads(next(iter(clash))[1])
            clashed = InvalidRequest(f"request id {json.dumps(request_id)[:80]} is already in flight in this session: "
                                     "send each request with a new id")
            await rpc_error(clashed, request_id)(scope, receive, send)
            return
        with self._tracking(keys):
            await self.app(scope, _replay(body, receive), send)

    def _opens_session(self, headers: dict[bytes, bytes], messages: list[dict[str, Any]]) -> bool:
        version = headers.get(VERSION_HEADER)
        handshake = version is None or version.decode("latin-1") in self.handshake_versions
        return handshake and any(m.get("method") == "initialize" for m in messages)

    def _sessions(self) -> int:
        try:
            return len(self.open_sessions())
        except Exception:  # an SDK that moved its session table: its own limit still holds
            return 0

    @contextmanager
    def _tracking(self, keys: set[tuple[str, str]]) -> Iterator[None]:
        self.in_flight |= keys
        try:
            yield
        finally:
            self.in_flight -= keys


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _messages(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a body (one, or a batch); what is not an object is left to the SDK."""
    value = decode_json(body, "the JSON-RPC message") if body.strip() else None
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then waits on the real one (for the disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


__all__ = ["JsonRpcGuard", "rpc_error"]
