"""A scripted OpenAI-compatible chat server on 127.0.0.1, for the tests of ``ctx agent run``.

Stdlib only (``http.server`` in a thread), so it can misbehave on purpose. It answers each
``POST /v1/chat/completions`` with the next reply of its script, in order, and keeps what it was
sent: ``requests`` (the parsed JSON bodies) and ``headers`` (each request's headers, names in lower
case), so a test can assert the system message, the tools and their JSON Schemas, the tool results
fed back and the ``Authorization`` header. ``GET /v1/models`` lists its one model.

Replies (the constructors below): ``tool_calls``, ``message``, ``raw_arguments`` (a tool call whose
arguments are not JSON), ``status`` (an HTTP error), ``delay`` (answer late), ``garbage`` (200 and
a body that is not JSON), ``huge`` (200 and a body of n bytes, written in pieces) and ``close``
(drop the connection without answering). A request with ``"stream": true`` gets 400 and uses no
reply; after the last reply every request gets 500 ``script exhausted``. Tool call ids run
``call_1``, ``call_2``, ... over the server's life. Each answer's ``usage`` counts tokens as a
quarter of the characters: the request body's for ``prompt_tokens``, the message's for
``completion_tokens`` (or what a reply's ``usage=`` says; ``usage={}`` leaves it out)::

    with ScriptedChat([tool_calls([("search", {"query": "quokka"})]), message("Quokkas live on Rottnest.")],
                      model="local") as chat:
        # [models.local] url = chat.url, model = "local"; run the agent ...
        assert chat.requests[0]["messages"][0]["role"] == "system"
        assert chat.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": ...}
        assert chat.headers[0]["authorization"] == "Bearer sk-test"
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PIECE = 64 * 1024  # bytes written at a time by ``huge``
HUGE_MIN = 4096  # the smallest ``huge`` (its JSON around the text takes a few hundred bytes)


@dataclass(frozen=True)
class Reply:
    """One scripted answer; made by the constructors below, not by hand."""

    kind: str
    message: dict[str, Any] | None = None
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    code: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    seconds: float = 0.0
    then: Reply | None = None
    size: int = 0
    chunked: bool = False


def tool_calls(calls: Iterable[tuple[str, dict[str, Any]]], text: str | None = None,
               usage: dict[str, int] | None = None) -> Reply:
    """An assistant message calling ``(name, arguments)`` tools (``finish_reason: "tool_calls"``);
    ``text``: content beside the calls."""
    return Reply("tool_calls", {"role": "assistant", "content": text,
                                "tool_calls": [(name, json.dumps(arguments)) for name, arguments in calls]},
                 "tool_calls", usage)


def raw_arguments(name: str, arguments: str, usage: dict[str, int] | None = None) -> Reply:
    """A call of tool ``name`` whose ``arguments`` string is sent as given (e.g. ``"{not json"``)."""
    return Reply("tool_calls", {"role": "assistant", "content": None, "tool_calls": [(name, arguments)]},
                 "tool_calls", usage)


def message(text: str, finish_reason: str = "stop", usage: dict[str, int] | None = None) -> Reply:
    """A final assistant message."""
    return Reply("message", {"role": "assistant", "content": text}, finish_reason, usage)


def status(code: int, body: str | bytes | dict[str, Any] = "") -> Reply:
    """An HTTP error (or any status) with ``body`` (a dict is sent as JSON)."""
    if isinstance(body, dict):
        return Reply("status", code=code, body=json.dumps(body).encode())
    data = body.encode() if isinstance(body, str) else body
    return Reply("status", code=code, body=data, content_type="text/plain; charset=utf-8")


def delay(seconds: float, then: Reply) -> Reply:
    """``then``, after ``seconds`` (cut short, with the connection dropped, when the server stops)."""
    return Reply("delay", seconds=seconds, then=then)


def garbage(body: bytes = b"<html><body>502 Bad Gateway</body></html>") -> Reply:
    """200 with ``body``, which is not JSON."""
    return Reply("garbage", body=body, content_type="text/html")


def huge(n_bytes: int, chunked: bool = False) -> Reply:
    """200 with a chat completion of exactly ``n_bytes`` (at least ``HUGE_MIN``: a final message of
    about that much text), written ``PIECE`` bytes at a time so the server never holds it;
    ``chunked``: without a Content-Length (chunked transfer encoding), so only reading tells the size."""
    if n_bytes < HUGE_MIN:
        raise ValueError(f"huge({n_bytes}): at least {HUGE_MIN} bytes (the completion around the text)")
    return Reply("huge", size=n_bytes, chunked=chunked)


def close() -> Reply:
    """Drop the connection without answering."""
    return Reply("close")


class ScriptedChat:
    """The server, as a context manager: started on a free port of 127.0.0.1, stopped on exit."""

    def __init__(self, script: Iterable[Reply], model: str = "scripted") -> None:
        self.script = list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""
        self._lock = threading.Lock()
        self._next = 0
        self._calls = 0
        self._answers = 0
        self.stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._open: set[socket.socket] = set()  # connections being served (kept alive)
        self._thread: threading.Thread | None = None

    @property
    def replies_left(self) -> int:
        with self._lock:
            return len(self.script) - self._next

    def extend(self, *replies: Reply) -> None:
        """More replies at the end of the script."""
        with self._lock:
            self.script.extend(replies)

    def __enter__(self) -> ScriptedChat:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.chat = self  # type: ignore[attr-defined]
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-chat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        with self._lock:  # kept-alive connections too: nothing answers once the block is left
            for conn in self._open:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._thread.join(timeout=5)

    def opened(self, conn: socket.socket, is_open: bool) -> None:
        with self._lock:
            if is_open:
                self._open.add(conn)
            else:
                self._open.discard(conn)

    # -- used by the handler ---------------------------------------------------------------------

    def take(self, body: dict[str, Any], headers: dict[str, str], answer: bool = True) -> Reply | None:
        """Record a request and hand out the next reply (None: the script is exhausted, or not
        ``answer``: a request refused without using a reply)."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if not answer or self._next >= len(self.script):
                return None
            self._next += 1
            return self.script[self._next - 1]

    def completion(self, reply: Reply, request_body: bytes, model: str) -> dict[str, Any]:
        """The chat completion of ``reply`` (a message or tool calls), with fresh call ids and usage."""
        assert reply.message is not None
        with self._lock:
            self._answers += 1
            answer = self._answers
            said = dict(reply.message)
            if "tool_calls" in said:
                calls = []
                for name, arguments in said["tool_calls"]:
                    self._calls += 1
                    calls.append({"id": f"call_{self._calls}", "type": "function",
                                  "function": {"name": name, "arguments": arguments}})
                said["tool_calls"] = calls
        prompt = len(request_body) // 4
        completion = max(1, len(json.dumps(said)) // 4)
        usage = reply.usage if reply.usage is not None else {
            "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        body: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{answer}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": said, "finish_reason": reply.finish_reason}]}
        if usage:  # usage={}: an endpoint that does not count tokens leaves it out
            body["usage"] = usage
        return body


