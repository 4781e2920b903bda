"""A scripted HTTP server on 127.0.0.1 that misbehaves on request: answers with the wrong thing,
hangs, or drips its answer a byte at a time. It runs in a subprocess, so its threads and sockets never
count in the test process (tests count the client's threads and file descriptors).

``UnrulyServer.plan(rules)`` sets how the next requests are answered: the first rule whose ``match``
occurs in the request line (``"GET /kb?list-type=2&... HTTP/1.1"``) answers, with

- ``status`` (200), ``headers`` ({}), ``body`` (text or bytes; sent with its Content-Length unless
  ``length`` says otherwise);
- ``stall``: seconds to wait before sending anything;
- ``drip``: seconds between bytes, from byte ``drip_from`` of the whole answer (0: the status line
  already; the headers' length: the body).

``requests()`` lists the request lines answered so far.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class UnrulyServer:
    url: str
    folder: Path

    def plan(self, rules: list[dict[str, Any]]) -> None:
        encoded = [{**rule, "body": _text(rule.get("body", b""))} for rule in rules]
        staged = self.folder / "plan.tmp"
        staged.write_text(json.dumps(encoded), encoding="utf-8")
        staged.replace(self.folder / "plan.json")

    def requests(self) -> list[str]:
        log = self.folder / "requests.log"
        return log.read_text(encoding="utf-8").splitlines() if log.exists() else []

    def clear(self) -> None:
        (self.folder / "requests.log").write_text("", encoding="utf-8")


def _text(body: str | bytes) -> str:
    return body.decode("latin-1") if isinstance(body, bytes) else body.encode("utf-8").decode("latin-1")


@contextmanager
def unruly_server(folder: Path) -> Iterator[UnrulyServer]:
    """The server in a subprocess on a free port of 127.0.0.1, stopped on exit."""
    folder.mkdir(parents=True, exist_ok=True)
    server = UnrulyServer("", folder)
    server.plan([])
    process = subprocess.Popen([sys.executable, __file__, str(folder)], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip() or 0)
        assert port, "the unruly server did not start"
        server.url = f"http://127.0.0.1:{port}"
        yield server
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


# -- the server process --------------------------------------------------------------------------------

def _serve(folder: Path) -> None:
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    log_lock = threading.Lock()

    def answer(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            length = 0
            for header in head.split(b"\r\n")[1:]:
                name, _, value = header.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(rest) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rest += chunk
            with log_lock, (folder / "requests.log").open("a", encoding="utf-8") as log:
                log.write(line + "\n")
            rules = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
            rule = next((r for r in rules if r.get("match", "") in line), None)
            if rule is None:
                rule = {"status": 404, "body": "no rule matches"}
            body = str(rule.get("body", "")).encode("latin-1")
            headers = {"Content-Length": str(rule.get("length", len(body))), "Connection": "close",
                       **rule.get("headers", {})}
            status = int(rule.get("status", 200))
            whole = (f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                     + "\r\n").encode("latin-1") + body
            time.sleep(float(rule.get("stall", 0)))
            drip, start = float(rule.get("drip", 0)), int(rule.get("drip_from", 0))
            try:
                if not drip:
                    conn.sendall(whole)
                    return
                conn.sendall(whole[:start])
                for i in range(start, len(whole)):
                    conn.sendall(whole[i:i + 1])
                    time.sleep(drip)
            except OSError:
                return

    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
