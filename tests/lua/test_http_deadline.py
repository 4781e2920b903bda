"""Lua's HTTP client (``lua/httpclient.py``) keeps its deadline whatever the server does: stalling or
dripping in the TLS handshake, the headers or the body (real sockets on 127.0.0.1); and its timer
thread is gone when the request returns."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from context_harness.lua.httpclient import HttpClient
from context_harness.lua.runtime import HostError

HANDSHAKE_RECORD = b"\x16\x03\x03\x40\x00"  # a TLS handshake record of 16 KB, whose bytes then drip


class DripServer:
    """Accepts connections; after the client's first bytes, sends ``opening`` at once, then
    ``dripped`` a byte every 0.1 s."""

    def __init__(self, opening: bytes, dripped: bytes) -> None:
        self.opening, self.dripped = opening, dripped
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        self.listener.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            worker = threading.Thread(target=self._answer, args=(conn,), daemon=True)
            self.threads.append(worker)
            worker.start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(self.opening)
                for i in range(len(self.dripped)):
                    if self.stop.wait(0.1):
                        return
                    conn.sendall(self.dripped[i:i + 1])
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def drip_server(request: pytest.FixtureRequest) -> Iterator[DripServer]:
    opening, dripped = request.param
    server = DripServer(opening, dripped)
    yield server
    server.close()


def deadline_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ctx-deadline"]


@pytest.mark.parametrize(("scheme", "drip_server"), [
    ("https", (HANDSHAKE_RECORD, b"\x02" * 16384)),
    ("http", (b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"y" * 4000)),
    ("http", (b"HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n", b"z" * 4000)),
], ids=["tls-handshake", "headers", "body"], indirect=["drip_server"])
def test_a_dripping_server_is_cut_off_at_the_deadline(scheme: str, drip_server: DripServer) -> None:
    client = HttpClient(["127.0.0.1"], 1 << 20)
    started = time.monotonic()
    with pytest.raises(HostError, match="timed out"):
        client.request("GET", f"{scheme}://127.0.0.1:{drip_server.port}/", headers={}, body=None,
                       deadline=started + 0.8, script_deadline=started + 30)
    took = time.monotonic() - started
    assert 0.7 < took < 0.8 + 2.0  # the request's deadline, with room for a loaded machine
    assert deadline_threads() == []  # the timer was stopped and joined