def _error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedChat/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet tests
        pass

    @property
    def chat(self) -> ScriptedChat:
        return self.server.chat  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        self.chat.opened(self.connection, True)
        if self.chat.stopping.is_set():  # accepted as the server stopped
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        self.chat.opened(self.connection, False)
        super().finish()

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": [
                {"id": self.chat.model, "object": "model", "created": 0, "owned_by": "scripted"}]}).encode())
        else:
            self._send(404, _error(f"no such path: GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, _error(f"no such path: POST {self.path}", "not_found"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, _error("the request body is not JSON", "invalid_request_error"))
            return
        if not isinstance(body, dict):
            self._send(400, _error("the request body is not a JSON object", "invalid_request_error"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        if body.get("stream"):
            self.chat.take(body, headers, answer=False)
            self._send(400, _error("stream: true is not supported by the scripted server", "invalid_request_error"))
            return
        reply = self.chat.take(body, headers)
        if reply is None:
            self._send(500, _error(f"script exhausted: all {len(self.chat.script)} scripted replies were used",
                                   "script_exhausted"))
            return
        self._answer(reply, raw, str(body.get("model") or self.chat.model))

    def _answer(self, reply: Reply, raw: bytes, model: str) -> None:
        try:
            if reply.kind == "delay":
                assert reply.then is not None
                if self.chat.stopping.wait(reply.seconds):
                    self.close_connection = True
                    return
                self._answer(reply.then, raw, model)
            elif reply.kind in ("tool_calls", "message"):
                self._send(200, json.dumps(self.chat.completion(reply, raw, model)).encode())
            elif reply.kind in ("status", "garbage"):
                self._send(reply.code, reply.body, reply.content_type)
            elif reply.kind == "huge":
                self._huge(reply, raw, model)
            elif reply.kind == "close":
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: nothing to answer
            self.close_connection = True

    def _huge(self, reply: Reply, raw: bytes, model: str) -> None:
        prompt, completion = len(raw) // 4, reply.size // 4
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        shell = json.dumps(self.chat.completion(message("\x00", usage=usage), raw, model)).encode()
        head, tail = shell.split(b"\\u0000")
        fill = reply.size - len(head) - len(tail)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if reply.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(reply.size))
        self.end_headers()
        piece = b"x" * PIECE
        self._write(head, reply.chunked)
        while fill > 0:
            self._write(piece[:fill], reply.chunked)
            fill -= PIECE
        self._write(tail, reply.chunked)
        if reply.chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _write(self, data: bytes, chunked: bool) -> None:
        if chunked:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            self.wfile.write(data)


__all__ = ["HUGE_MIN", "PIECE", "Reply", "ScriptedChat", "close", "delay", "garbage", "huge", "message", "raw_arguments",
           "status", "tool_calls"]
