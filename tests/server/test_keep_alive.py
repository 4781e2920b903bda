"""``ctx serve --http`` answers at once on a kept-alive connection: each accepted socket has Nagle's
algorithm off (TCP_NODELAY). The listening socket was made without naming TCP, so asyncio did not set
it on the connections; the body of every response after a connection's first then waited for the
client's delayed acknowledgement of the headers, 40 ms on Linux: every console page and API call
took at least 40 ms."""

from __future__ import annotations

import socket
import statistics
import time

from context_harness.server.http import listening_socket

REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def answer(conn: socket.socket) -> float:
    """Send ``REQUEST`` and read the whole answer (Content-Length): milliseconds to its last byte."""
    started = time.perf_counter()
    conn.sendall(REQUEST)
    data = b""
    while True:
        chunk = conn.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        if _:
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            if len(body) >= length:
                return (time.perf_counter() - started) * 1000


def test_the_listening_socket_is_tcp_so_connections_get_nodelay() -> None:
    with listening_socket("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY only on sockets that say so


def test_answers_on_a_kept_alive_connection_do_not_wait_for_an_ack(http_process: str) -> None:
    port = int(http_process.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = [answer(conn) for _ in range(12)]
    # With the delay every answer after the first took >= 40 ms (Linux's least delayed ACK); without it
    # about 1 ms here. 20 ms leaves a loaded machine room.
    assert statistics.median(times[1:]) < 20, [round(t, 1) for t in times]
