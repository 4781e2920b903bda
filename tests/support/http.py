"""HTTP servers for the tests, all on 127.0.0.1 at an ephemeral port:

- ``serve_in_thread``: any ``http.server`` server in a daemon thread (fake JSON APIs, a fake OpenAI);
- ``JsonApi``: a small JSON API (echo, redirects, slow and large bodies, paged ``/articles``);
- ``AppServer``: the real HTTP app under uvicorn, in a thread with its own event loop;
- ``spawn_http``: ``ctx serve --http`` as a subprocess.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import BaseServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2

from support.paths import BIN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_in_thread(server: BaseServer, poll_interval: float = 0.05) -> Iterator[BaseServer]:
    """Serve ``server`` from a daemon thread; shut it down and close it on exit."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- a local JSON API -------------------------------------------------------------------------------

# Five articles on two pages; the Lua tests and the tool tests each have their own texts.
LUA_ARTICLES = [
    {"id": i, "title": f"Article {i}", "body": f"Body of article {i}. It talks about topic {i % 3}.",
     "author": "ann", "url": f"https://example.test/a/{i}", "tags": ["news", f"t{i % 3}"],
     "updated_at": f"2026-01-{i + 1:02d}T10:00:00Z", "created_at": 1767225600 + i}
    for i in range(5)
]
TOOL_ARTICLES = [
    {"id": i, "title": f"Article {i}", "body": f"Article {i} explains quokka husbandry, part {i}.",
     "author": "ann", "url": f"https://example.test/a/{i}", "tags": ["news"],
     "updated_at": f"2026-01-{i + 1:02d}T10:00:00Z"}
    for i in range(5)
]


class JsonApiHandler(BaseHTTPRequestHandler):
    server: JsonApi

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
            chunk = self.server.articles[(page - 1) * size: page * size]
            base = f"http://{self.headers['Host']}/articles"
            nxt = f"{base}?page={page + 1}" if page * size < len(self.server.articles) else None
            if self.server.require_token and self.headers.get("Authorization") != "Bearer s3cret":
                self._send(401, b'{"error": "unauthorized"}')
                return
            self._send(200, json.dumps({"items": chunk, "next": nxt}).encode())
        else:
            self._send(404, b'{"error": "no route"}')

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class JsonApi(ThreadingHTTPServer):
    """The JSON API on 127.0.0.1:<ephemeral>; ``requests`` records every request it answered."""

    daemon_threads = True
    require_token = False

    def __init__(self, articles: list[dict[str, Any]]) -> None:
        super().__init__(("127.0.0.1", 0), JsonApiHandler)
        self.articles = articles
        self.requests: list[dict[str, Any]] = []

    def handle_error(self, request: Any, client_address: Any) -> None:  # client went away: fine
        pass


@dataclass
class LocalServer:
    """A served ``JsonApi``: its ``url`` and the ``requests`` it answered."""

    server: JsonApi

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests


# -- the real HTTP app ------------------------------------------------------------------------------

class AppServer:
    """The real HTTP app under uvicorn on 127.0.0.1:<ephemeral>, in a thread with its own event loop."""

    def __init__(self, config: Any, agent: str | None = None) -> None:
        self.config = config
        self.agent = agent
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import uvicorn

        from context_harness.core.harness import Harness
        from context_harness.server.http import build_app

        async def main() -> None:
            async with Harness.open(self.config) as harness:
                await harness.sync()
                app = build_app(harness, self.agent)
                self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                            log_level="warning", lifespan="on"))
                await self.server.serve()

        try:
            anyio.run(main)
        except BaseException as exc:  # surfaced by start()
            self.error = exc

    def start(self) -> AppServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            if self.server is not None and self.server.started:
                return self
            time.sleep(0.02)
        raise TimeoutError("the HTTP server did not start")

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        self.thread.join(timeout=15)


# -- ctx serve --http in a subprocess ---------------------------------------------------------------

def spawn_http(args: list[str], env: dict[str, str], port: int, timeout: float = 30,
               stderr: Any = subprocess.PIPE) -> subprocess.Popen:
    """Start ``ctx serve --http`` and wait for /health (``stderr``: where its log goes, a pipe by default)."""
    proc = subprocess.Popen([str(BIN / "ctx"), *args, "serve", "--http", "--bind", f"127.0.0.1:{port}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = proc.stderr.read().decode(errors="replace") if proc.stderr else "(see its log)"
            raise RuntimeError(f"ctx serve --http exited: {said}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise TimeoutError("ctx serve --http did not answer /health")


def stop_process(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()
