"""Servers for the Lua limit tests and the hostile-script battery (127.0.0.1 only, stopped by the test).

- ``BombServer``: an HTTP server whose routes attack the client: ``/wide`` (a JSON array of millions
  of empty objects, under the response cap), ``/deep`` (JSON nested millions of levels), ``/endless``
  (a chunked body that never ends), ``/strings`` (450,000 strings: just within a 64 MB script's budget), ``/huge`` (declares 10 GB), ``/redirect?to=URL`` (302 to URL),
  ``/ok`` (a small JSON object).
- ``Canary``: a bare TCP listener that records every connection (no script may reach it).
- ``peak_rss``: the largest resident size of the busy Lua worker processes while a block runs.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WIDE_ITEMS = 3_000_000  # "{}," each: about 9 MB, under the default 10 MB response cap
DEEP_LEVELS = 4_000_000
STRING_ITEMS = 450_000


class _Bombs(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
            pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        try:
            if parts.path == "/wide":
                self._send(200, b"[" + b"{}," * WIDE_ITEMS + b"{}]")
            elif parts.path == "/strings":  # as many values as a 64 MB script may take, each a string
                self._send(200, b"[" + b",".join([b'"%017d"' % i for i in range(STRING_ITEMS)]) + b"]")
            elif parts.path == "/deep":
                self._send(200, b"[" * DEEP_LEVELS + b"]" * DEEP_LEVELS)
            elif parts.path == "/endless":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"[0," * 20_000
                while True:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            elif parts.path == "/huge":
                self.send_response(200)
                self.send_header("Content-Length", str(10 * 1024**3))
                self.end_headers()
                self.wfile.write(b"x" * 65536)
            elif parts.path == "/redirect":
                target = parse_qs(parts.query).get("to", ["/ok"])[0]
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self._send(200, b'{"ok": true}')
        except (BrokenPipeError, ConnectionResetError):
            pass


class BombServer:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Bombs)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> BombServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class Canary:
    """A TCP listener on 127.0.0.1 that counts connections; nothing in a sandbox may reach it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, addr = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections.append(addr)
            conn.close()

    def __enter__(self) -> Canary:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self.thread.join(2)
        self.sock.close()


def rss_of(pid: int) -> int:
    """Resident size of process ``pid`` in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


@contextmanager
def peak_rss(pool: Any) -> Iterator[list[int]]:
    """Yields a one-item list that holds, after the block, the largest resident size (bytes) any
    busy worker of ``pool`` reached while the block ran (sampled every 5 ms)."""
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for pid in pool.busy_pids():
                peak[0] = max(peak[0], rss_of(pid))
            time.sleep(0.005)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join(2)
