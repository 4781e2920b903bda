"""Host and Origin, parsed strictly and checked alike on every route (issue 55).

``ctx serve --http`` on 127.0.0.1 (a subprocess, as a user starts it) with a writable folder. Requests
go over a raw socket, so the ``Host`` line is exactly the hostile one. ``Host`` must be one host (a
name, IPv4, or bracketed IPv6), an optional port and nothing else; names compare case-insensitively,
IPv6 by address. Each hostile ``Host`` is refused (400 malformed, 421 foreign) on ``/health``, the REST
shim, ``/mcp`` (a new session and one already open) and the console, and writes nothing; the loopback
names (``127.0.0.1``, ``localhost`` in any case, ``[::1]`` in any spelling) are answered on every route
although the server binds 127.0.0.1 only: each names this machine, which no rebinding page can send.
``Origin`` is the server's own only with its scheme, host and port."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.http import free_port, spawn_http, stop_process
from support.workspace import config_toml, write_files

pytestmark = pytest.mark.slow  # a ctx serve --http subprocess
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Served:
    port: int
    docs: Path
    session: str  # an MCP session opened with a good Host

    def request(self, method: str, path: str, host: str | None, body: object = None,
                headers: dict[str, str] | None = None, hosts: list[str] | None = None) -> tuple[int, bytes]:
        """(status, body) of one request written byte for byte; ``hosts``: several Host lines."""
        data = json.dumps(body).encode() if body is not None else b""
        lines = [f"{method} {path} HTTP/1.1", "Connection: close"]
        lines += [f"Host: {h}" for h in (hosts if hosts is not None else [host] if host is not None else [])]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
            sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + data)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, rest = answer.partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), rest

    def notes(self) -> list[str]:
        return sorted(p.relative_to(self.docs).as_posix() for p in self.docs.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("hosts")
    write_files(root / "docs", {"a.md": "# A\n\nA note about pelicans.\n"})
    cfg = root / "ctx.toml"
    cfg.write_text(config_toml(docs_root=(root / "docs").as_posix(), server="sync_on_start = false")
                   .replace("[connectors.filesystem.docs]\n", "[connectors.filesystem.docs]\nwritable = true\n"),
                   encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CTX_CONFIG"}
    port = free_port()
    proc = spawn_http(["--config", str(cfg)], {**env, "HF_HUB_OFFLINE": "1"}, port, stderr=subprocess.DEVNULL)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            data = json.dumps(INIT).encode()
            sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nAccept: "
                         f"{MCP['Accept']}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                         .encode() + data)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        session = next(line.split(b":", 1)[1].strip().decode() for line in answer.split(b"\r\n")
                       if line.lower().startswith(b"mcp-session-id:"))
        yield Served(port, root / "docs", session)
    finally:
        stop_process(proc)


def _tag(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def routes(served: Served, n: int | str) -> list[tuple[str, str, object, dict[str, str]]]:
    """(method, path, body, headers): a read and a write of each kind of route."""
    return [
        ("GET", "/health", None, {}),
        ("GET", "/tools/list", None, {}),
        ("POST", "/tools/search", {"query": "pelicans"}, {}),
        ("POST", "/tools/note_write", {"source": "docs", "path": f"inbox/n{n}.md", "content": "hostile"}, {}),
        ("POST", "/mcp", INIT, MCP),
        ("POST", "/mcp", LIST, {**MCP, "Mcp-Session-Id": served.session, "Mcp-Protocol-Version": "2025-06-18"}),
        ("GET", "/ui/", None, {}),
        ("GET", "/ui/search?q=pelicans", None, {}),
    ]


HOSTILE = ["127.0.0.1:{port}@evil.example", "127.0.0.1:{port}/x", "127.0.0.1:{port}, evil.example",
           "evil.example", "evil.example:{port}", "EVIL.example:{port}", "127.0.0.1:{port}:80", "127.0.0.1:99999",
           "127.0.0.1:+{port}", "127.0.0.1:", "user@127.0.0.1:{port}", "localhost:{port}#x", "localhost:{port}?x",
           "[::1]x:{port}", "[::1", "[::1%25lo]:{port}", "[evil.example]:{port}", "127.0.0.1 :{port}", "",
           "localhost.evil.example:{port}", "127.0.0.1.evil.example", "0x7f.1:{port}"]


@pytest.mark.parametrize("host", HOSTILE)
def test_a_hostile_host_is_refused_on_every_route(served: Served, host: str) -> None:
    before = served.notes()
    value = host.format(port=served.port)
    for method, path, body, headers in routes(served, 0):
        status, answer = served.request(method, path, value, body, headers)
        assert status in (400, 421), f"Host {value!r}: {method} {path} answered {status} {answer[:200]!r}"
        if status == 421 or path != "/health":
            assert json.loads(answer)["error"]["code"] in ("bad_request", "forbidden"), answer
    assert served.notes() == before


def test_two_host_lines_and_none_are_refused(served: Served) -> None:
    own = f"127.0.0.1:{served.port}"
    for method, path, body, headers in routes(served, 0):
        assert served.request(method, path, None, body, headers, hosts=[own, "evil.example"])[0] == 400, path
        assert served.request(method, path, None, body, headers, hosts=[own, own])[0] == 400, path
        assert served.request(method, path, None, body, headers, hosts=[])[0] in (400, 421), path
    assert served.notes() == ["a.md"]


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "127.0.0.1", "localhost:{port}", "LOCALHOST:{port}",
                                  "LocalHost", "[::1]:{port}", "[::1]", "[0:0:0:0:0:0:0:1]:{port}",
                                  "[0000::0001]:{port}"])
def test_the_loopback_names_are_answered_on_every_route(served: Served, host: str) -> None:
    value = host.format(port=served.port)
    for method, path, body, headers in routes(served, _tag(host)):
        status, answer = served.request(method, path, value, body, headers)
        assert status in (200, 303), f"Host {value!r}: {method} {path} answered {status} {answer[:300]!r}"


@pytest.mark.parametrize("origin, status", [
    ("http://127.0.0.1:{port}", 200),
    ("http://127.0.0.1:{port}/", 200),
    ("https://127.0.0.1:{port}", 403),  # another scheme: another origin
    ("HTTPS://127.0.0.1:{port}", 403),
    ("ws://127.0.0.1:{port}", 403),
    ("http://127.0.0.1", 403),  # port 80
    ("http://127.0.0.1:{port}@evil.example", 403),
    ("http://evil.example@127.0.0.1:{port}", 403),
    ("http://127.0.0.1:{port}/x", 403),
    ("http://127.0.0.1:{port}, http://evil.example", 403),
    ("null", 403),
])
def test_a_write_is_the_servers_own_only_by_scheme_host_and_port(served: Served, origin: str, status: int) -> None:
    value = origin.format(port=served.port)
    name = f"inbox/o{_tag(origin)}.md"
    got, answer = served.request("POST", "/tools/note_write", f"127.0.0.1:{served.port}",
                                 {"source": "docs", "path": name, "content": "from a page"}, {"Origin": value})
    assert got == status, f"Origin {value!r}: {got} {answer[:200]!r}"
    assert (name in served.notes()) is (status == 200)
    mcp, _ = served.request("POST", "/mcp", f"127.0.0.1:{served.port}", INIT, {**MCP, "Origin": value})
    assert (mcp == 200) is (status == 200), f"Origin {value!r} on /mcp: {mcp}"


def test_own_origin_by_name_matches_case_insensitively(served: Served) -> None:
    status, answer = served.request("POST", "/tools/note_write", f"LOCALHOST:{served.port}",
                                    {"source": "docs", "path": "inbox/named.md", "content": "own page"},
                                    {"Origin": f"http://localhost:{served.port}"})
    assert status == 200, answer
