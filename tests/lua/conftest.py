"""Fixtures for the Lua tests: a real HTTP server on 127.0.0.1, a fake Harness context, script files."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from context_harness.config import LuaConfig, ScriptConfig
from context_harness.errors import NotFound
from context_harness.lua.connector import LuaConnector
from context_harness.lua.tools import LuaTool

ARTICLES = [
    {"id": i, "title": f"Article {i}", "body": f"Body of article {i}. It talks about topic {i % 3}.",
     "author": "ann", "url": f"https://example.test/a/{i}", "tags": ["news", f"t{i % 3}"],
     "updated_at": f"2026-01-{i + 1:02d}T10:00:00Z", "created_at": 1767225600 + i}
    for i in range(5)
]


class Handler(BaseHTTPRequestHandler):
    server: "Server"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        url = urlsplit(self.path)
        query = {k: v if len(v) > 1 else v[0] for k, v in parse_qs(url.query).items()}
        body = self._body()
        self.server.requests.append({"method": self.command, "path": url.path, "query": query,
                                     "headers": dict(self.headers), "body": body})
        route = url.path
        if route == "/echo":
            payload = {"method": self.command, "path": url.path, "query": query,
                       "headers": {k.lower(): v for k, v in self.headers.items()},
                       "body": body.decode("utf-8", "replace")}
            self._send(200, json.dumps(payload).encode(), headers={"X-Test": "yes"})
        elif route == "/text":
            self._send(200, b"plain text, not json", "text/plain")
        elif route == "/binary":
            self._send(200, bytes(range(256)), "application/octet-stream")
        elif route == "/status/404":
            self._send(404, b'{"error": "nope"}')
        elif route == "/redirect":
            self._send(302, b"", headers={"Location": "/echo?from=redirect"})
        elif route == "/loop":
            self._send(302, b"", headers={"Location": "/loop"})
        elif route == "/big":
            self._send(200, b"x" * 200_000, "text/plain")
        elif route == "/big-chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"y" * 10_000)
            except OSError:
                pass
        elif route == "/slow":
            time.sleep(float(query.get("s", "3")))
            self._send(200, b'{"slow": true}')
        elif route == "/drip":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b"d")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
        elif route == "/articles":
            page = int(query.get("page", "1"))
            size = 2
            chunk = ARTICLES[(page - 1) * size: page * size]
            base = f"http://{self.headers['Host']}/articles"
            nxt = f"{base}?page={page + 1}" if page * size < len(ARTICLES) else None
            if self.server.require_token and self.headers.get("Authorization") != "Bearer s3cret":
                self._send(401, b'{"error": "unauthorized"}')
                return
            self._send(200, json.dumps({"items": chunk, "next": nxt}).encode())
        else:
            self._send(404, b'{"error": "no route"}')

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]
    require_token = False

    def handle_error(self, request: Any, client_address: Any) -> None:  # client went away: fine
        pass


@dataclass
class LocalServer:
    server: Server
    url: str

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    server = Server(("127.0.0.1", 0), Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield LocalServer(server, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


DOCS = {
    "d1": {"id": "d1", "title": "Lua sandbox", "source": "filesystem:docs", "source_id": "lua.md",
           "body": "The Lua sandbox removes io and os. It caps memory. It enforces a wall-clock timeout.",
           "score": 0.91, "snippet": "The <b>Lua</b> sandbox", "source_url": None, "updated_at": "2026-01-05T10:00:00Z"},
    "d2": {"id": "d2", "title": "Connectors", "source": "script:api", "source_id": "7",
           "body": "Connectors pull documents from folders, git repositories and scripts.",
           "score": 0.42, "snippet": "Connectors pull", "source_url": "https://example.test/7",
           "updated_at": "2026-01-06T10:00:00Z"},
}


@dataclass
class FakeContext:
    """A stand-in for the Harness's blocking context: canned documents, recorded requests."""

    docs: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(DOCS))
    requests: list[dict[str, Any]] = field(default_factory=list)

    def search(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        self.requests.append(request)
        source = (request.get("filters") or {}).get("source")
        hits = [{k: v for k, v in d.items() if k != "body"} for d in self.docs.values()
                if source is None or d["source"] == source]
        return hits[: request.get("limit", 12)]

    def get(self, id: str) -> dict[str, Any]:
        if id not in self.docs:
            raise NotFound(f"document '{id}' not found")
        return dict(self.docs[id], chunks=[{"index": 0, "text": self.docs[id]["body"]}])

    def sources(self) -> list[dict[str, Any]]:
        return [{"name": "filesystem:docs", "configured": True, "healthy": True, "document_count": 1}]


@pytest.fixture
def fake_context() -> FakeContext:
    return FakeContext()


@pytest.fixture
def write_script(tmp_path: Path) -> Callable[..., Path]:
    def write(source: str, name: str = "script.lua") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        return path

    return write


@pytest.fixture
def make_tool(write_script: Callable[..., Path]) -> Callable[..., LuaTool]:
    def make(source: str, *, name: str = "t", lua: LuaConfig | None = None, file: str | None = None,
             **script_keys: Any) -> LuaTool:
        path = write_script(source, file or f"{name}.lua")
        return LuaTool(name, ScriptConfig(path=path, **script_keys), lua or LuaConfig(), max_instances=1)

    return make


@pytest.fixture
def make_connector(write_script: Callable[..., Path]) -> Callable[..., LuaConnector]:
    def make(source: str, *, name: str = "c", lua: LuaConfig | None = None, **script_keys: Any) -> LuaConnector:
        path = write_script(source, f"{name}.lua")
        return LuaConnector(name, ScriptConfig(path=path, **script_keys), lua or LuaConfig())

    return make

